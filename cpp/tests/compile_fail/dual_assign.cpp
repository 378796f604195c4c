// Must not compile: an engine is bound to its K for life, so assignment is deleted
// (the compiler names DualGD::operator=, not a member deep inside Eigen).
#include "fixture.hpp"

int main() {
    relucore_compile_fail::Inputs in;
    relucore::DualGD a(in.K, in.y, in.dual_start(), in.settings);
    relucore::DualGD b(in.K, in.y, in.dual_start(), in.settings);
    b = a;
    return b.steps_taken() == 0 ? 0 : 1;
}
