// moved to relucore/gd/model.hpp; this forwarding header will be removed in 0.3
#pragma once

#include "relucore/gd/model.hpp"
