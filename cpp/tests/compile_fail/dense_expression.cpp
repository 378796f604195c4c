// Must not compile: a scaled X is an expression evaluated into a temporary.
#include "fixture.hpp"

int main() {
    relucore_compile_fail::Inputs in;
    relucore::DenseGD gd(2.0 * in.X, in.y, in.outer, in.W0, in.alpha0, in.settings);
    return gd.steps_taken() == 0 ? 0 : 1;
}
