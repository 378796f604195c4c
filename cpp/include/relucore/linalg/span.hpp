// Linear combinations of the rows of X: W = W0 + C X (m x n coefficients
// times n x d data). This is how weights come back from dual coordinates
// (w_k = w_k^(0) + X^T (alpha_k - alpha_k^(0)), Lai et al. 2026): O(m n d), the
// one d-dimensional operation of a run besides forming K.
//
// It is a GEMM (linalg/blas.hpp): the registered BLAS, else relucore's kernel
// (AVX2 + FMA chosen at run time, or plain loops).
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/types.hpp"
#include "relucore/linalg/blas.hpp"

#include <stdexcept>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

/// W += C X for C (m x n), X (n x d), W (m x d): a GEMM (blas::gemm_add).
inline void add_row_combination(const ConstMatrixRef& C, const ConstMatrixRef& X, MatrixRef W) {
    blas::gemm_add(C, X, W);
}

/// Rebuilds the weights from the dual coordinates: W = W0 + (alpha - alpha0) X
/// (Lai et al. 2026: w_k = w_k^perp + X^T alpha_k and w_k^perp never changes).
/// W0 (m x d) and alpha0 (m x n) are the starting point the engine was built
/// from; W (m x d) is written; `scratch` (m x n) holds alpha - alpha0. For the
/// data-span inits (DualGD::positive_start()) W0 = alpha0 X, so W = alpha X.
inline void weights_from_dual(const ConstMatrixRef& X, const ConstMatrixRef& W0, const ConstMatrixRef& alpha0,
                              const ConstMatrixRef& alpha, MatrixRef W, MatrixRef scratch) {
    if (W0.rows() != alpha.rows() || W0.cols() != X.cols() || alpha0.rows() != alpha.rows() ||
        alpha0.cols() != X.rows() || alpha.cols() != X.rows() || W.rows() != W0.rows() || W.cols() != W0.cols() ||
        scratch.rows() != alpha.rows() || scratch.cols() != alpha.cols())
        throw std::invalid_argument("weights_from_dual: inconsistent shapes");
    scratch = alpha - alpha0;
    W = W0;
    add_row_combination(scratch, X, W);
}

/// weights_from_dual() with its own scratch space.
inline void weights_from_dual(const ConstMatrixRef& X, const ConstMatrixRef& W0, const ConstMatrixRef& alpha0,
                              const ConstMatrixRef& alpha, MatrixRef W) {
    RowMatrix scratch(alpha.rows(), alpha.cols());
    weights_from_dual(X, W0, alpha0, alpha, W, scratch);
}

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
