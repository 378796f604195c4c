// Must not compile (a borrowed view, relucore::borrow): a Ref<const RowMatrix> temporary may hold a private copy.
#include "fixture.hpp"

int main() {
    relucore_compile_fail::Inputs in;
    const relucore_compile_fail::ColMatrix Xc = in.X;
    relucore::DenseGD gd(relucore::borrow, relucore::ConstMatrixRef(Xc), in.y, in.dense_start(), in.settings);
    return gd.steps_taken() == 0 ? 0 : 1;
}
