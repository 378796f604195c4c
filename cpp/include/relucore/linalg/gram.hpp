// Gram matrices K = X X^T (docs/theory.md).
//
// Forming K is the one O(n^2 d) step of a run (the GD steps are O(m n^2)); it
// is a symmetric rank update, blas::syrk_lower_add (linalg/blas.hpp): the
// registered BLAS when there is one (from Python: the one scipy loads), else
// relucore's kernel (AVX2 + FMA chosen at run time, or Eigen's rank update).
// The paths round differently, so K may differ in the last bits between
// machines and BLAS libraries; on one machine with one library it is always
// the same, whatever the thread count.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/types.hpp"
#include "relucore/linalg/blas.hpp"

#include <Eigen/Core>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

// K = X X^T, exactly symmetric (the lower triangle is computed and mirrored).
inline void gram_matrix(const ConstMatrixRef& X, MatrixRef K) {
    const Index n = X.rows();
    K.setZero();
    blas::syrk_lower_add(X, K);
    for (Index i = 0; i < n; ++i)
        for (Index j = i + 1; j < n; ++j) K(i, j) = K(j, i);
}

inline RowMatrix gram_matrix(const ConstMatrixRef& X) {
    RowMatrix K(X.rows(), X.rows());
    gram_matrix(X, K);
    return K;
}

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
