// moved to relucore/sweep/sweep_gram.hpp; this forwarding header will be removed in 0.3
#pragma once

#include "relucore/sweep/sweep_gram.hpp"
