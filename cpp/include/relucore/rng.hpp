// moved to relucore/random/rng.hpp; this forwarding header will be removed in 0.3
#pragma once

#include "relucore/random/rng.hpp"
