// moved to relucore/linalg/gram.hpp; this forwarding header will be removed in 0.3
#pragma once

#include "relucore/linalg/gram.hpp"
