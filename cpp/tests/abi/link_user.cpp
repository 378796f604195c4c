// The link test's user side: it declares the functions of link_engine.cpp and
// hands the engine from one to the other. Built with the library side's
// configuration it links; built with another (OpenMP off, or
// RELUCORE_NO_SIMD_DISPATCH), relucore::DualGD names another class, so the
// declarations below name functions nobody defined and the link fails.
#include "relucore/gd/dual_gd.hpp"

namespace abi_link {
relucore::DualGD& engine();
double steps(relucore::DualGD& gd);
}  // namespace abi_link

int main() {
    return abi_link::steps(abi_link::engine()) >= 0 ? 0 : 1;
}
