// moved to relucore/minnorm/minnorm_qp.hpp; this forwarding header will be removed in 0.3
#pragma once

#include "relucore/minnorm/minnorm_qp.hpp"
