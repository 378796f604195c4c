// The fused dual step of DualGD for n <= 16, the square loss and the ReLU, in
// AVX-512F registers: one example row of alpha, beta, h, g or K is at most two
// vectors of 8 doubles (masked past n), so a step (apply, then evaluate) is a
// few dozen vector instructions per neuron where the SSE2 loops it replaces
// spent most of their time on one or two doubles at a time.
//
// Bitwise the padded SSE2/scalar step of DualGD (advance_relu_square,
// evaluate_relu_square<N, true>): every entry takes the same rounded operations in the
// same order (no FMA contraction: RELUCORE_NO_FP_CONTRACT, clang's pragma);
// only independent entries sit side by side. The two ordered sums, the loss
// sum_i g_i^2 and sq = sum_k sum_j d_beta_kj d_alpha_kj, are added one term at
// a time in increasing index as before (their products are formed in vectors).
// tests/gd/test_dual_kernels.py compares every SIMD level with a numpy reference.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/types.hpp"
#include "relucore/simd.hpp"

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {
namespace detail {
namespace dual_small {

/// Raw views of a DualGD state for one step (n <= 16): alpha, beta, d_alpha
/// are m x n (row stride n), d_beta and K_pad have rows of stride np (the
/// padded width, np <= 16, zero past n in K_pad), h and g hold n entries.
struct View {
    Index m = 0, n = 0, np = 0;
    Scalar* alpha = nullptr;
    Scalar* beta = nullptr;
    Scalar* d_alpha = nullptr;
    Scalar* d_beta = nullptr;
    const Scalar* K_pad = nullptr;
    const Scalar* outer = nullptr;
    const Scalar* y = nullptr;
    Scalar* h = nullptr;
    Scalar* g = nullptr;
    Scalar eta = 0;
};

/// What a step leaves besides the state: the loss, sq (eta^2 ||grad||^2 before
/// its square root), whether an activation mask changed and whether some
/// d_alpha entry is non-zero (NaN included; if none, d_beta is zero too).
struct StepOut {
    Scalar loss = 0;
    Scalar sq = 0;
    bool changed = false;
    bool moves = false;
};

#if defined(RELUCORE_SIMD_DISPATCH)
#if defined(__clang__)
#define RELUCORE_SMALL_NO_CONTRACT _Pragma("clang fp contract(off)")
#else
#define RELUCORE_SMALL_NO_CONTRACT
#endif

RELUCORE_AVX512_WARNINGS_OFF

/// Lanes [0, L) of a vector from p (the rest 0), L <= 8, by unmasked loads of 4, 2 and 1 doubles:
/// a masked load cannot take its data from a masked store still in flight (the next step reads
/// what this one wrote), unmasked loads of the sizes stored can.
template <int L>
__attribute__((target("avx512f"), always_inline)) inline __m512d load_part(const Scalar* p) {
    if constexpr (L == 8) {
        return _mm512_loadu_pd(p);
    } else {
        constexpr int o2 = L & 4, o1 = (L & 4) + (L & 2);
        __m512 r = _mm512_setzero_ps();
        if constexpr ((L & 4) != 0)
            r = _mm512_castpd_ps(_mm512_insertf64x4(_mm512_setzero_pd(), _mm256_loadu_pd(p), 0));
        if constexpr ((L & 2) != 0) r = _mm512_insertf32x4(r, _mm_castpd_ps(_mm_loadu_pd(p + o2)), o2 / 2);
        if constexpr ((L & 1) != 0) r = _mm512_insertf32x4(r, _mm_castpd_ps(_mm_load_sd(p + o1)), o1 / 2);
        return _mm512_castps_pd(r);
    }
}

/// Stores lanes [0, L) of v at p (L <= 8) by unmasked stores of 4, 2 and 1 doubles.
template <int L>
__attribute__((target("avx512f"), always_inline)) inline void store_part(Scalar* p, __m512d v) {
    if constexpr (L == 8) {
        _mm512_storeu_pd(p, v);
    } else {
        constexpr int o2 = L & 4, o1 = (L & 4) + (L & 2);
        const __m512 f = _mm512_castpd_ps(v);
        if constexpr ((L & 4) != 0) _mm256_storeu_pd(p, _mm512_castpd512_pd256(v));
        if constexpr ((L & 2) != 0) _mm_storeu_pd(p + o2, _mm_castps_pd(_mm512_extractf32x4_ps(f, o2 / 2)));
        if constexpr ((L & 1) != 0) _mm_store_sd(p + o1, _mm_castps_pd(_mm512_extractf32x4_ps(f, o1 / 2)));
    }
}

/// apply() then evaluate() of DualGD for the square loss and the ReLU at n = N <= 16 (rows
/// padded to NP = (N + 1) / 2 * 2 in K_pad and d_beta): alpha_k += d_alpha_k, beta_k += d_beta_k,
/// h = sum_k a_k relu(beta_k), g = h - y, the loss, d_alpha_k = -eta a_k g on the active
/// examples, d_beta_k = K d_alpha_k (rows with d_alpha_ki != 0, increasing i, from 0) and sq.
template <int N>
__attribute__((target("avx512f"))) RELUCORE_NO_FP_CONTRACT inline StepOut advance_avx512(const View& v) {
    RELUCORE_SMALL_NO_CONTRACT
    static_assert(N > 0 && N <= 16, "n <= 16");
    constexpr int LO = N < 8 ? N : 8, HI = N - LO, NP = (N + 1) / 2 * 2, PLO = NP < 8 ? NP : 8, PHI = NP - PLO;
    const Index m = v.m;
    const __m512d zero = _mm512_setzero_pd();
    __m512d h0 = zero, h1 = zero;
    unsigned changed = 0;
    for (Index k = 0; k < m; ++k) {
        Scalar* ak = v.alpha + k * N;
        Scalar* bk = v.beta + k * N;
        const Scalar* dak = v.d_alpha + k * N;
        const Scalar* dbk = v.d_beta + k * NP;
        store_part<LO>(ak, _mm512_add_pd(load_part<LO>(ak), load_part<LO>(dak)));
        const __m512d old0 = load_part<LO>(bk), b0 = _mm512_add_pd(old0, load_part<LO>(dbk));
        store_part<LO>(bk, b0);
        const __mmask8 on0 = _mm512_cmp_pd_mask(b0, zero, _CMP_GT_OQ);
        changed |= static_cast<unsigned>(on0 ^ _mm512_cmp_pd_mask(old0, zero, _CMP_GT_OQ));
        const __m512d a = _mm512_set1_pd(v.outer[k]);
        h0 = _mm512_add_pd(h0, _mm512_mul_pd(a, _mm512_maskz_mov_pd(on0, b0)));
        if constexpr (HI > 0) {
            store_part<HI>(ak + 8, _mm512_add_pd(load_part<HI>(ak + 8), load_part<HI>(dak + 8)));
            const __m512d old1 = load_part<HI>(bk + 8), b1 = _mm512_add_pd(old1, load_part<HI>(dbk + 8));
            store_part<HI>(bk + 8, b1);
            const __mmask8 on1 = _mm512_cmp_pd_mask(b1, zero, _CMP_GT_OQ);
            changed |= static_cast<unsigned>(on1 ^ _mm512_cmp_pd_mask(old1, zero, _CMP_GT_OQ));
            h1 = _mm512_add_pd(h1, _mm512_mul_pd(a, _mm512_maskz_mov_pd(on1, b1)));
        }
    }
    StepOut out;
    out.changed = changed != 0;
    store_part<LO>(v.h, h0);
    const __m512d g0 = _mm512_sub_pd(h0, load_part<LO>(v.y));
    store_part<LO>(v.g, g0);
    __m512d g1 = zero;
    if constexpr (HI > 0) {
        store_part<HI>(v.h + 8, h1);
        g1 = _mm512_sub_pd(h1, load_part<HI>(v.y + 8));
        store_part<HI>(v.g + 8, g1);
    }
    alignas(64) Scalar t[16];
    _mm512_store_pd(t, _mm512_mul_pd(g0, g0));
    _mm512_store_pd(t + 8, _mm512_mul_pd(g1, g1));
    Scalar loss = 0;
    for (int i = 0; i < N; ++i) loss += t[i];
    out.loss = loss / 2;
    Scalar sq = 0;
    unsigned moves = 0;
    for (Index k = 0; k < m; ++k) {
        const Scalar* bk = v.beta + k * N;
        Scalar* dak = v.d_alpha + k * N;
        const __m512d a = _mm512_set1_pd(-v.eta * v.outer[k]);
        const __m512d da0 = _mm512_maskz_mul_pd(_mm512_cmp_pd_mask(load_part<LO>(bk), zero, _CMP_GT_OQ), a, g0);
        const __m512d da1 =
            HI > 0 ? _mm512_maskz_mul_pd(_mm512_cmp_pd_mask(load_part<HI>(bk + 8), zero, _CMP_GT_OQ), a, g1) : zero;
        store_part<LO>(dak, da0);
        if constexpr (HI > 0) store_part<HI>(dak + 8, da1);
        // The rows with d_alpha_ki != 0 (NaN included: `c == 0` is false for it), in increasing i.
        const unsigned rows = static_cast<unsigned>(_mm512_cmp_pd_mask(da0, zero, _CMP_NEQ_UQ)) |
                              static_cast<unsigned>(_mm512_cmp_pd_mask(da1, zero, _CMP_NEQ_UQ)) << 8;
        moves |= rows;
        __m512d acc0 = zero, acc1 = zero;
        for (Index i = 0; i < N; ++i) {
            if (!((rows >> i) & 1u)) continue;
            const __m512d c = _mm512_permutexvar_pd(_mm512_set1_epi64(i & 7), i < 8 ? da0 : da1);
            const Scalar* Ki = v.K_pad + i * NP;
            acc0 = _mm512_add_pd(acc0, _mm512_mul_pd(c, load_part<PLO>(Ki)));
            if constexpr (PHI > 0) acc1 = _mm512_add_pd(acc1, _mm512_mul_pd(c, load_part<PHI>(Ki + 8)));
        }
        Scalar* dbk = v.d_beta + k * NP;
        store_part<PLO>(dbk, acc0);
        if constexpr (PHI > 0) store_part<PHI>(dbk + 8, acc1);
        _mm512_store_pd(t, _mm512_mul_pd(acc0, da0));
        _mm512_store_pd(t + 8, _mm512_mul_pd(acc1, da1));
        for (int j = 0; j < N; ++j) sq += t[j];
    }
    out.sq = sq;
    out.moves = moves != 0;
    return out;
}

RELUCORE_AVX512_WARNINGS_ON
#undef RELUCORE_SMALL_NO_CONTRACT
#endif

}  // namespace dual_small
}  // namespace detail
}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
