// Counter-based random numbers for in-engine randomness.
//
// Every random number an engine draws is a pure function of (key, counter):
// no generator state is carried from one draw to the next, so a run's noise
// and sample choices do not depend on the order in which neurons are visited,
// on the thread count, or on how a run is cut into segments.
//
// The bijection is Philox4x64-10 (Salmon, Moraes, Dror, Shaw, "Parallel random
// numbers: as easy as 1, 2, 3", SC'11): a 10-round Feistel-like network of
// 64x64->128-bit multiplications on a 256-bit counter under a 128-bit key. It
// is the same function as numpy's ``np.random.Philox`` bit generator (which
// returns philox(counter + 1) because it increments before drawing), which
// lets the Python tests check this implementation bit for bit.
//
// Counter layout used by relucore (one 4 x 64-bit block per call):
//     c0 = step (the global iteration number t),
//     c1 = neuron index i (0 for draws shared by all neurons),
//     c2 = stream (what the numbers are for: RngStream below),
//     c3 = block index within (step, neuron, stream).
// Each block gives four 64-bit words; uniforms use the top 53 bits
// (u = (w >> 11) * 2^-53 in [0, 1)), and normals come in pairs from the
// Box-Muller transform of two words w1, w2:
//     z0 = r cos(2 pi u2), z1 = r sin(2 pi u2), r = sqrt(-2 log u1),
//     u1 = 1 - (w1 >> 11) 2^-53 in (0, 1], u2 = (w2 >> 11) 2^-53,
// so one block yields four normals. log and sincos are evaluated by the
// polynomials below (no libm calls, no tables) so that the transform is
// branch-free, vectorises, and gives bitwise the same numbers in every code
// path (scalar, SSE2, AVX2); their relative error is a few ulp.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/simd.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

enum class RngStream : std::uint64_t {
    noise = 0,   // the key of the Langevin noise (meanfield/noise.hpp): word 0 of block (0, 0, noise, 0)
    sample = 1,  // mini-batch / single-sample indices at step t (neuron 0)
    init = 2,    // initial parameters of neuron i (step 0)
};

namespace detail {

inline void mulhilo64(std::uint64_t a, std::uint64_t b, std::uint64_t& hi, std::uint64_t& lo) {
#if defined(__SIZEOF_INT128__)
    __extension__ typedef unsigned __int128 u128;  // GCC/Clang extension (silences -Wpedantic)
    const u128 p = static_cast<u128>(a) * b;
    hi = static_cast<std::uint64_t>(p >> 64);
    lo = static_cast<std::uint64_t>(p);
#else
    // Portable schoolbook product on 32-bit halves.
    const std::uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
    const std::uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    const std::uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    lo = (mid << 32) | (p00 & 0xffffffffu);
    hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
#endif
}

// Polynomial coefficients, highest degree first, shared by the scalar and the
// AVX2 code: log m = 2t + 2t q P(q) with q = t^2 (P: 1/23, 1/21, ..., 1/3),
// sin x = x + x x^2 S(x^2) (1/17!, -1/15!, ..., -1/3!) and
// cos x = 1 + x^2 C(x^2) (-1/18!, 1/16!, ..., -1/2!).
inline constexpr double log_coefficients[] = {1.0 / 23, 1.0 / 21, 1.0 / 19, 1.0 / 17, 1.0 / 15, 1.0 / 13,
                                              1.0 / 11, 1.0 / 9,  1.0 / 7,  1.0 / 5,  1.0 / 3};
inline constexpr double sin_coefficients[] = {
    1.0 / 355687428096000.0, -1.0 / 1307674368000.0, 1.0 / 6227020800.0, -1.0 / 39916800.0,
    1.0 / 362880.0,          -1.0 / 5040.0,          1.0 / 120.0,        -1.0 / 6.0};
inline constexpr double cos_coefficients[] = {-1.0 / 6402373705728000.0,
                                              1.0 / 20922789888000.0,
                                              -1.0 / 87178291200.0,
                                              1.0 / 479001600.0,
                                              -1.0 / 3628800.0,
                                              1.0 / 40320.0,
                                              -1.0 / 720.0,
                                              1.0 / 24.0,
                                              -0.5};

// Horner's rule p = (c0 x + c1) x + ... + c_{N-1}: one multiply and one add
// per coefficient, in this order (no FMA), as in the AVX2 code.
template <std::size_t N>
inline double horner(double x, const double (&c)[N]) {
    double p = c[0];
    for (std::size_t i = 1; i < N; ++i) p = p * x + c[i];
    return p;
}

// log(u) for u in [2^-53, 1]: u = 2^e m with m in [sqrt(1/2), sqrt(2)),
// log m = 2 atanh(t), t = (m - 1)/(m + 1), |t| <= 0.1716, by its Taylor
// series to t^23 (truncation < 1e-18), and e log 2 in two parts.
inline double bm_log(double u) {
    std::uint64_t bits;
    std::memcpy(&bits, &u, 8);
    // the biased exponent as a double, exactly (magic-number conversion)
    std::uint64_t ebits = (bits >> 52) | 0x4330000000000000ULL;
    double e;
    std::memcpy(&e, &ebits, 8);
    e = (e - 4503599627370496.0) - 1023.0;
    std::uint64_t mbits = (bits & 0x000FFFFFFFFFFFFFULL) | 0x3FF0000000000000ULL;
    double m;
    std::memcpy(&m, &mbits, 8);
    const double big = m > 1.4142135623730951 ? 1.0 : 0.0;
    m = m * (1.0 - 0.5 * big);
    e = e + big;
    const double t = (m - 1.0) / (m + 1.0);
    const double q = t * t;
    const double p = horner(q, log_coefficients);
    const double logm = 2.0 * t + 2.0 * t * (q * p);
    constexpr double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    return e * ln2_hi + (e * ln2_lo + logm);
}

// sin and cos of 2 pi v for v in [0, 1): v = q/4 + f with q = round(4v)
// (exact), |f| <= 1/8, x = 2 pi f in [-pi/4, pi/4], Taylor polynomials to
// x^17 / x^18 (truncation < 1e-19), then the quarter-turn rotation by q.
// Written with selects of constants only, so that loops over it vectorise.
inline void bm_sincos_2pi(double v, double& sin_out, double& cos_out) {
    constexpr double magic = 6755399441055744.0;  // 1.5 * 2^52: adding it rounds to an integer
    const double q = (4.0 * v + magic) - magic;
    const double x = 6.283185307179586476925286766559 * (v - 0.25 * q);
    const double x2 = x * x;
    const double S = x + x * (x2 * horner(x2, sin_coefficients));
    const double C = 1.0 + x2 * horner(x2, cos_coefficients);
    // sin(q pi/2 + x) = ca S + cb C, cos(q pi/2 + x) = ca C - cb S, q mod 4
    const double ca = (q == 0.0 ? 1.0 : 0.0) + (q == 4.0 ? 1.0 : 0.0) - (q == 2.0 ? 1.0 : 0.0);
    const double cb = (q == 1.0 ? 1.0 : 0.0) - (q == 3.0 ? 1.0 : 0.0);
    sin_out = ca * S + cb * C;
    cos_out = ca * C - cb * S;
}

// (w >> 11) as a double, exactly, without an integer-to-double conversion
// instruction (SSE2 and AVX2 have none for 64-bit integers): the top 32 and
// next 21 bits through the magic-number trick.
inline double top53(std::uint64_t w) {
    const std::uint64_t hi = (w >> 32) | 0x4330000000000000ULL, lo = ((w >> 11) & 0x1FFFFFULL) | 0x4330000000000000ULL;
    double h, l;
    std::memcpy(&h, &hi, 8);
    std::memcpy(&l, &lo, 8);
    return (h - 4503599627370496.0) * 2097152.0 + (l - 4503599627370496.0);
}

#if defined(RELUCORE_SIMD_DISPATCH)
// horner() on four lanes.
template <std::size_t N>
__attribute__((target("avx2"))) inline __m256d horner_avx2(__m256d x, const double (&c)[N]) {
    __m256d p = _mm256_set1_pd(c[0]);
    for (std::size_t i = 1; i < N; ++i) p = _mm256_add_pd(_mm256_mul_pd(p, x), _mm256_set1_pd(c[i]));
    return p;
}

// box_muller_words for four pairs at a time: the scalar code's operations
// in the same order (no FMA), so the numbers are bitwise identical. Returns
// the number of pairs done (a multiple of 4).
__attribute__((target("avx2"))) inline long box_muller_words_avx2(const std::uint64_t* w1, const std::uint64_t* w2,
                                                                  double* z0, double* z1, long n) {
    const __m256i magic_bits = _mm256_set1_epi64x(0x4330000000000000LL);
    const __m256d magic52 = _mm256_set1_pd(4503599627370496.0), one = _mm256_set1_pd(1.0);
    const __m256i low21 = _mm256_set1_epi64x(0x1FFFFF), mant = _mm256_set1_epi64x(0x000FFFFFFFFFFFFFLL),
                  expo1 = _mm256_set1_epi64x(0x3FF0000000000000LL);
// Lambdas would not inherit the target attribute: local macros instead.
#define RELUCORE_TOP53(w)                                                                                        \
    _mm256_add_pd(                                                                                               \
        _mm256_mul_pd(                                                                                           \
            _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(_mm256_srli_epi64(w, 32), magic_bits)), magic52),  \
            _mm256_set1_pd(2097152.0)),                                                                          \
        _mm256_sub_pd(                                                                                           \
            _mm256_castsi256_pd(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi64(w, 11), low21), magic_bits)), \
            magic52))
#define RELUCORE_EQ(v) _mm256_and_pd(_mm256_cmp_pd(qq, _mm256_set1_pd(v), _CMP_EQ_OQ), one)
    long i = 0;
    for (; i + 4 <= n; i += 4) {
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w1 + i));
        const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w2 + i));
        const __m256d u1 = _mm256_sub_pd(one, _mm256_mul_pd(RELUCORE_TOP53(a), _mm256_set1_pd(0x1.0p-53)));
        const __m256d u2 = _mm256_mul_pd(RELUCORE_TOP53(b), _mm256_set1_pd(0x1.0p-53));
        // log u1 (bm_log)
        const __m256i bits = _mm256_castpd_si256(u1);
        __m256d e = _mm256_castsi256_pd(_mm256_or_si256(_mm256_srli_epi64(bits, 52), magic_bits));
        e = _mm256_sub_pd(_mm256_sub_pd(e, magic52), _mm256_set1_pd(1023.0));
        __m256d m = _mm256_castsi256_pd(_mm256_or_si256(_mm256_and_si256(bits, mant), expo1));
        const __m256d big = _mm256_and_pd(_mm256_cmp_pd(m, _mm256_set1_pd(1.4142135623730951), _CMP_GT_OQ), one);
        m = _mm256_mul_pd(m, _mm256_sub_pd(one, _mm256_mul_pd(_mm256_set1_pd(0.5), big)));
        e = _mm256_add_pd(e, big);
        const __m256d t = _mm256_div_pd(_mm256_sub_pd(m, one), _mm256_add_pd(m, one));
        const __m256d q = _mm256_mul_pd(t, t);
        const __m256d p = horner_avx2(q, log_coefficients);
        const __m256d two = _mm256_set1_pd(2.0);
        const __m256d logm =
            _mm256_add_pd(_mm256_mul_pd(two, t), _mm256_mul_pd(_mm256_mul_pd(two, t), _mm256_mul_pd(q, p)));
        const __m256d lg =
            _mm256_add_pd(_mm256_mul_pd(e, _mm256_set1_pd(6.93147180369123816490e-01)),
                          _mm256_add_pd(_mm256_mul_pd(e, _mm256_set1_pd(1.90821492927058770002e-10)), logm));
        const __m256d r = _mm256_sqrt_pd(_mm256_mul_pd(_mm256_set1_pd(-2.0), lg));
        // sincos(2 pi u2) (bm_sincos_2pi)
        const __m256d mg = _mm256_set1_pd(6755399441055744.0);
        const __m256d qq = _mm256_sub_pd(_mm256_add_pd(_mm256_mul_pd(_mm256_set1_pd(4.0), u2), mg), mg);
        const __m256d x = _mm256_mul_pd(_mm256_set1_pd(6.283185307179586476925286766559),
                                        _mm256_sub_pd(u2, _mm256_mul_pd(_mm256_set1_pd(0.25), qq)));
        const __m256d x2 = _mm256_mul_pd(x, x);
        const __m256d S = _mm256_add_pd(x, _mm256_mul_pd(x, _mm256_mul_pd(x2, horner_avx2(x2, sin_coefficients))));
        const __m256d C = _mm256_add_pd(one, _mm256_mul_pd(x2, horner_avx2(x2, cos_coefficients)));
        const __m256d ca = _mm256_sub_pd(_mm256_add_pd(RELUCORE_EQ(0.0), RELUCORE_EQ(4.0)), RELUCORE_EQ(2.0));
        const __m256d cb = _mm256_sub_pd(RELUCORE_EQ(1.0), RELUCORE_EQ(3.0));
        const __m256d sn = _mm256_add_pd(_mm256_mul_pd(ca, S), _mm256_mul_pd(cb, C));
        const __m256d cs = _mm256_sub_pd(_mm256_mul_pd(ca, C), _mm256_mul_pd(cb, S));
        _mm256_storeu_pd(z0 + i, _mm256_mul_pd(r, cs));
        _mm256_storeu_pd(z1 + i, _mm256_mul_pd(r, sn));
    }
#undef RELUCORE_TOP53
#undef RELUCORE_EQ
    return i;
}
#endif

// The scalar Box-Muller transform of pairs i0 .. n-1: z0[i] = r cos, z1[i] = r sin.
// The one scalar form: the vector paths (here and in random/counter.hpp) finish with it.
inline void box_muller_tail(const std::uint64_t* __restrict w1, const std::uint64_t* __restrict w2,
                            double* __restrict z0, double* __restrict z1, long i0, long n) {
    for (long i = i0; i < n; ++i) {
        const double u1 = 1.0 - top53(w1[i]) * 0x1.0p-53;
        const double u2 = top53(w2[i]) * 0x1.0p-53;
        const double r = std::sqrt(-2.0 * bm_log(u1));
        double sn, cs;
        bm_sincos_2pi(u2, sn, cs);
        z0[i] = r * cs;
        z1[i] = r * sn;
    }
}

// Box-Muller on words: z0[i] = r cos, z1[i] = r sin for i < n.
inline void box_muller_words(const std::uint64_t* __restrict w1, const std::uint64_t* __restrict w2,
                             double* __restrict z0, double* __restrict z1, long n) {
    long i = 0;
#if defined(RELUCORE_SIMD_DISPATCH)
    if (n >= 4 && simd::has_avx2()) i = box_muller_words_avx2(w1, w2, z0, z1, n);
#endif
    box_muller_tail(w1, w2, z0, z1, i, n);
}

}  // namespace detail

using Counter4 = std::array<std::uint64_t, 4>;
using Key2 = std::array<std::uint64_t, 2>;

namespace detail {
// The key schedule's increments (Weyl sequence) of Philox4x64.
constexpr std::uint64_t philox_w0 = 0x9E3779B97F4A7C15ULL, philox_w1 = 0xBB67AE8584CAA73BULL;

// One round of Philox4x64 under the round key (k0, k1).
inline Counter4 philox_round(const Counter4& c, std::uint64_t k0, std::uint64_t k1) {
    constexpr std::uint64_t M0 = 0xD2E7470EE14C6C93ULL, M1 = 0xCA5A826395121157ULL;
    std::uint64_t hi0, lo0, hi1, lo1;
    mulhilo64(M0, c[0], hi0, lo0);
    mulhilo64(M1, c[2], hi1, lo1);
    return Counter4{hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0};
}
}  // namespace detail

// Philox4x64 with 10 rounds.
inline Counter4 philox4x64_10(Counter4 c, Key2 k) {
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k[0] += detail::philox_w0;
            k[1] += detail::philox_w1;
        }
        c = detail::philox_round(c, k[0], k[1]);
    }
    return c;
}

// The round keys of Philox4x64-10 under a key, for callers that draw many
// blocks under one key (the same blocks as philox4x64_10(c, key), with fewer
// instructions per block).
struct PhiloxKeys {
    std::uint64_t k0[10], k1[10];
    explicit PhiloxKeys(Key2 k) {
        for (int round = 0; round < 10; ++round) {
            k0[round] = k[0];
            k1[round] = k[1];
            k[0] += detail::philox_w0;
            k[1] += detail::philox_w1;
        }
    }
};

inline Counter4 philox4x64_10(Counter4 c, const PhiloxKeys& rk) {
    for (int round = 0; round < 10; ++round) c = detail::philox_round(c, rk.k0[round], rk.k1[round]);
    return c;
}

// A key and the conversions relucore uses on top of the raw blocks.
class CounterRng {
public:
    CounterRng() = default;
    explicit CounterRng(Key2 key) : key_(key) {}
    CounterRng(std::uint64_t key0, std::uint64_t key1) : key_{key0, key1} {}

    const Key2& key() const { return key_; }

    Counter4 block(std::uint64_t step, std::uint64_t neuron, RngStream stream, std::uint64_t index) const {
        return philox4x64_10(Counter4{step, neuron, static_cast<std::uint64_t>(stream), index}, key_);
    }

    static double to_uniform(std::uint64_t w) { return static_cast<double>(w >> 11) * 0x1.0p-53; }

    // The k-th uniform in [0, 1) of (step, neuron, stream).
    double uniform(std::uint64_t step, std::uint64_t neuron, RngStream stream, std::uint64_t k) const {
        return to_uniform(block(step, neuron, stream, k / 4)[k % 4]);
    }

    // Writes count standard normals of (step, neuron, stream): block j gives
    // normals 4j .. 4j+3.
    void normals(std::uint64_t step, std::uint64_t neuron, RngStream stream, double* out, int count) const {
        for (int j = 0; 4 * j < count; ++j) {
            const Counter4 w = block(step, neuron, stream, static_cast<std::uint64_t>(j));
            double z[4];
            box_muller(w[0], w[1], z[0], z[1]);
            box_muller(w[2], w[3], z[2], z[3]);
            for (int q = 0; q < 4 && 4 * j + q < count; ++q) out[4 * j + q] = z[q];
        }
    }

    // An index uniform on {0, ..., n-1} from a uniform u in [0, 1): floor(u n)
    // (bias at most n 2^-53).
    static std::int64_t to_index(double u, std::int64_t n) {
        const auto i = static_cast<std::int64_t>(u * static_cast<double>(n));
        return i < n ? i : n - 1;
    }

private:
    static void box_muller(std::uint64_t w1, std::uint64_t w2, double& z0, double& z1) {
        detail::box_muller_words(&w1, &w2, &z0, &z1, 1);
    }

    Key2 key_{0, 0};
};

// ------------------------------------------------------------------------
// numpy-compatible seeding and a sequential Philox stream.
//
// seed_sequence_philox_key() is numpy's SeedSequence(entropy, spawn_key)
// .generate_state(2, uint64) (the key np.random.Philox(seed_sequence) uses):
// the entropy and spawn key are given as little-endian 32-bit words, as
// numpy's _coerce_to_uint32_array makes them (a non-negative int n is its
// base-2^32 digits, least significant first; 0 is one word 0). With it a
// trial's key costs ~100 integer operations instead of a Python SeedSequence.
namespace detail {
inline std::uint32_t ss_hashmix(std::uint32_t value, std::uint32_t& hash_const) {
    value ^= hash_const;
    hash_const *= 0x931e8875u;  // MULT_A
    value *= hash_const;
    value ^= value >> 16;
    return value;
}
inline std::uint32_t ss_mix(std::uint32_t x, std::uint32_t y) {
    std::uint32_t r = 0xca01f9ddu * x - 0x4973f715u * y;  // MIX_MULT_L, MIX_MULT_R
    r ^= r >> 16;
    return r;
}
}  // namespace detail

inline Key2 seed_sequence_philox_key(const std::uint32_t* entropy, int n_entropy, const std::uint32_t* spawn,
                                     int n_spawn) {
    constexpr int pool_size = 4;
    // Assembled entropy: the run entropy, zero-padded to the pool size when a
    // spawn key follows, then the spawn key.
    const int n_run = (n_spawn > 0 && n_entropy < pool_size) ? pool_size : n_entropy;
    const int total = n_run + n_spawn;
    auto word = [&](int i) -> std::uint32_t {
        if (i < n_run) return i < n_entropy ? entropy[i] : 0u;
        return spawn[i - n_run];
    };
    std::uint32_t pool[pool_size];
    std::uint32_t hc = 0x43b0d7e5u;  // INIT_A
    for (int i = 0; i < pool_size; ++i) pool[i] = detail::ss_hashmix(i < total ? word(i) : 0u, hc);
    for (int s = 0; s < pool_size; ++s)
        for (int d = 0; d < pool_size; ++d)
            if (s != d) pool[d] = detail::ss_mix(pool[d], detail::ss_hashmix(pool[s], hc));
    for (int s = pool_size; s < total; ++s)
        for (int d = 0; d < pool_size; ++d) pool[d] = detail::ss_mix(pool[d], detail::ss_hashmix(word(s), hc));
    // generate_state(4 words) viewed as 2 little-endian uint64.
    std::uint32_t st[4];
    std::uint32_t hb = 0x8b51f9ddu;  // INIT_B
    for (int i = 0; i < 4; ++i) {
        std::uint32_t v = pool[i % pool_size];
        v ^= hb;
        hb *= 0x58f38dedu;  // MULT_B
        v *= hb;
        v ^= v >> 16;
        st[i] = v;
    }
    return Key2{static_cast<std::uint64_t>(st[0]) | (static_cast<std::uint64_t>(st[1]) << 32),
                static_cast<std::uint64_t>(st[2]) | (static_cast<std::uint64_t>(st[3]) << 32)};
}

// The raw 64-bit words of np.random.Philox(key=key) (counter starting at 0:
// numpy increments the counter before each block), i.e. the sequence of
// Philox(...).random_raw(), and the variates relucore builds from them:
//  * uniform():  (w >> 11) 2^-53 in [0, 1), numpy's random() conversion;
//  * normal():   one Box-Muller pair from two words, the cosine branch
//                (detail::box_muller_words; the sine branch is dropped);
//  * normals(out, k): ceil(k/2) pairs, both branches: out[2p] = r cos,
//                out[2p+1] = r sin of pair p (the last sine dropped if k is odd).
class PhiloxStream {
public:
    explicit PhiloxStream(Key2 key) : key_(key) {}

    std::uint64_t next() {
        if (pos_ == 4) refill();
        return buf_[pos_++];
    }
    double uniform() { return detail::top53(next()) * 0x1.0p-53; }
    double normal() {
        std::uint64_t w1 = next(), w2 = next();
        double z0, z1;
        detail::box_muller_words(&w1, &w2, &z0, &z1, 1);
        return z0;
    }
    void normals(double* out, long count) {
        constexpr long chunk = 64;  // pairs per Box-Muller call (vectorised), on the stack
        std::uint64_t w1[chunk], w2[chunk];
        double z0[chunk], z1[chunk];
        const long pairs = (count + 1) / 2;
        for (long p0 = 0; p0 < pairs; p0 += chunk) {
            const long np = std::min(chunk, pairs - p0);
            for (long p = 0; p < np; ++p) {
                w1[p] = next();
                w2[p] = next();
            }
            detail::box_muller_words(w1, w2, z0, z1, np);
            for (long p = 0; p < np; ++p) {
                const long i = 2 * (p0 + p);
                out[i] = z0[p];
                if (i + 1 < count) out[i + 1] = z1[p];
            }
        }
    }

private:
    void refill() {
        if (++ctr_[0] == 0)
            if (++ctr_[1] == 0)
                if (++ctr_[2] == 0) ++ctr_[3];
        buf_ = philox4x64_10(ctr_, key_);
        pos_ = 0;
    }
    Key2 key_;
    Counter4 ctr_{0, 0, 0, 0};
    Counter4 buf_{0, 0, 0, 0};
    std::size_t pos_ = 4;
};

// Gamma(a, 1) for a >= 1 by Marsaglia and Tsang (2000): exact rejection
// sampling from normal() and uniform() draws of the source (a PhiloxStream,
// or any type with those two members; the logarithm is detail::bm_log, so no
// libm call enters the accepted value).
template <class Source>
inline double gamma_marsaglia_tsang(double a, Source& s) {
    const double d = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
        const double x = s.normal();
        double v = 1.0 + c * x;
        if (v <= 0.0) continue;
        v = v * v * v;
        const double u = s.uniform();
        const double x2 = x * x;
        if (u < 1.0 - 0.0331 * x2 * x2) return d * v;
        if (u == 0.0 || detail::bm_log(u) < 0.5 * x2 + d * (1.0 - v + detail::bm_log(v))) return d * v;
    }
}

// Chi-square with k >= 1 integer degrees of freedom: for k <= 16 the sum of
// k squared normals (normal() each), above that 2 Gamma(k/2).
template <class Source>
inline double chi_square(std::int64_t k, Source& s) {
    if (k <= 16) {
        double acc = 0.0;
        for (std::int64_t i = 0; i < k; ++i) {
            const double z = s.normal();
            acc += z * z;
        }
        return acc;
    }
    return 2.0 * gamma_marsaglia_tsang(0.5 * static_cast<double>(k), s);
}

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
