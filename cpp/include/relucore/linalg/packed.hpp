/// @file linalg/packed.hpp
/// The weight engine's two products on an X packed once per run: relucore's
/// own AVX-512 and AVX2 kernels, in place of a BLAS that re-packs X on every call.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/types.hpp"
#include "relucore/defaults.hpp"
#include "relucore/linalg/blas.hpp"
#include "relucore/simd.hpp"

#include <algorithm>
#include <cstddef>
#include <vector>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

namespace blas {

// ---- Packed products of the weight engine on an X packed once per run ----
//
// beta = W X^T and G = C X at the sizes where the weight engine would call a
// BLAS, when the CPU has AVX-512F or AVX2 with FMA (simd::level(): RELUCORE_SIMD=sse2
// or lower turns them off) and X has at most defaults::packed_products_max_data
// entries. A BLAS re-packs X on every call (about a fifth of a step at
// n = 1300, d = 100, m = 36); the engine packs it once, twice over (PackedX),
// and both products run the same kernel on it: out(k, c) = sum_j A(k, j) P(j, c)
// with the 8 columns c of a panel of P in the lanes. Every entry of beta sums
// its d products in increasing t, every entry of G its n products in
// increasing i, by fused multiply-adds, so the results do not depend on the
// blocking nor on the level (AVX-512 or AVX2); they differ from a BLAS's in the
// last bits.

/// X (n x d) packed for the two products: `rows` in panels of 8 rows of X,
/// each stored feature-major (P(t, 8 rows): beta = W X^T), `cols` in panels
/// of 8 columns of X, each stored row-major (P(i, 8 columns): G = C X). Zero
/// lanes pad both to a whole number of pairs of panels.
struct PackedX {
    std::vector<Scalar> rows, cols;
    Index n = 0, d = 0;
};

/// Whether the weight engine's products for m neurons and X of n x d go to
/// the packed kernels below (read once, at the engine's construction).
inline bool packed_products_available(Index m, Index n, Index d) {
#if defined(RELUCORE_SIMD_DISPATCH)
    return products_use_blas_by_size(m, d, n) && double(n) * double(d) <= double(defaults::packed_products_max_data) &&
           (simd::level() >= simd::kAvx512 || (simd::level() >= simd::kAvx && simd::has_avx2_fma()));
#else
    (void)m, (void)n, (void)d;
    return false;
#endif
}

/// Packs X for gemm_nt_packed and gemm_packed (allocates: once per engine).
inline void pack_x(const ConstMatrixRef& X, PackedX& out) {
    const Index n = X.rows(), d = X.cols();
    const Index row_panels = (n + 15) / 16 * 2, col_panels = (d + 15) / 16 * 2;
    out.n = n, out.d = d;
    out.rows.assign(static_cast<std::size_t>(row_panels * d * 8), Scalar(0));
    out.cols.assign(static_cast<std::size_t>(col_panels * n * 8), Scalar(0));
    for (Index i = 0; i < n; ++i)
        for (Index t = 0; t < d; ++t) {
            out.rows[static_cast<std::size_t>(((i / 8) * d + t) * 8 + i % 8)] = X(i, t);
            out.cols[static_cast<std::size_t>(((t / 8) * n + i) * 8 + t % 8)] = X(i, t);
        }
}

namespace detail {

#if defined(RELUCORE_SIMD_DISPATCH)
// out(k0 + r, c0 .. c0 + 15) = sum_{j < J} A(k0 + r, j) P(j, c) for r < R, over the two
// panels (J x 8 each, contiguous) that start at panel c0 / 8 of P; `lanes` (<= 16)
// columns stored. Wide = false: lanes <= 8, the first panel only (each entry is the
// same chain of FMAs either way, so the numbers do not depend on Wide).
template <int R, bool Wide>
__attribute__((target("avx512f"))) inline void panel_block_avx512(const double* A, Index lda, const double* P, Index J,
                                                                  double* out, Index ldo, Index k0, Index c0,
                                                                  Index lanes) {
    __m512d acc[static_cast<std::size_t>(R)][2];
    RELUCORE_UNROLL for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_pd();
    const double* p0 = P + (c0 / 8) * J * 8;
    const double* p1 = p0 + J * 8;
    const double* a = A + k0 * lda;
    for (Index j = 0; j < J; ++j) {
        const __m512d u = _mm512_loadu_pd(p0 + j * 8);
        const __m512d v = Wide ? _mm512_loadu_pd(p1 + j * 8) : u;
        RELUCORE_UNROLL for (int r = 0; r < R; ++r) {
            const __m512d c = _mm512_set1_pd(a[r * lda + j]);
            acc[r][0] = _mm512_fmadd_pd(c, u, acc[r][0]);
            if (Wide) acc[r][1] = _mm512_fmadd_pd(c, v, acc[r][1]);
        }
    }
    if (lanes == (Wide ? 16 : 8)) {  // whole panels, plain stores
        RELUCORE_UNROLL for (int r = 0; r < R; ++r) {
            double* o = out + (k0 + r) * ldo + c0;
            _mm512_storeu_pd(o, acc[r][0]);
            if (Wide) _mm512_storeu_pd(o + 8, acc[r][1]);
        }
        return;
    }
    const __mmask8 m0 = lanes >= 8 ? __mmask8(0xFF) : __mmask8((1u << lanes) - 1);
    const __mmask8 m1 = lanes >= 16 ? __mmask8(0xFF) : lanes <= 8 ? __mmask8(0) : __mmask8((1u << (lanes - 8)) - 1);
    RELUCORE_UNROLL for (int r = 0; r < R; ++r) {
        double* o = out + (k0 + r) * ldo + c0;
        _mm512_mask_storeu_pd(o, m0, acc[r][0]);
        if (Wide) _mm512_mask_storeu_pd(o + 8, m1, acc[r][1]);
    }
}

// The rows k0 .. m - 1 of one column block of panel_product_avx512.
template <bool Wide>
__attribute__((target("avx512f"))) inline void panel_rows_avx512(const double* A, Index lda, Index m, const double* P,
                                                                 Index J, double* out, Index ldo, Index c0,
                                                                 Index lanes) {
    Index k = 0;
    for (; k + 9 <= m; k += 9) panel_block_avx512<9, Wide>(A, lda, P, J, out, ldo, k, c0, lanes);
    switch (m - k) {
#define RELUCORE_PANEL_CASE(R)                                             \
    case R:                                                                \
        panel_block_avx512<R, Wide>(A, lda, P, J, out, ldo, k, c0, lanes); \
        break;
        RELUCORE_PANEL_CASE(1)
        RELUCORE_PANEL_CASE(2)
        RELUCORE_PANEL_CASE(3)
        RELUCORE_PANEL_CASE(4)
        RELUCORE_PANEL_CASE(5)
        RELUCORE_PANEL_CASE(6)
        RELUCORE_PANEL_CASE(7)
        RELUCORE_PANEL_CASE(8)
#undef RELUCORE_PANEL_CASE
        default:
            break;
    }
}

// out (m x cols) = A (m x J) P for P packed in panels of 8 columns (J x 8 each):
// blocks of 9 rows of A (18 accumulators), then the rest in one block.
__attribute__((target("avx512f"))) inline void panel_product_avx512(const double* A, Index lda, Index m,
                                                                    const double* P, Index J, Index cols, double* out,
                                                                    Index ldo) {
    for (Index c0 = 0; c0 < cols; c0 += 16) {
        const Index lanes = std::min<Index>(16, cols - c0);
        if (lanes > 8)
            panel_rows_avx512<true>(A, lda, m, P, J, out, ldo, c0, lanes);
        else
            panel_rows_avx512<false>(A, lda, m, P, J, out, ldo, c0, lanes);
    }
}

// The AVX2 form of panel_block_avx512: out(k0 + r, c0 .. c0 + lanes - 1) for r < R from the one
// panel (J x 8) at c0 / 8, each panel row two 4-lane vectors; lanes <= 8. Each entry is the same
// chain of FMAs as in panel_block_avx512, so both levels give the same numbers.
template <int R>
__attribute__((target("avx2,fma"))) inline void panel_block_avx2(const double* A, Index lda, const double* P, Index J,
                                                                 double* out, Index ldo, Index k0, Index c0,
                                                                 Index lanes) {
    __m256d acc[static_cast<std::size_t>(R)][2];
    RELUCORE_UNROLL for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_pd();
    const double* p = P + (c0 / 8) * J * 8;
    const double* a = A + k0 * lda;
    for (Index j = 0; j < J; ++j) {
        const __m256d u = _mm256_loadu_pd(p + j * 8), v = _mm256_loadu_pd(p + j * 8 + 4);
        RELUCORE_UNROLL for (int r = 0; r < R; ++r) {
            const __m256d c = _mm256_broadcast_sd(a + r * lda + j);
            acc[r][0] = _mm256_fmadd_pd(c, u, acc[r][0]);
            acc[r][1] = _mm256_fmadd_pd(c, v, acc[r][1]);
        }
    }
    if (lanes == 8) {  // the common case, plain stores (AMD's masked stores are slow)
        RELUCORE_UNROLL for (int r = 0; r < R; ++r) {
            double* o = out + (k0 + r) * ldo + c0;
            _mm256_storeu_pd(o, acc[r][0]);
            _mm256_storeu_pd(o + 4, acc[r][1]);
        }
        return;
    }
    // Lane l of a half is stored where its mask's sign bit is set: l < lanes (first half), l + 4 < lanes.
    const __m256i lane = _mm256_setr_epi64x(0, 1, 2, 3);
    const __m256i m0 = _mm256_cmpgt_epi64(_mm256_set1_epi64x(static_cast<long long>(lanes)), lane);
    const __m256i m1 = _mm256_cmpgt_epi64(_mm256_set1_epi64x(static_cast<long long>(lanes) - 4), lane);
    RELUCORE_UNROLL for (int r = 0; r < R; ++r) {
        double* o = out + (k0 + r) * ldo + c0;
        _mm256_maskstore_pd(o, m0, acc[r][0]);
        _mm256_maskstore_pd(o + 4, m1, acc[r][1]);
    }
}

// out (m x cols) = A (m x J) P on AVX2 with FMA: blocks of 6 rows of A (12 accumulators)
// per panel of 8 columns, then the rest of the rows in one block.
__attribute__((target("avx2,fma"))) inline void panel_product_avx2(const double* A, Index lda, Index m, const double* P,
                                                                   Index J, Index cols, double* out, Index ldo) {
    for (Index c0 = 0; c0 < cols; c0 += 8) {
        const Index lanes = std::min<Index>(8, cols - c0);
        Index k = 0;
        for (; k + 6 <= m; k += 6) panel_block_avx2<6>(A, lda, P, J, out, ldo, k, c0, lanes);
        switch (m - k) {
#define RELUCORE_PANEL_CASE(R)                                     \
    case R:                                                        \
        panel_block_avx2<R>(A, lda, P, J, out, ldo, k, c0, lanes); \
        break;
            RELUCORE_PANEL_CASE(1)
            RELUCORE_PANEL_CASE(2)
            RELUCORE_PANEL_CASE(3)
            RELUCORE_PANEL_CASE(4)
            RELUCORE_PANEL_CASE(5)
#undef RELUCORE_PANEL_CASE
            default:
                break;
        }
    }
}

// The packed kernel of the calling thread's SIMD level (packed_products_available() decided
// that one of the two runs).
inline void panel_product(const double* A, Index lda, Index m, const double* P, Index J, Index cols, double* out,
                          Index ldo) {
    if (simd::step_level() >= simd::kAvx512)
        panel_product_avx512(A, lda, m, P, J, cols, out, ldo);
    else
        panel_product_avx2(A, lda, m, P, J, cols, out, ldo);
}
#endif

}  // namespace detail

/// beta = W X^T (m x n) from W (m x d) and X packed by pack_x; only where
/// packed_products_available().
inline void gemm_nt_packed(const ConstMatrixRef& W, const PackedX& X, MatrixRef beta) {
#if defined(RELUCORE_SIMD_DISPATCH)
    detail::panel_product(W.data(), W.outerStride(), W.rows(), X.rows.data(), X.d, X.n, beta.data(),
                          beta.outerStride());
#else
    (void)W, (void)X, (void)beta;
#endif
}

/// G = C X (m x d) from C (m x n) and X packed by pack_x; only where
/// packed_products_available().
inline void gemm_packed(const ConstMatrixRef& C, const PackedX& X, MatrixRef G) {
#if defined(RELUCORE_SIMD_DISPATCH)
    detail::panel_product(C.data(), C.outerStride(), C.rows(), X.cols.data(), X.n, X.d, G.data(), G.outerStride());
#else
    (void)C, (void)X, (void)G;
#endif
}

}  // namespace blas

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
