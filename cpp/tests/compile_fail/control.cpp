// Must compile: the same constructions as the compile-fail cases with
// arguments whose storage outlives the engine (borrowed views), so a failing
// case fails for its refusal and not for a mistake in the fixture; then the
// owning forms, which take the very temporaries the borrowed form refuses; then
// the deprecated positional ones (owning too).
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
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
    DualGD old_lvalue(in.K, in.y, in.outer, in.alpha0, in.beta0, in.settings);
    DualGD old_map(ConstMatrixMap(in.K.data(), 4, 4), in.y, in.outer, in.alpha0, in.beta0, in.settings);
    DualGD old_owned(std::make_shared<const RowMatrix>(gram_matrix(in.X)), in.y, in.outer, in.alpha0, in.beta0,
                     in.settings);
    DenseGD old_dense(in.X, in.y, in.outer, in.W0, in.alpha0, in.settings);
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
    steps += old_lvalue.steps_taken() + old_map.steps_taken() + old_owned.steps_taken() + old_dense.steps_taken();
    return steps == 0 ? 0 : 1;
}
