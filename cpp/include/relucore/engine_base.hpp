// moved to relucore/gd/engine_base.hpp; this forwarding header will be removed in 0.3
#pragma once

#include "relucore/gd/engine_base.hpp"
