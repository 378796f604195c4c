// moved to relucore/meanfield/weight_gd.hpp; this forwarding header will be removed in 0.3
#pragma once

#include "relucore/meanfield/weight_gd.hpp"
