// Must not compile (a borrowed view, relucore::borrow): a product expression would be evaluated into a temporary.
#include "fixture.hpp"

int main() {
    relucore_compile_fail::Inputs in;
    relucore::DualGD gd(relucore::borrow, in.X * in.X.transpose(), in.y, in.dual_start(), in.settings);
    return gd.steps_taken() == 0 ? 0 : 1;
}
