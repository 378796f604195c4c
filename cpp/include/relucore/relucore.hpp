// Umbrella header of the engines: everything a simulator that trains networks
// needs (types, defaults, the GD engines and their runs, the positive start,
// Gram kernels, the mean-field engine, random streams, the thread helpers).
// The analysis code (minimum-norm QPs, Gram statistics and sampling, the Gram
// sweep trial) has its own umbrella, relucore/analysis.hpp, so that a
// simulator does not compile it (docs/embedding.md, compile cost).
#pragma once

// relucore/version.hpp (RELUCORE_VERSION_MAJOR/MINOR/PATCH/STRING) is generated
// by CMake; a build that only adds cpp/include to the include path has no
// version macros but compiles all the same.
#if __has_include("relucore/version.hpp")
#include "relucore/version.hpp"
#endif

#include "relucore/core/parallel.hpp"
#include "relucore/core/types.hpp"
#include "relucore/defaults.hpp"
#include "relucore/gd/dense_gd.hpp"
#include "relucore/gd/dual_gd.hpp"
#include "relucore/gd/engine_base.hpp"
#include "relucore/gd/model.hpp"
#include "relucore/gd/positive_start.hpp"
#include "relucore/gd/run.hpp"
#include "relucore/gd/scaling.hpp"
#include "relucore/linalg/gram.hpp"
#include "relucore/linalg/span.hpp"
#include "relucore/meanfield/weight_gd.hpp"
#include "relucore/random/rng.hpp"
#include "relucore/simd.hpp"
