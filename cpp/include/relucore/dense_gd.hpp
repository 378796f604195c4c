// moved to relucore/gd/dense_gd.hpp; this forwarding header will be removed in 0.3
#pragma once

#include "relucore/gd/dense_gd.hpp"
