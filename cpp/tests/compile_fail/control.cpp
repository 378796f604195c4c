// Must compile: the same constructions as the compile-fail cases with
// arguments whose storage outlives the engine, so a failing case fails for
// its refusal and not for a mistake in the fixture.
#include "fixture.hpp"

#include <memory>

int main() {
    using namespace relucore;
    relucore_compile_fail::Inputs in;
    DualGD lvalue(in.K, in.y, in.outer, in.alpha0, in.beta0, in.settings);
    DualGD map(ConstMatrixMap(in.K.data(), 4, 4), in.y, in.outer, in.alpha0, in.beta0, in.settings);
    DualGD block(in.K.topLeftCorner(4, 4), in.y, in.outer, in.alpha0, in.beta0, in.settings);
    const ConstMatrixRef ref(in.K);
    DualGD named_ref(ref, in.y, in.outer, in.alpha0, in.beta0, in.settings);
    DualGD owned(std::make_shared<const RowMatrix>(gram_matrix(in.X)), in.y, in.outer, in.alpha0, in.beta0,
                 in.settings);
    DenseGD dense(in.X, in.y, in.outer, in.W0, in.alpha0, in.settings);
    DenseGD dense_map(ConstMatrixMap(in.X.data(), 4, 6), in.y, in.outer, in.W0, in.alpha0, in.settings);
    return lvalue.steps_taken() + map.steps_taken() + block.steps_taken() + named_ref.steps_taken() +
                       owned.steps_taken() + dense.steps_taken() + dense_map.steps_taken() ==
                   0
               ? 0
               : 1;
}
