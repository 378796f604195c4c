// Must not compile (a borrowed view, relucore::borrow): a column-major K would be copied into a temporary.
#include "fixture.hpp"

int main() {
    relucore_compile_fail::Inputs in;
    const relucore_compile_fail::ColMatrix Kc = in.K;
    relucore::DualGD gd(relucore::borrow, Kc, in.y, in.dual_start(), in.settings);
    return gd.steps_taken() == 0 ? 0 : 1;
}
