// moved to relucore/gd/run.hpp; this forwarding header will be removed in 0.3
#pragma once

#include "relucore/gd/run.hpp"
