// Must not compile (a borrowed view, relucore::borrow): a Ref<const RowMatrix> temporary made from a column-major
// matrix holds a private copy that dies with it.
#include "fixture.hpp"

int main() {
    relucore_compile_fail::Inputs in;
    const relucore_compile_fail::ColMatrix Kc = in.K;
    relucore::DualGD gd(relucore::borrow, relucore::ConstMatrixRef(Kc), in.y, in.dual_start(), in.settings);
    return gd.steps_taken() == 0 ? 0 : 1;
}
