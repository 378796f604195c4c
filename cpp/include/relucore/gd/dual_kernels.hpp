// The product of the dual step, d_beta_k = K d_alpha_k, for n > 16 (the
// padded kernels of DualGD cover n <= 16): one or two neurons per pass over
// the rows of K, vectorised with AVX or AVX-512F chosen at run time
// (simd.hpp; RELUCORE_SIMD caps the level).
//
// Every entry j of every product is summed exactly as the plain loop
// `acc[j] += c_i * K(i, j)` does it: from the value already in acc, over the
// rows i with c_i != 0 in increasing i, one rounded multiply then one rounded
// add per term (no fused multiply-add). The vector paths only put several j
// (and two neurons) side by side, so all paths give bitwise the same result
// (tests/gd/test_dual_kernels.py).
#pragma once

#include <cstddef>
#include <vector>

#include "relucore/core/types.hpp"
#include "relucore/simd.hpp"

namespace relucore {
namespace dual_kernels {

/// acc[j] += c_i K_ij for j < width over the rows i < n with c_i = da_i != 0,
/// in increasing i (rows stride apart). Stride and width are Index or
/// std::integral_constant (compile-time, for DualGD's padded kernels).
template <class Stride, class Width>
inline void add_active_rows_plain(const Scalar* __restrict K, Stride stride, Index n, Width width,
                                  const Scalar* __restrict da, Scalar* __restrict acc) {
    for (Index i = 0; i < n; ++i) {
        const Scalar c = da[i];
        if (c == 0) continue;
        const Scalar* __restrict Ki = K + i * stride;
        for (Index j = 0; j < width; ++j) acc[j] += c * Ki[j];
    }
}

/// The rows of K a product reads, per neuron q = 0, 1: row[q][r] (increasing,
/// the rows with a non-zero coefficient) and coef[q][r], count[q] of them.
/// Sized once (resize(n)), refilled without allocation before every product.
struct ActiveRows {
    std::vector<Index> row[2];
    std::vector<Scalar> coef[2];
    Index count[2] = {0, 0};
    void resize(Index n) {
        for (int q = 0; q < 2; ++q) {
            row[q].assign(static_cast<std::size_t>(n), 0);
            coef[q].assign(static_cast<std::size_t>(n), 0);
        }
    }
    /// Fills list q from the n coefficients da.
    void gather(int q, Index n, const Scalar* da) {
        Index c = 0;
        Index* rows = row[q].data();
        Scalar* co = coef[q].data();
        for (Index i = 0; i < n; ++i) {
            rows[c] = i;
            co[c] = da[i];
            c += da[i] != 0;  // branch-free: the entry is kept only when non-zero
        }
        count[q] = c;
    }
};

namespace detail {

#if defined(RELUCORE_SIMD_DISPATCH)

// NAME<L>(K, stride, list, neurons, j0, width, acc): the columns [j0, j0 + a
// multiple of L * LANES) of the products of the first `neurons` (1 or 2)
// lists, acc[q] += K da_q. Per block of columns, each neuron's sums stay in L
// vector registers while its active rows stream past; the block of K is read
// from memory once for both neurons (the second pass finds it in the L1
// cache). Returns the first column left. One body, instantiated per
// instruction set (a target attribute cannot be a template argument); no FMA
// contraction (RELUCORE_NO_FP_CONTRACT, clang's pragma).
#if defined(__clang__)
#define RELUCORE_DUAL_NO_CONTRACT _Pragma("clang fp contract(off)")
#else
#define RELUCORE_DUAL_NO_CONTRACT
#endif
#define RELUCORE_DUAL_ROWS(NAME, TARGET, V, LANES, LOAD, STORE, SET1, MUL, ADD)                               \
    template <int L>                                                                                          \
    __attribute__((target(TARGET), always_inline)) RELUCORE_NO_FP_CONTRACT inline Index NAME(                 \
        const Scalar* __restrict K, Index stride, const ActiveRows& list, int neurons, Index j0, Index width, \
        Scalar* const* acc) {                                                                                 \
        RELUCORE_DUAL_NO_CONTRACT                                                                             \
        constexpr Index lanes = (LANES), w = lanes * L;                                                       \
        const Index j1 = j0 + (width - j0) / w * w;                                                           \
        for (Index j = j0; j < j1; j += w) {                                                                  \
            for (int q = 0; q < neurons; ++q) {                                                               \
                const Index* __restrict rows = list.row[q].data();                                            \
                const Scalar* __restrict coef = list.coef[q].data();                                          \
                Scalar* __restrict out = acc[q] + j;                                                          \
                V s[array_extent<L>];                                                                         \
                for (Index l = 0; l < L; ++l) s[l] = LOAD(out + l * lanes);                                   \
                for (Index r = 0; r < list.count[q]; ++r) {                                                   \
                    const Scalar* __restrict Ki = K + rows[r] * stride + j;                                   \
                    const V c = SET1(coef[r]);                                                                \
                    for (Index l = 0; l < L; ++l) s[l] = ADD(s[l], MUL(c, LOAD(Ki + l * lanes)));             \
                }                                                                                             \
                for (Index l = 0; l < L; ++l) STORE(out + l * lanes, s[l]);                                   \
            }                                                                                                 \
        }                                                                                                     \
        return j1;                                                                                            \
    }

RELUCORE_DUAL_ROWS(add_rows_block_avx, "avx", __m256d, 4, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_set1_pd,
                   _mm256_mul_pd, _mm256_add_pd)
RELUCORE_DUAL_ROWS(add_rows_block_avx512, "avx512f", __m512d, 8, _mm512_loadu_pd, _mm512_storeu_pd, _mm512_set1_pd,
                   _mm512_mul_pd, _mm512_add_pd)
#undef RELUCORE_DUAL_ROWS
#undef RELUCORE_DUAL_NO_CONTRACT

__attribute__((target("avx"))) RELUCORE_NO_FP_CONTRACT inline Index add_rows_avx(const Scalar* K, Index stride,
                                                                                 const ActiveRows& list, int neurons,
                                                                                 Index width, Scalar* const* acc) {
    const Index j = add_rows_block_avx<4>(K, stride, list, neurons, 0, width, acc);
    return add_rows_block_avx<1>(K, stride, list, neurons, j, width, acc);
}

__attribute__((target("avx512f"))) RELUCORE_NO_FP_CONTRACT inline Index add_rows_avx512(const Scalar* K, Index stride,
                                                                                        const ActiveRows& list,
                                                                                        int neurons, Index width,
                                                                                        Scalar* const* acc) {
    Index j = add_rows_block_avx512<4>(K, stride, list, neurons, 0, width, acc);
    j = add_rows_block_avx512<1>(K, stride, list, neurons, j, width, acc);
    return add_rows_block_avx<1>(K, stride, list, neurons, j, width, acc);
}

#endif

/// The columns [j0, width) left by the vector paths (all of them on the
/// scalar level), row by row of each list.
inline void add_rows_tail(const Scalar* __restrict K, Index stride, const ActiveRows& list, int neurons, Index j0,
                          Index width, Scalar* const* acc) {
    for (int q = 0; q < neurons; ++q) {
        Scalar* __restrict out = acc[q];
        for (Index r = 0; r < list.count[q]; ++r) {
            const Scalar* __restrict Ki = K + list.row[q][static_cast<std::size_t>(r)] * stride;
            const Scalar c = list.coef[q][static_cast<std::size_t>(r)];
            for (Index j = j0; j < width; ++j) out[j] += c * Ki[j];
        }
    }
}

/// Both entry points below: da1 and acc1 null for one product.
inline void add_active(const Scalar* K, Index stride, Index n, const Scalar* da0, const Scalar* da1, Scalar* acc0,
                       Scalar* acc1, int level, ActiveRows& list) {
    const int neurons = da1 ? 2 : 1;
    list.gather(0, n, da0);
    if (da1) list.gather(1, n, da1);
    Scalar* const acc[2] = {acc0, acc1};
    Index j = 0;
#if defined(RELUCORE_SIMD_DISPATCH)
    if (level >= simd::kAvx512)
        j = add_rows_avx512(K, stride, list, neurons, n, acc);
    else if (level >= simd::kAvx)
        j = add_rows_avx(K, stride, list, neurons, n, acc);
#else
    (void)level;
#endif
    add_rows_tail(K, stride, list, neurons, j, n, acc);
}

}  // namespace detail

/// acc[j] += sum over i < n with da_i != 0 (increasing i) of da_i K_ij, for
/// j < n; K row-major with row stride `stride`. `level` is a simd level
/// (simd::level(), read once by the caller): kAvx and kAvx512 take the vector
/// paths, any lower level scalar loops; all give the same bits. `list` is
/// scratch space of size n (ActiveRows::resize).
inline void add_active_rows(const Scalar* K, Index stride, Index n, const Scalar* da, Scalar* acc, int level,
                            ActiveRows& list) {
    detail::add_active(K, stride, n, da, nullptr, acc, nullptr, level, list);
}

/// add_active_rows() for two neurons in one pass over K: acc0 += K da0 and
/// acc1 += K da1 (each bitwise as two separate calls).
inline void add_active_rows2(const Scalar* K, Index stride, Index n, const Scalar* da0, const Scalar* da1, Scalar* acc0,
                             Scalar* acc1, int level, ActiveRows& list) {
    detail::add_active(K, stride, n, da0, da1, acc0, acc1, level, list);
}

}  // namespace dual_kernels
}  // namespace relucore
