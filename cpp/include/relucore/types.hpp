// moved to relucore/core/types.hpp; this forwarding header will be removed in 0.3
#pragma once

#include "relucore/core/types.hpp"
