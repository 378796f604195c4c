// Standard normal variates from 64-bit words by the ziggurat method
// (Marsaglia and Tsang, "The ziggurat method for generating random
// variables", J. Stat. Softw. 5(8), 2000: 256 layers of equal area
// V = 4.928673233974655e-3 with base tail at R = 3.6541528853610088), with the
// layer and the abscissa taken from disjoint bits (Doornik, "An improved
// ziggurat method to generate normal random samples", 2005).
//
// One word w gives one normal: layer i = bits 0..7, sign = bit 8,
// u = (w >> 11) 2^-53 in [0, 1); x = u x_i. If u < x_{i+1} / x_i the point
// lies inside the layer's rectangle under the density and the normal is
// +-x (about 98.8 % of words). Otherwise (zig_normal_slow) layer 0 draws from
// the tail x > R (Marsaglia 1964) and the other layers test the wedge; a
// rejected point is redrawn from further words supplied by the caller.
//
// Every operation of the accepted path is exact or one rounded product, so the
// scalar, AVX2 and AVX-512F code give bitwise the same numbers; the rejected
// path is scalar code shared by all. The tables are built on first use from
// the model's own log (detail::bm_log of rng.hpp), exp (zig_exp below) and
// IEEE square roots: no libm call, the same bits on every platform.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/random/rng.hpp"
#include "relucore/simd.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {
namespace detail {

// R, and the area of every layer V = R f(R) + int_R^inf f (f(x) = exp(-x^2/2)) to double
// precision (the paper quotes V = 4.92867323399e-3; with that value the top layer closes
// 5e-12 short).
constexpr double zig_r = 3.6541528853610088, zig_v = 4.928673233974655e-3;

// 1/15!, 1/14!, ..., 1/2!, 1, 1: the Taylor coefficients of e^r, highest degree first.
inline constexpr double exp_coefficients[] = {1.0 / 1307674368000.0,
                                              1.0 / 87178291200.0,
                                              1.0 / 6227020800.0,
                                              1.0 / 479001600.0,
                                              1.0 / 39916800.0,
                                              1.0 / 3628800.0,
                                              1.0 / 362880.0,
                                              1.0 / 40320.0,
                                              1.0 / 5040.0,
                                              1.0 / 720.0,
                                              1.0 / 120.0,
                                              1.0 / 24.0,
                                              1.0 / 6.0,
                                              0.5,
                                              1.0,
                                              1.0};

// exp(y) for y <= 0: y = k ln 2 + r with |r| <= ln 2 / 2 (k by the
// magic-number rounding), e^r by its Taylor series to r^15 (truncation
// < 1e-19), times 2^k assembled from bits; 0 below -700.
inline double zig_exp(double y) {
    if (y < -700.0) return 0.0;
    constexpr double magic = 6755399441055744.0;
    const double k = (y * 1.4426950408889634 + magic) - magic;
    const double r = (y - k * 6.93147180369123816490e-01) - k * 1.90821492927058770002e-10;
    double e = exp_coefficients[0];  // Horner's rule on 1/15!, 1/14!, ..., 1/1!, 1
    for (std::size_t j = 1; j < sizeof(exp_coefficients) / sizeof(double); ++j) e = e * r + exp_coefficients[j];
    const std::uint64_t bits = static_cast<std::uint64_t>(static_cast<std::int64_t>(k) + 1023) << 52;
    double scale;
    std::memcpy(&scale, &bits, 8);
    return e * scale;
}

struct ZigguratTables {
    double x[257];  // layer edges: x[0] = V / f(R), x[1] = R, decreasing, x[256] = 0
    double r[256];  // x[i + 1] / x[i]: the accepted fraction of layer i
    double f[257];  // f(x[i]) = exp(-x[i]^2 / 2)
    __attribute__((noinline)) ZigguratTables() {
        const double fR = zig_exp(-0.5 * zig_r * zig_r);
        x[0] = zig_v / fR;
        x[1] = zig_r;
        for (int i = 2; i < 256; ++i) {
            const double arg = zig_v / x[i - 1] + zig_exp(-0.5 * x[i - 1] * x[i - 1]);
            x[i] = arg < 1.0 ? std::sqrt(-2.0 * bm_log(arg)) : 0.0;
        }
        x[256] = 0.0;
        for (int i = 0; i < 256; ++i) r[i] = x[i + 1] / x[i];
        for (int i = 0; i < 257; ++i) f[i] = zig_exp(-0.5 * x[i] * x[i]);
    }
};

// Not inlined: a static's initialiser inlined into a kernel compiled for AVX-512F
// (which includes FMA) would be compiled with contracted products, and the
// tables would then depend on which path drew the process's first normal.
__attribute__((noinline)) inline const ZigguratTables& zig_tables() {
    static const ZigguratTables tables;
    return tables;
}

// The accepted path of one word: true and z = the normal when u < r_i.
inline bool zig_fast(std::uint64_t w, const ZigguratTables& t, double& z) {
    const unsigned i = static_cast<unsigned>(w & 255u);
    const double u = top53(w) * 0x1.0p-53;
    const double x = u * t.x[i];
    z = (w >> 8) & 1u ? -x : x;
    return u < t.r[i];
}

// The normal of word w when zig_fast rejects it. more(k, tag, a, b) gives two
// fresh words: tag 0, k = 0, 1, ...: b is the wedge uniform of attempt k and
// a the word of attempt k + 1; tag 1, k = 0, 1, ...: the two uniforms of
// tail try k.
template <class More>
double zig_normal_slow(std::uint64_t w, More&& more) {
    const ZigguratTables& t = zig_tables();
    for (std::uint32_t k = 0;; ++k) {
        double z;
        if (zig_fast(w, t, z)) return z;
        const unsigned i = static_cast<unsigned>(w & 255u);
        const bool negative = (w >> 8) & 1u;
        if (i == 0) {  // the tail beyond R: x = -log(u1) / R until 2 (-log u2) > x^2
            for (std::uint32_t m = 0;; ++m) {
                std::uint64_t a, b;
                more(m, 1u, a, b);
                const double xt = -bm_log(1.0 - top53(a) * 0x1.0p-53) / zig_r;
                const double yt = -bm_log(1.0 - top53(b) * 0x1.0p-53);
                if (yt + yt > xt * xt) return negative ? -(zig_r + xt) : zig_r + xt;
            }
        }
        std::uint64_t a, b;
        more(k, 0u, a, b);
        // the wedge: a point uniform in [0, x_i] x [f(x_i), f(x_{i+1})] under f
        const double x = negative ? -z : z;
        if (t.f[i] + top53(b) * 0x1.0p-53 * (t.f[i + 1] - t.f[i]) < zig_exp(-0.5 * x * x)) return z;
        w = a;
    }
}

// The accepted path on n words, scalar: z[k] for every k; rejected indices k
// are appended to rej (n entries at most). Returns the count of rejected.
inline std::int64_t zig_fast_scalar(const std::uint64_t* w, double* z, std::int64_t k0, std::int64_t n,
                                    std::int64_t* rej, std::int64_t nrej) {
    const ZigguratTables& t = zig_tables();
    for (std::int64_t k = k0; k < n; ++k)
        if (!zig_fast(w[k], t, z[k])) rej[nrej++] = k;
    return nrej;
}

#if defined(RELUCORE_SIMD_DISPATCH)
// zig_fast on words k0, k0 + 4, ... four at a time (the table entries by
// gathers) while four remain; rejected indices appended as above. Returns
// the index after the last word done.
__attribute__((target("avx2"))) inline std::int64_t zig_fast_avx2(const std::uint64_t* w, double* z, std::int64_t k0,
                                                                  std::int64_t n, std::int64_t* rej,
                                                                  std::int64_t& nrej) {
    const ZigguratTables& t = zig_tables();
    const __m256i magic_bits = _mm256_set1_epi64x(0x4330000000000000LL), low8 = _mm256_set1_epi64x(255),
                  low21 = _mm256_set1_epi64x(0x1FFFFF), sign = _mm256_set1_epi64x(static_cast<long long>(1ULL << 63));
    const __m256d magic52 = _mm256_set1_pd(4503599627370496.0);
    std::int64_t k = k0;
    for (; k + 4 <= n; k += 4) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + k));
        const __m256i idx = _mm256_and_si256(v, low8);
        const __m256d hi =
            _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(_mm256_srli_epi64(v, 32), magic_bits)), magic52);
        const __m256d lo = _mm256_sub_pd(
            _mm256_castsi256_pd(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi64(v, 11), low21), magic_bits)),
            magic52);
        const __m256d u =
            _mm256_mul_pd(_mm256_add_pd(_mm256_mul_pd(hi, _mm256_set1_pd(2097152.0)), lo), _mm256_set1_pd(0x1.0p-53));
        const __m256d x = _mm256_mul_pd(u, _mm256_i64gather_pd(t.x, idx, 8));
        const __m256d s = _mm256_castsi256_pd(_mm256_and_si256(_mm256_slli_epi64(v, 55), sign));
        _mm256_storeu_pd(z + k, _mm256_xor_pd(x, s));
        const int bad = _mm256_movemask_pd(_mm256_cmp_pd(u, _mm256_i64gather_pd(t.r, idx, 8), _CMP_NLT_UQ));
        if (bad)
            for (int q = 0; q < 4; ++q)
                if (bad & (1 << q)) rej[nrej++] = k + q;
    }
    return k;
}
#endif

}  // namespace detail
}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
