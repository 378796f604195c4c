// Must not compile: a Ref<const RowMatrix> temporary made from a column-major
// matrix holds a private copy that dies with it.
#include "fixture.hpp"

int main() {
    relucore_compile_fail::Inputs in;
    const relucore_compile_fail::ColMatrix Kc = in.K;
    relucore::DualGD gd(relucore::ConstMatrixRef(Kc), in.y, in.outer, in.alpha0, in.beta0, in.settings);
    return gd.steps_taken() == 0 ? 0 : 1;
}
