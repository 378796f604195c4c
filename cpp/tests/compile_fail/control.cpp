// Must compile: the same constructions as the compile-fail cases with
// arguments whose storage outlives the engine (borrowed views), so a failing
// case fails for its refusal and not for a mistake in the fixture; then the
// owning forms, which take the very temporaries the borrowed form refuses.
#include "fixture.hpp"

#include <memory>

int main() {
    using namespace relucore;
    relucore_compile_fail::Inputs in;
    DualGD lvalue(borrow, in.K, in.y, in.dual_start(), in.settings);
    DualGD map(borrow, ConstMatrixMap(in.K.data(), 4, 4), in.y, in.dual_start(), in.settings);
    DualGD block(borrow, in.K.topLeftCorner(4, 4), in.y, in.dual_start(), in.settings);
    const ConstMatrixRef ref(in.K);
    DualGD named_ref(borrow, ref, in.y, in.dual_start(), in.settings);
    DualGD owned(std::make_shared<const RowMatrix>(gram_matrix(in.X)), in.y, in.dual_start(), in.settings);
    DenseGD dense(borrow, in.X, in.y, in.dense_start(), in.settings);
    DenseGD dense_map(borrow, ConstMatrixMap(in.X.data(), 4, 6), in.y, in.dense_start(), in.settings);
    std::int64_t steps = lvalue.steps_taken() + map.steps_taken() + block.steps_taken() + named_ref.steps_taken() +
                         owned.steps_taken() + dense.steps_taken() + dense_map.steps_taken();
    const relucore_compile_fail::ColMatrix Kc = in.K;
    DualGD own_temporary(gram_matrix(in.X), in.y, in.dual_start(), in.settings);
    DualGD own_expression(in.X * in.X.transpose(), in.y, in.dual_start(), in.settings);
    DualGD own_column_major(Kc, in.y, in.dual_start(), in.settings);
    DualGD own_copy(in.K, in.y, in.dual_start(), in.settings);
    DenseGD own_dense(2.0 * in.X, in.y, in.dense_start(), in.settings);
    steps += own_temporary.steps_taken() + own_expression.steps_taken() + own_column_major.steps_taken() +
             own_copy.steps_taken() + own_dense.steps_taken();
    return steps == 0 ? 0 : 1;
}
