// Must not compile (a borrowed view, relucore::borrow): K = gram_matrix(X) dies at the end of the statement.
#include "fixture.hpp"

int main() {
    relucore_compile_fail::Inputs in;
    relucore::DualGD gd(relucore::borrow, relucore::gram_matrix(in.X), in.y, in.dual_start(), in.settings);
    return gd.steps_taken() == 0 ? 0 : 1;
}
