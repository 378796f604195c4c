// Gram matrices K = X X^T (docs/theory.md).
//
// Forming K is the one O(n^2 d) step of a run (the GD steps are O(m n^2)), so
// on x86-64 machines with AVX2 and FMA it uses a kernel of its own, chosen at
// run time (the package is compiled for baseline x86-64, where Eigen only
// has SSE2; see simd.hpp): dot products of 4 x 2 blocks of rows, 4 doubles
// per lane, the columns processed in chunks that stay in cache. Elsewhere, and
// when RELUCORE_NO_SIMD_DISPATCH is defined, Eigen's symmetric rank update is
// used.
// The two paths round differently (the kernel fuses multiply-adds), so K may
// differ in the last bits between machines; on one machine it is always the
// same.
#pragma once

#include "relucore/core/types.hpp"
#include "relucore/simd.hpp"

#include <Eigen/Core>

#include <algorithm>

namespace relucore {

namespace detail {

#if defined(RELUCORE_SIMD_DISPATCH)
__attribute__((target("avx2,fma"))) inline double hsum256(__m256d v) {
    const __m128d lo = _mm256_castpd256_pd128(v);
    const __m128d hi = _mm256_extractf128_pd(v, 1);
    const __m128d s = _mm_add_pd(lo, hi);
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

// K(i0 + r, j0 + c) += <x_{i0+r}, x_{j0+c}> over columns [c0, c1) for the
// R x C block of rows (R <= 4, C <= 2); the column count is a multiple of 4.
template <int R, int C>
__attribute__((target("avx2,fma"))) inline void gram_block_avx2(const double* X, Index ld, Index i0, Index j0, Index c0,
                                                                Index c1, double* K, Index ldk) {
    __m256d acc[array_extent<R>][array_extent<C>];
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_pd();
    const double* xi[array_extent<R>];
    const double* xj[array_extent<C>];
    for (int r = 0; r < R; ++r) xi[r] = X + (i0 + r) * ld;
    for (int c = 0; c < C; ++c) xj[c] = X + (j0 + c) * ld;
    for (Index t = c0; t < c1; t += 4) {
        __m256d b[array_extent<C>];
        for (int c = 0; c < C; ++c) b[c] = _mm256_loadu_pd(xj[c] + t);
        for (int r = 0; r < R; ++r) {
            const __m256d a = _mm256_loadu_pd(xi[r] + t);
            for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_pd(a, b[c], acc[r][c]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) K[(i0 + r) * ldk + j0 + c] += hsum256(acc[r][c]);
}

template <int R>
__attribute__((target("avx2,fma"))) inline void gram_row_block_avx2(const double* X, Index ld, Index i0, Index c0,
                                                                    Index c1, double* K, Index ldk) {
    // Columns j0 < i0 + R: the lower triangle of these rows (and a few upper
    // entries of the diagonal block, which the caller overwrites).
    const Index jend = i0 + R;
    Index j0 = 0;
    for (; j0 + 2 <= jend; j0 += 2) gram_block_avx2<R, 2>(X, ld, i0, j0, c0, c1, K, ldk);
    if (j0 < jend) gram_block_avx2<R, 1>(X, ld, i0, j0, c0, c1, K, ldk);
}

__attribute__((target("avx2,fma"))) inline void gram_matrix_avx2(const ConstMatrixRef& X, MatrixRef K) {
    const Index n = X.rows(), d = X.cols(), ld = X.outerStride(), ldk = K.outerStride();
    const double* x = X.data();
    double* k = K.data();
    K.setZero();
    // Column chunks of ~1 MiB of X, so a chunk is read from cache by every block.
    const Index chunk = std::max<Index>(64, (Index(131072) / std::max<Index>(n, 1)) / 4 * 4);
    const Index d4 = d / 4 * 4;
    for (Index c0 = 0; c0 < d4; c0 += chunk) {
        const Index c1 = std::min(d4, c0 + chunk);
        Index i0 = 0;
        for (; i0 + 4 <= n; i0 += 4) gram_row_block_avx2<4>(x, ld, i0, c0, c1, k, ldk);
        switch (n - i0) {
            case 3:
                gram_row_block_avx2<3>(x, ld, i0, c0, c1, k, ldk);
                break;
            case 2:
                gram_row_block_avx2<2>(x, ld, i0, c0, c1, k, ldk);
                break;
            case 1:
                gram_row_block_avx2<1>(x, ld, i0, c0, c1, k, ldk);
                break;
            default:
                break;
        }
    }
    // The last d mod 4 columns.
    for (Index i = 0; i < n; ++i)
        for (Index j = 0; j <= i; ++j) {
            double s = 0;
            for (Index t = d4; t < d; ++t) s += x[i * ld + t] * x[j * ld + t];
            k[i * ldk + j] += s;
        }
}
#endif

}  // namespace detail

// K = X X^T, exactly symmetric (the lower triangle is computed and mirrored).
inline void gram_matrix(const ConstMatrixRef& X, MatrixRef K) {
    const Index n = X.rows();
#if defined(RELUCORE_SIMD_DISPATCH)
    if (simd::has_avx2_fma() && X.cols() >= 4) {
        detail::gram_matrix_avx2(X, K);
    } else
#endif
    {
        // A symmetric rank-n update: half the flops of a full product.
        K.setZero();
        K.template selfadjointView<Eigen::Lower>().rankUpdate(X);
    }
    for (Index i = 0; i < n; ++i)
        for (Index j = i + 1; j < n; ++j) K(i, j) = K(j, i);
}

inline RowMatrix gram_matrix(const ConstMatrixRef& X) {
    RowMatrix K(X.rows(), X.rows());
    gram_matrix(X, K);
    return K;
}

}  // namespace relucore
