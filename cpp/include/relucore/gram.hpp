// Gram matrices K = X X^T (SPEC section 7).
#pragma once

#include "relucore/types.hpp"

#include <Eigen/Core>

namespace relucore {

// K = X X^T, computed as a symmetric rank-n update (half the flops of a full
// product) and mirrored so that K is exactly symmetric.
inline void gram_matrix(ConstMatrixRef X, MatrixRef K) {
    const Index n = X.rows();
    K.setZero();
    K.template selfadjointView<Eigen::Lower>().rankUpdate(X);
    for (Index i = 0; i < n; ++i)
        for (Index j = i + 1; j < n; ++j) K(i, j) = K(j, i);
}

inline RowMatrix gram_matrix(ConstMatrixRef X) {
    RowMatrix K(X.rows(), X.rows());
    gram_matrix(X, K);
    return K;
}

}  // namespace relucore
