// The link test's library side: an engine and a function taking one, compiled
// with the configuration of relucore::core (OpenMP when the build has it, the
// SIMD dispatch on x86). link_user.cpp calls them from translation units built
// otherwise; the CMake test expects that link to fail.
#include "relucore/gd/dual_gd.hpp"

#include <utility>

namespace abi_link {

relucore::DualGD& engine() {
    static relucore::DualGD gd = [] {
        relucore::DualGD::Start start;
        start.outer = relucore::Vector::Ones(2);
        start.alpha = relucore::RowMatrix::Constant(2, 4, 0.25);
        start.beta = start.alpha;  // K = I: beta = alpha K
        relucore::GDSettings s;
        s.eta = 0.1;
        return relucore::DualGD(relucore::RowMatrix::Identity(4, 4), relucore::Vector::Ones(4), std::move(start), s);
    }();
    return gd;
}

double steps(relucore::DualGD& gd) {
    gd.step(3);
    return gd.loss();
}

}  // namespace abi_link
