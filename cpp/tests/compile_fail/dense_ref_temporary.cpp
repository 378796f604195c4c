// Must not compile: a Ref<const RowMatrix> temporary may hold a private copy.
#include "fixture.hpp"

int main() {
    relucore_compile_fail::Inputs in;
    const relucore_compile_fail::ColMatrix Xc = in.X;
    relucore::DenseGD gd(relucore::ConstMatrixRef(Xc), in.y, in.outer, in.W0, in.alpha0, in.settings);
    return gd.steps_taken() == 0 ? 0 : 1;
}
