// Umbrella header: everything in relucore's C++ core.
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
#include "relucore/linalg/gram.hpp"
#include "relucore/linalg/span.hpp"
#include "relucore/meanfield/weight_gd.hpp"
#include "relucore/minnorm/minnorm_qp.hpp"
#include "relucore/random/gram_sample.hpp"
#include "relucore/random/rng.hpp"
#include "relucore/simd.hpp"
#include "relucore/stats/gram_stats.hpp"
#include "relucore/sweep/sweep_gram.hpp"
