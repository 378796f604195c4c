// moved to relucore/linalg/span.hpp; this forwarding header will be removed in 0.3
#pragma once

#include "relucore/linalg/span.hpp"
