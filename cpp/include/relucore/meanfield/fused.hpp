// The fused single-sample step of the mean-field engine (meanfield/weight_gd.hpp)
// on one chunk of neurons: the update of step t and the forward pass of step
// t + 1 in one sweep. Per neuron i, with r_i = relu(z_i) as stored in Z
// (relu(z) = z if z > 0 else +0; the update needs only r_i: 1[z_i > 0] =
// 1[r_i > 0]):
//
//     c_i  = r_i > 0 ? (s a_i) g : +0                 (g = the residual factor)
//     b_i <- decay b_i - c_i       [+ sd xi_b]
//     w_ik <- decay w_ik - c_i x_k  [+ sd xi_wk]     k = 1..D
//     z'_i = (b_i + w_i1 x'_1) + ... + w_iD x'_D       (x' = next sample)
//     a_i <- decay a_i - r_i (s g)  [+ sd xi_a]
//     r_i <- relu(z'_i),  lane[i mod 8] += a_i r_i
//
// Every path (scalar, SSE2, AVX, AVX-512F) performs exactly these IEEE
// operations (no FMA), so the numbers do not depend on the path. The vector
// body of the SIMD paths is written once, in meanfield/fused_body.inc, and
// included inside each path's target-attributed function with that path's
// intrinsics as macros, so every instruction set compiles the same text as if
// written out by hand (a single definition over GCC/clang vector extensions
// instantiated by target-attribute wrappers was slower; bench/HISTORY.md,
// meanfield).
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/types.hpp"
#include "relucore/simd.hpp"

#include <algorithm>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {
namespace meanfield {

constexpr Index kChunk = 128;  // neurons per work unit (fixed: sets the sum order)

// ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)): the chunk's sum of its
// eight lanes.
inline Scalar lane_total(const Scalar* l) {
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

// Sum of c[0..n) in a fixed order: eight interleaved lanes (lane l sums
// c[i], i = l mod 8, in increasing i), then lane_total. The fused kernels
// accumulate the same lanes in registers, so a state's forward pass rounds
// identically whichever path computed it.
inline Scalar lane_sum(const Scalar* __restrict c, Index n) {
    Scalar acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    Index i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; ++l) acc[l] += c[i + l];
    for (; i < n; ++i) acc[i & 7] += c[i];
    return lane_total(acc);
}

// Neurons [i, n) of a chunk, one by one (the reference; finishes what the
// SIMD paths leave).
template <int D, bool Outer, bool Bias, bool Noisy>
inline void fused_scalar(Index i, Index n, Scalar* __restrict a, Scalar* __restrict b, Scalar* __restrict z,
                         Scalar* const* w, Scalar* __restrict lanes, const Scalar* __restrict xi, const Scalar* xk_in,
                         const Scalar* xnk_in, Scalar s, Scalar decay, Scalar g0, Scalar sd) {
    Scalar xk[array_extent<D>], xnk[array_extent<D>];  // local: the stores below cannot change them
    for (int k = 0; k < D; ++k) {
        xk[k] = xk_in[k];
        xnk[k] = xnk_in[k];
    }
    for (; i < n; ++i) {
        const Scalar ri = z[i], ai = a[i];
        const Scalar ci = ri > 0 ? (s * ai) * g0 : Scalar(0);
        Scalar zn = 0;
        if (Bias) {
            Scalar bn = decay * b[i] - ci;
            if (Noisy) bn += sd * xi[(D + 1) * kChunk + i];
            b[i] = bn;
            zn = bn;
        }
        for (int k = 0; k < D; ++k) {
            Scalar wk = decay * w[k][i] - ci * xk[k];
            if (Noisy) wk += sd * xi[(1 + k) * kChunk + i];
            w[k][i] = wk;
            zn = (Bias || k > 0) ? zn + wk * xnk[k] : wk * xnk[k];
        }
        Scalar an = ai;
        if (Outer) {
            an = decay * ai - ri * (s * g0);
            if (Noisy) an += sd * xi[i];
        }
        a[i] = an;
        const Scalar rn = zn > 0 ? zn : Scalar(0);
        z[i] = rn;
        lanes[i & 7] += an * rn;
    }
}

#if defined(__SSE2__)
// Two neurons per iteration from i (a multiple of 4) while two remain, the
// operations of fused_scalar; returns the first neuron not done.
template <int D, bool Outer, bool Bias, bool Noisy>
inline Index fused_sse2(Index i, Index n, Scalar* __restrict a, Scalar* __restrict b, Scalar* __restrict z,
                        Scalar* const* w, Scalar* __restrict lanes, const Scalar* __restrict xi, const Scalar* xk,
                        const Scalar* xnk, Scalar s, Scalar decay, Scalar g0, Scalar sd) {
    const __m128d zero = _mm_setzero_pd(), g0v = _mm_set1_pd(g0), sv = _mm_set1_pd(s), sgv = _mm_set1_pd(s * g0),
                  dv = _mm_set1_pd(decay), sdv = _mm_set1_pd(sd);
    __m128d xkv[array_extent<D>], xnv[array_extent<D>];
    for (int k = 0; k < D; ++k) {
        xkv[k] = _mm_set1_pd(xk[k]);
        xnv[k] = _mm_set1_pd(xnk[k]);
    }
    __m128d acc[4];  // lanes (0, 1), (2, 3), (4, 5), (6, 7)
    for (Index l = 0; l < 4; ++l) acc[l] = _mm_loadu_pd(lanes + 2 * l);
    for (; i + 2 <= n; i += 2) {
#define RELUCORE_FUSED_V __m128d
#define RELUCORE_FUSED_LD(p) _mm_loadu_pd(p)
#define RELUCORE_FUSED_ST(p, v) _mm_storeu_pd(p, v)
#define RELUCORE_FUSED_ADD _mm_add_pd
#define RELUCORE_FUSED_SUB _mm_sub_pd
#define RELUCORE_FUSED_MUL _mm_mul_pd
#define RELUCORE_FUSED_MAX _mm_max_pd
#define RELUCORE_FUSED_CI(r, p, q) _mm_and_pd(_mm_cmpgt_pd(r, zero), _mm_mul_pd(p, q))
#define RELUCORE_FUSED_NOISE 1
#include "relucore/meanfield/fused_body.inc"
        acc[(i >> 1) & 3] = _mm_add_pd(acc[(i >> 1) & 3], _mm_mul_pd(an, rn));
    }
    for (Index l = 0; l < 4; ++l) _mm_storeu_pd(lanes + 2 * l, acc[l]);
    return i;
}
#endif

#if defined(RELUCORE_SIMD_DISPATCH)
// One AVX vector (neurons i .. i+3) of the fused step; returns a_i r_i.
template <int D, bool Outer, bool Bias, bool Noisy>
__attribute__((target("avx"), always_inline)) inline __m256d fused_avx_vec(
    Index i, Scalar* __restrict a, Scalar* __restrict b, Scalar* __restrict z, Scalar* const* w,
    const Scalar* __restrict xi, const __m256d* xkv, const __m256d* xnv, __m256d sv, __m256d dv, __m256d g0v,
    __m256d sgv, __m256d sdv) {
    const __m256d zero = _mm256_setzero_pd();
#define RELUCORE_FUSED_V __m256d
#define RELUCORE_FUSED_LD(p) _mm256_loadu_pd(p)
#define RELUCORE_FUSED_ST(p, v) _mm256_storeu_pd(p, v)
#define RELUCORE_FUSED_ADD _mm256_add_pd
#define RELUCORE_FUSED_SUB _mm256_sub_pd
#define RELUCORE_FUSED_MUL _mm256_mul_pd
#define RELUCORE_FUSED_MAX _mm256_max_pd
#define RELUCORE_FUSED_CI(r, p, q) _mm256_and_pd(_mm256_cmp_pd(r, zero, _CMP_GT_OQ), _mm256_mul_pd(p, q))
#define RELUCORE_FUSED_NOISE 1
#include "relucore/meanfield/fused_body.inc"
    return _mm256_mul_pd(an, rn);
}

// Four neurons per vector, lanes 0-3 and 4-7 in two accumulators; the
// operations of fused_scalar, element by element.
// Returns the first neuron not done (a multiple of 4).
template <int D, bool Outer, bool Bias, bool Noisy>
__attribute__((target("avx"))) Index fused_avx(Index n, Scalar* __restrict a, Scalar* __restrict b,
                                               Scalar* __restrict z, Scalar* const* w_in, Scalar* __restrict lanes,
                                               const Scalar* __restrict xi, const Scalar* xk, const Scalar* xnk,
                                               Scalar s, Scalar decay, Scalar g0, Scalar sd) {
    __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
    const __m256d g0v = _mm256_set1_pd(g0), sv = _mm256_set1_pd(s), sgv = _mm256_set1_pd(s * g0),
                  dv = _mm256_set1_pd(decay), sdv = _mm256_set1_pd(sd);
    __m256d xkv[array_extent<D>], xnv[array_extent<D>];
    Scalar* w[array_extent<D>];
    for (int k = 0; k < D; ++k) {
        xkv[k] = _mm256_set1_pd(xk[k]);
        xnv[k] = _mm256_set1_pd(xnk[k]);
        w[k] = w_in[k];
    }
    Index i = 0;
    for (; i + 8 <= n; i += 8) {
        acc0 = _mm256_add_pd(acc0,
                             fused_avx_vec<D, Outer, Bias, Noisy>(i, a, b, z, w, xi, xkv, xnv, sv, dv, g0v, sgv, sdv));
        acc1 = _mm256_add_pd(
            acc1, fused_avx_vec<D, Outer, Bias, Noisy>(i + 4, a, b, z, w, xi, xkv, xnv, sv, dv, g0v, sgv, sdv));
    }
    if (i + 4 <= n) {
        acc0 = _mm256_add_pd(acc0,
                             fused_avx_vec<D, Outer, Bias, Noisy>(i, a, b, z, w, xi, xkv, xnv, sv, dv, g0v, sgv, sdv));
        i += 4;
    }
    _mm256_storeu_pd(lanes, acc0);
    _mm256_storeu_pd(lanes + 4, acc1);
    return i;
}

// RELUCORE_NO_FP_CONTRACT (simd.hpp): no FMA contraction in the AVX-512 code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
// GCC 12 flags the undefined source operand inside _mm512_max_pd.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// One AVX-512 vector of the fused noiseless step (neurons i .. i+7, or
// those in m when Masked, with masked loads and stores); returns a_i r_i.
template <int D, bool Outer, bool Bias, bool Masked>
__attribute__((target("avx512f"), always_inline)) RELUCORE_NO_FP_CONTRACT inline __m512d fused_avx512_vec(
    Index i, __mmask8 m, Scalar* __restrict a, Scalar* __restrict b, Scalar* __restrict z, Scalar* const* w,
    const __m512d* xkv, const __m512d* xnv, __m512d sv, __m512d dv, __m512d g0v, __m512d sgv) {
    RELUCORE_NO_FP_CONTRACT_BODY
    const __m512d zero = _mm512_setzero_pd();
#define RELUCORE_FUSED_V __m512d
#define RELUCORE_FUSED_LD(p) (Masked ? _mm512_maskz_loadu_pd(m, p) : _mm512_loadu_pd(p))
#define RELUCORE_FUSED_ST(p, v) (Masked ? _mm512_mask_storeu_pd(p, m, v) : _mm512_storeu_pd(p, v))
#define RELUCORE_FUSED_ADD _mm512_add_pd
#define RELUCORE_FUSED_SUB _mm512_sub_pd
#define RELUCORE_FUSED_MUL _mm512_mul_pd
#define RELUCORE_FUSED_MAX _mm512_max_pd
#define RELUCORE_FUSED_CI(r, p, q) _mm512_maskz_mul_pd(_mm512_cmp_pd_mask(r, zero, _CMP_GT_OQ), p, q)
#define RELUCORE_FUSED_NOISE 0  // the noisy step takes the AVX kernel (fused_avx512)
#include "relucore/meanfield/fused_body.inc"
    return _mm512_mul_pd(an, rn);
}

// The noiseless fused step of the neurons [i_begin, i_end), eight per
// vector, chunk by chunk (part[0], part[1], ... get the sums of the
// chunks starting at i_begin), the tail of a chunk with masked loads and
// stores. The operations of fused_scalar, element by
// element: GCC would contract the multiplications and subtractions into
// AVX-512 FMAs, hence fp-contract=off. (With noise the AVX kernel is
// used: the Box-Muller transform runs in AVX2, and mixing it with 512-bit
// code is slower than staying at 256 bits.)
template <int D, bool Outer, bool Bias>
__attribute__((target("avx512f"))) RELUCORE_NO_FP_CONTRACT void fused_avx512(
    Index i_begin, Index i_end, Scalar* __restrict a, Scalar* __restrict b, Scalar* __restrict z, Scalar* const* w_in,
    const Scalar* xk, const Scalar* xnk, Scalar s, Scalar decay, Scalar g0, Scalar* __restrict part) {
    RELUCORE_NO_FP_CONTRACT_BODY
    const __m512d zero = _mm512_setzero_pd(), g0v = _mm512_set1_pd(g0), sv = _mm512_set1_pd(s),
                  sgv = _mm512_set1_pd(s * g0), dv = _mm512_set1_pd(decay);
    __m512d xkv[array_extent<D>], xnv[array_extent<D>];
    Scalar* w[array_extent<D>];
    for (int k = 0; k < D; ++k) {
        xkv[k] = _mm512_set1_pd(xk[k]);
        xnv[k] = _mm512_set1_pd(xnk[k]);
        w[k] = w_in[k];
    }
    for (Index i0 = i_begin; i0 < i_end; i0 += kChunk) {
        const Index i1 = std::min(i_end, i0 + kChunk);
        __m512d acc = zero;
        Index i = i0;
        for (; i + 8 <= i1; i += 8)
            acc = _mm512_add_pd(
                acc, fused_avx512_vec<D, Outer, Bias, false>(i, 0xFF, a, b, z, w, xkv, xnv, sv, dv, g0v, sgv));
        if (i < i1) {
            const __mmask8 m = static_cast<__mmask8>((1u << (i1 - i)) - 1u);
            acc = _mm512_mask_add_pd(
                acc, m, acc, fused_avx512_vec<D, Outer, Bias, true>(i, m, a, b, z, w, xkv, xnv, sv, dv, g0v, sgv));
        }
        alignas(64) Scalar lanes[8];
        _mm512_store_pd(lanes, acc);
        *part++ = lane_total(lanes);
    }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

}  // namespace meanfield
}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
