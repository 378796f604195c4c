// Must not compile: a Ref<const RowMatrix> temporary of a column-major X holds a private copy (named start).
#include "fixture.hpp"

int main() {
    relucore_compile_fail::Inputs in;
    const relucore_compile_fail::ColMatrix Xc = in.X;
    relucore::DenseGD gd(relucore::ConstMatrixRef(Xc), in.y, in.dense_start(), in.settings);
    return gd.steps_taken() == 0 ? 0 : 1;
}
