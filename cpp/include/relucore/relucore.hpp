// Umbrella header: everything in relucore's C++ core.
#pragma once

#include "relucore/types.hpp"
#include "relucore/model.hpp"
#include "relucore/run.hpp"
#include "relucore/gram.hpp"
#include "relucore/span.hpp"
#include "relucore/gram_stats.hpp"
#include "relucore/minnorm_qp.hpp"
#include "relucore/parallel.hpp"
#include "relucore/engine_base.hpp"
#include "relucore/dual_gd.hpp"
#include "relucore/dense_gd.hpp"
#include "relucore/positive_start.hpp"
#include "relucore/rng.hpp"
#include "relucore/weight_gd.hpp"
#include "relucore/gram_sample.hpp"
#include "relucore/sweep_gram.hpp"
