// Must not compile: a column-major K would be copied into a temporary.
#include "fixture.hpp"

int main() {
    relucore_compile_fail::Inputs in;
    const relucore_compile_fail::ColMatrix Kc = in.K;
    relucore::DualGD gd(Kc, in.y, in.outer, in.alpha0, in.beta0, in.settings);
    return gd.steps_taken() == 0 ? 0 : 1;
}
