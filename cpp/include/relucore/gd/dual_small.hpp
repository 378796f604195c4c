// The fused dual step of DualGD for 6 <= n <= 16, the square loss and the ReLU:
// one example row of alpha, beta, h, g or K is a few vectors, so a step (apply,
// then evaluate) is a few dozen vector instructions per neuron where the plain
// loops spend most of their time on one or two doubles at a time.
//
// One portable kernel, advance<N, W>, written with GCC's and clang's vector
// extensions and instantiated for the registers a CPU has: 2 lanes (SSE2 on
// x86-64, NEON on aarch64: the baseline, no dispatch), 4 lanes (AVX2, chosen at
// run time). At AVX-512F, advance_avx512 (intrinsics, masked past n) runs
// instead: it is faster there than the portable kernel's 8 lanes.
//
// Bitwise the plain step of DualGD (advance_relu_square,
// evaluate_relu_square<N, true>): every entry takes the same rounded operations in the
// same order (no FMA contraction: RELUCORE_NO_FP_CONTRACT and RELUCORE_NO_FP_CONTRACT_BODY);
// only independent entries sit side by side. The two ordered sums, the loss
// sum_i g_i^2 and sq = sum_k sum_j d_beta_kj d_alpha_kj, are added one term at
// a time in increasing index as before (their products are formed in vectors).
// tests/gd/test_dual_kernels.py and cpp/tests/test_dual_small.cpp compare every
// SIMD level with a reference.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/types.hpp"
#include "relucore/simd.hpp"

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

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

// The vector kernels need GCC's or clang's vector extensions and a 128-bit baseline
// (SSE2 on x86-64, NEON on aarch64); the wider instantiations need the x86 dispatch.
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__SSE2__) || defined(__ARM_NEON))
#define RELUCORE_SMALL_VECTORS 1
#endif

#if defined(RELUCORE_SMALL_VECTORS)

/// W doubles in one register of the target the kernel is inlined into (W = 1: one double).
template <int W>
struct VecOf {
    typedef Scalar type __attribute__((vector_size(W * sizeof(Scalar))));
};
template <int W>
using Vec = typename VecOf<W>::type;
/// A mask of Bytes / 8 lanes (for halving one).
template <int Bytes>
struct MaskOf {
    typedef long long type __attribute__((vector_size(Bytes)));
};

// Vectors cross the helpers by reference: passed by value, a 32-byte vector would change the ABI
// of a helper compiled without AVX (GCC's -Wpsabi note), though every call is inlined.
template <class V>
__attribute__((always_inline)) inline V& load(V& v, const Scalar* p) {
    __builtin_memcpy(&v, p, sizeof v);
    return v;
}
template <class V>
__attribute__((always_inline)) inline void store(Scalar* p, const V& v) {
    __builtin_memcpy(p, &v, sizeof v);
}
/// x where b > 0, else +0 (NaN: +0), lane by lane: the plain loops' `b > 0 ? x : 0`.
template <class V>
__attribute__((always_inline)) inline void where_positive(V& out, const V& b, const V& x) {
    using M = decltype(b > b);
    out = reinterpret_cast<V>((b > V{}) & reinterpret_cast<M>(x));
}

/// Makes the compiler read back what the kernel stored instead of taking lanes out of registers:
/// the serial sums and the coefficients of the product then cost a load each (a load port), where
/// the lane shuffles would queue on the one port that also broadcasts.
__attribute__((always_inline)) inline void reload_barrier() {
    __asm__ __volatile__("" ::: "memory");
}

/// How [0, L) is cut into vectors of at most W lanes: W lanes while they fit, then 4, 2 and 1, so
/// that every load and store is of a whole vector and none reaches past L.
template <int L, int W>
struct Pieces {
    static constexpr int width_at(int rest) { return rest >= W ? W : (rest >= 4 ? 4 : (rest >= 2 ? 2 : 1)); }
    static constexpr int offset(std::size_t p) {
        int o = 0;
        for (; p > 0; --p) o += width_at(L - o);
        return o;
    }
    static constexpr int width(std::size_t p) { return width_at(L - offset(p)); }
    static constexpr int count() {
        int c = 0;
        for (int o = 0; o < L; o += width_at(L - o)) ++c;
        return c;
    }
    template <int... P>
    static auto regs(std::integer_sequence<int, P...>) -> std::tuple<Vec<width(P)>...>;
    /// One register per piece (value-initialised: zero).
    using Regs = decltype(regs(std::make_integer_sequence<int, count()>{}));
    template <int... P>
    static auto masks(std::integer_sequence<int, P...>) -> std::tuple<decltype(Vec<width(P)>{} > Vec<width(P)>{})...>;
    using Masks = decltype(masks(std::make_integer_sequence<int, count()>{}));

    /// f(std::integral_constant<std::size_t, p>) for every piece p, in increasing order.
    template <class F, int... P>
    __attribute__((always_inline)) static void each(F& f, std::integer_sequence<int, P...>) {
        (f(std::integral_constant<std::size_t, static_cast<std::size_t>(P)>{}), ...);
    }
    template <class F>
    __attribute__((always_inline)) static void each(F&& f) {
        each(f, std::make_integer_sequence<int, count()>{});
    }
};

/// Whether some lane of a mask is set: the halves OR-ed down to 128 bits in registers (lane reads
/// of a wide vector go through memory, where the loads of its upper half wait for the store).
template <class M>
__attribute__((always_inline)) inline bool any(const M& mask) {
    if constexpr (std::is_arithmetic_v<M>) {
        return mask != 0;
    } else if constexpr (sizeof(M) > 16) {
        using Half = typename MaskOf<sizeof(M) / 2>::type;
        const M copy = mask;  // (the caller's mask keeps to its register)
        Half half[2];
        __builtin_memcpy(half, &copy, sizeof copy);
        const Half either = half[0] | half[1];
        return any(either);
    } else {
        bool r = false;
        for (unsigned l = 0; l < sizeof(M) / sizeof(mask[0]); ++l) r = r || mask[l] != 0;
        return r;
    }
}

/// apply() then evaluate() of DualGD for the square loss and the ReLU at n = N <= 16, in vectors of
/// at most W doubles (inlined into a caller compiled for them: 2 lanes are SSE2 or NEON, 4 AVX2; 8
/// compile for AVX-512F): alpha_k += d_alpha_k, beta_k += d_beta_k, h = sum_k a_k relu(beta_k), g = h - y, the
/// loss, d_alpha_k = -eta a_k g on the active examples, d_beta_k = K d_alpha_k (rows with
/// d_alpha_ki != 0, increasing i, from 0; all NP = (N + 1) / 2 * 2 entries of the padded row) and sq.
template <int N, int W>
__attribute__((always_inline)) inline StepOut advance(const View& v) {
    RELUCORE_NO_FP_CONTRACT_BODY
    static_assert(N > 0 && N <= 16 && (W == 2 || W == 4 || W == 8), "n <= 16, 2, 4 or 8 lanes");
    constexpr int NP = (N + 1) / 2 * 2;
    using P = Pieces<N, W>;
    using Q = Pieces<NP, W>;
    const Index m = v.m;
    typename P::Regs h{}, g{};
    typename P::Masks flips{}, nonzero{};
    for (Index k = 0; k < m; ++k) {
        const Scalar a = v.outer[k];
        Scalar* ak = v.alpha + k * N;
        Scalar* bk = v.beta + k * N;
        const Scalar* dak = v.d_alpha + k * N;
        const Scalar* dbk = v.d_beta + k * NP;
        P::each([&](auto p) __attribute__((always_inline)) {
            constexpr std::size_t I = decltype(p)::value;
            constexpr int o = P::offset(I);
            using V = std::tuple_element_t<I, typename P::Regs>;
            V x, dx, old, db, relu;
            store(ak + o, load(x, ak + o) + load(dx, dak + o));
            const V b = load(old, bk + o) + load(db, dbk + o);
            store(bk + o, b);
            std::get<I>(flips) |= (b > V{}) ^ (old > V{});
            where_positive(relu, b, b);
            std::get<I>(h) += a * relu;
        });
    }
    bool changed = false;
    P::each([&](auto p) __attribute__((always_inline)) {
        constexpr std::size_t I = decltype(p)::value;
        constexpr int o = P::offset(I);
        using V = std::tuple_element_t<I, typename P::Regs>;
        V y;
        store(v.h + o, std::get<I>(h));
        std::get<I>(g) = std::get<I>(h) - load(y, v.y + o);
        store(v.g + o, std::get<I>(g));
        changed = changed || any(std::get<I>(flips));
    });
    reload_barrier();
    Scalar loss = 0;
    for (int i = 0; i < N; ++i) loss += v.g[i] * v.g[i];
    StepOut out;
    out.loss = loss / 2;
    out.changed = changed;
    Scalar sq = 0;
    for (Index k = 0; k < m; ++k) {
        const Scalar a = -v.eta * v.outer[k];
        const Scalar* bk = v.beta + k * N;
        Scalar* dak = v.d_alpha + k * N;
        Scalar* dbk = v.d_beta + k * NP;
        P::each([&](auto p) __attribute__((always_inline)) {
            constexpr std::size_t I = decltype(p)::value;
            constexpr int o = P::offset(I);
            using V = std::tuple_element_t<I, typename P::Regs>;
            V b, da;
            where_positive(da, load(b, bk + o), a * std::get<I>(g));
            store(dak + o, da);
            std::get<I>(nonzero) |= da != V{};  // NaN included
        });
        reload_barrier();
        typename Q::Regs acc{};
        for (Index i = 0; i < N; ++i) {
            const Scalar c = dak[i];
            if (c == 0) continue;  // NaN is summed: `c == 0` is false for it
            const Scalar* Ki = v.K_pad + i * NP;
            Q::each([&](auto p) __attribute__((always_inline)) {
                constexpr std::size_t I = decltype(p)::value;
                std::tuple_element_t<I, typename Q::Regs> Kij;
                std::get<I>(acc) += c * load(Kij, Ki + Q::offset(I));
            });
        }
        Q::each([&](auto p) __attribute__((always_inline)) {
            constexpr std::size_t I = decltype(p)::value;
            store(dbk + Q::offset(I), std::get<I>(acc));
        });
        reload_barrier();
        for (int j = 0; j < N; ++j) sq += dbk[j] * dak[j];
    }
    bool moves = false;
    P::each([&](auto p) __attribute__((always_inline)) {
        constexpr std::size_t I = decltype(p)::value;
        moves = moves || any(std::get<I>(nonzero));
    });
    out.moves = moves;
    out.sq = sq;
    return out;
}
#endif

#if defined(RELUCORE_SIMD_DISPATCH)

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
    RELUCORE_NO_FP_CONTRACT_BODY
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
#endif

}  // namespace dual_small
}  // namespace detail
}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
