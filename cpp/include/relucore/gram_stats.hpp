// moved to relucore/stats/gram_stats.hpp; this forwarding header will be removed in 0.3
#pragma once

#include "relucore/stats/gram_stats.hpp"
