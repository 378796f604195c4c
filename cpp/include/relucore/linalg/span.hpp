// Linear combinations of the rows of X: W = W0 + C X (m x n coefficients
// times n x d data). This is how weights come back from dual coordinates
// (w_k = w_k^(0) + X^T (alpha_k - alpha_k^(0)), Lai et al. 2026): O(m n d), the
// one d-dimensional operation of a run besides forming K.
//
// As for the Gram matrix, x86-64 machines with AVX2 and FMA get a kernel of
// its own chosen at run time (8 independent 4-double sums per block of 32
// columns); elsewhere, or with RELUCORE_NO_SIMD_DISPATCH, plain loops.
#pragma once

#include "relucore/core/types.hpp"
#include "relucore/linalg/gram.hpp"
#include "relucore/simd.hpp"

#include <stdexcept>

namespace relucore {

namespace detail {

#if defined(RELUCORE_SIMD_DISPATCH)
// W (m x d) += C (m x n) X (n x d) over the columns [t0, t1), a multiple of
// 4 * L wide: L independent 4-lane sums per column block, so that the chains
// of n fused multiply-adds overlap.
template <int L>
__attribute__((target("avx2,fma"))) inline Index add_row_combination_avx2(const double* C, Index ldc, const double* X,
                                                                          Index ldx, double* W, Index ldw, Index m,
                                                                          Index n, Index t0, Index d) {
    constexpr Index width = 4 * Index{L};  // doubles per iteration
    const Index t1 = t0 + (d - t0) / width * width;
    for (Index k = 0; k < m; ++k) {
        const double* ck = C + k * ldc;
        double* wk = W + k * ldw;
        for (Index t = t0; t < t1; t += width) {
            __m256d acc[array_extent<L>];
            for (Index l = 0; l < L; ++l) acc[l] = _mm256_loadu_pd(wk + t + 4 * l);
            for (Index i = 0; i < n; ++i) {
                const __m256d c = _mm256_set1_pd(ck[i]);
                const double* xi = X + i * ldx + t;
                for (Index l = 0; l < L; ++l) acc[l] = _mm256_fmadd_pd(c, _mm256_loadu_pd(xi + 4 * l), acc[l]);
            }
            for (Index l = 0; l < L; ++l) _mm256_storeu_pd(wk + t + 4 * l, acc[l]);
        }
    }
    return t1;
}
#endif

}  // namespace detail

/// W += C X for C (m x n), X (n x d), W (m x d): every output entry sums its
/// n terms in increasing i onto the value already in W.
inline void add_row_combination(const ConstMatrixRef& C, const ConstMatrixRef& X, MatrixRef W) {
    const Index m = C.rows(), n = C.cols(), d = X.cols();
    Index t0 = 0;
#if defined(RELUCORE_SIMD_DISPATCH)
    if (simd::has_avx2_fma()) {
        t0 = detail::add_row_combination_avx2<8>(C.data(), C.outerStride(), X.data(), X.outerStride(), W.data(),
                                                 W.outerStride(), m, n, 0, d);
        t0 = detail::add_row_combination_avx2<1>(C.data(), C.outerStride(), X.data(), X.outerStride(), W.data(),
                                                 W.outerStride(), m, n, t0, d);
    }
#endif
    for (Index k = 0; k < m; ++k)
        for (Index t = t0; t < d; ++t) {
            Scalar s = W(k, t);
            for (Index i = 0; i < n; ++i) s += C(k, i) * X(i, t);
            W(k, t) = s;
        }
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

}  // namespace relucore
