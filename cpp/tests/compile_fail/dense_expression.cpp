// Must not compile (a borrowed view, relucore::borrow): a scaled X is an expression evaluated into a temporary.
#include "fixture.hpp"

int main() {
    relucore_compile_fail::Inputs in;
    relucore::DenseGD gd(relucore::borrow, 2.0 * in.X, in.y, in.dense_start(), in.settings);
    return gd.steps_taken() == 0 ? 0 : 1;
}
