// Umbrella header of everything in relucore's C++ core: the engines
// (relucore/relucore.hpp) and the analysis code, which a simulator rarely
// needs and which costs more to compile (docs/embedding.md, compile cost):
// the minimum-norm QPs, Gram statistics, Gram sampling and the Gram sweep trial.
#pragma once

#include "relucore/relucore.hpp"

#include "relucore/minnorm/minnorm_qp.hpp"
#include "relucore/random/gram_sample.hpp"
#include "relucore/stats/gram_stats.hpp"
#include "relucore/sweep/sweep_gram.hpp"
