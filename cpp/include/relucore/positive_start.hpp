// moved to relucore/gd/positive_start.hpp; this forwarding header will be removed in 0.3
#pragma once

#include "relucore/gd/positive_start.hpp"
