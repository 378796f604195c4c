// moved to relucore/core/parallel.hpp; this forwarding header will be removed in 0.3
#pragma once

#include "relucore/core/parallel.hpp"
