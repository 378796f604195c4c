// moved to relucore/random/gram_sample.hpp; this forwarding header will be removed in 0.3
#pragma once

#include "relucore/random/gram_sample.hpp"
