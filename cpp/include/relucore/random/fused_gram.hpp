// Draw-and-accumulate: K = X X^T for an explicit X with entries
// x_it = s_t z_it, drawn from a CounterStream (random/counter.hpp) in column
// blocks that stay in cache, so X never has to exist whole.
//
// Entry (i, t) of the n x d matrix Z is variate i d + t of the stream under
// the chosen law (normal, Rademacher, or uniform on [-sqrt 3, sqrt 3]; all
// mean 0, variance 1), so Z is the same whatever the block width, and the
// kept X (when asked for) is exactly what counter_normals & co. give for the
// range [0, n d) times the column scales. s_t = sqrt(lambda_t) sets the
// spectrum (Lai et al. 2026, Sec. 2: x = Lambda^{1/2} z with V = identity).
//
// K is accumulated block by block by the symmetric rank update of
// linalg/blas.hpp (the kernel gram_matrix uses), lower triangle then
// mirrored: exactly symmetric. Its rounding is that of a
// column-blocked sum, so K agrees with gram_matrix(X) to rounding, not bitwise.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/types.hpp"
#include "relucore/linalg/gram.hpp"  // gram_matrix, blas::syrk_lower_add
#include "relucore/random/counter.hpp"

#include <algorithm>
#include <bitset>
#include <cmath>
#include <cstdint>
#include <vector>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

// The law of the entries of z.
enum class ZLaw : int { gaussian = 0, rademacher = 1, uniform = 2 };

// out[k] = variate start + k of the stream under the law z, k < count.
inline void draw_variates(const CounterStream& s, ZLaw z, std::uint64_t start, std::int64_t count, double* out) {
    switch (z) {
        case ZLaw::gaussian:
            s.normals(start, count, out);
            break;
        case ZLaw::rademacher:
            s.rademacher(start, count, out);
            break;
        case ZLaw::uniform:
            s.symmetric_uniforms(start, count, std::sqrt(3.0), out);
            break;
    }
}

namespace detail {

// The sign bits of Rademacher variates [start, start + count) of s, packed: bit k of out[w] is 1 when
// variate start + 64 w + k is -1; the unused high bits of the last word are 0. (Variate i is bit
// i mod 64 of the stream's 64-bit word i / 64, the words running a_0, b_0, a_1, b_1, ...: counter.hpp.)
inline void rademacher_bits(const CounterStream& s, std::uint64_t start, std::int64_t count, std::uint64_t* out) {
    const std::uint64_t q0 = start >> 6, q1 = (start + static_cast<std::uint64_t>(count) - 1) >> 6;
    const std::uint64_t j0 = q0 >> 1, blocks = (q1 >> 1) - j0 + 1;
    std::vector<std::uint64_t> g(static_cast<std::size_t>(2 * blocks + 1), 0);
    std::uint64_t a[256], b[256];
    for (std::uint64_t k = 0; k < blocks; k += 256) {
        const std::int64_t nb = static_cast<std::int64_t>(std::min<std::uint64_t>(256, blocks - k));
        s.words(j0 + k, nb, a, b);
        for (std::int64_t j = 0; j < nb; ++j) {
            g[static_cast<std::size_t>(2 * (k + static_cast<std::uint64_t>(j)))] = a[j];
            g[static_cast<std::size_t>(2 * (k + static_cast<std::uint64_t>(j)) + 1)] = b[j];
        }
    }
    const std::size_t off = static_cast<std::size_t>(q0 - 2 * j0);
    const unsigned r = static_cast<unsigned>(start & 63);
    const std::int64_t words = (count + 63) / 64;
    for (std::int64_t w = 0; w < words; ++w) {
        const std::uint64_t lo = g[off + static_cast<std::size_t>(w)], hi = g[off + static_cast<std::size_t>(w) + 1];
        out[w] = r == 0 ? lo : (lo >> r) | (hi << (64 - r));
    }
    if (count % 64 != 0) out[words - 1] &= (std::uint64_t(1) << (count % 64)) - 1;
}

inline std::int64_t xor_popcount_generic(const std::uint64_t* x, const std::uint64_t* y, std::int64_t words) {
    std::int64_t c = 0;
    for (std::int64_t w = 0; w < words; ++w) c += static_cast<std::int64_t>(std::bitset<64>(x[w] ^ y[w]).count());
    return c;
}

#if defined(RELUCORE_SIMD_DISPATCH)
__attribute__((target("popcnt"))) inline std::int64_t xor_popcount_hw(const std::uint64_t* x, const std::uint64_t* y,
                                                                      std::int64_t words) {
    std::int64_t c = 0;
    for (std::int64_t w = 0; w < words; ++w) c += static_cast<std::int64_t>(__builtin_popcountll(x[w] ^ y[w]));
    return c;
}
#endif

// The number of bits in which x and y differ (the popcnt instruction when the CPU has it).
inline std::int64_t xor_popcount(const std::uint64_t* x, const std::uint64_t* y, std::int64_t words) {
#if defined(RELUCORE_SIMD_DISPATCH)
    static const bool hw = __builtin_cpu_supports("popcnt");
    if (hw) return xor_popcount_hw(x, y, words);
#endif
    return xor_popcount_generic(x, y, words);
}

}  // namespace detail

// K = Z Z^T for Rademacher z with unit scales, from the sign bits: K_ij = d - 2 (bits where rows i
// and j differ). The entries are integers, and so is every partial sum of the float rank update,
// which is therefore exact: the same K, bit for bit, as the blocked sum of fused_draw_gram, at a
// small fraction of its cost. X (if not null) receives Z.
inline void rademacher_gram(const CounterStream& s, Index n, Index d, double* K, double* X = nullptr) {
    const std::int64_t words = (static_cast<std::int64_t>(d) + 63) / 64;
    std::vector<std::uint64_t> bits(static_cast<std::size_t>(n * words));
    for (Index i = 0; i < n; ++i) {
        const std::uint64_t start = static_cast<std::uint64_t>(i) * static_cast<std::uint64_t>(d);
        detail::rademacher_bits(s, start, d, bits.data() + i * words);
        if (X != nullptr) s.rademacher(start, d, X + i * d);
    }
    for (Index i = 0; i < n; ++i)
        for (Index j = 0; j <= i; ++j) {
            const std::int64_t diff = detail::xor_popcount(bits.data() + i * words, bits.data() + j * words, words);
            K[i * n + j] = K[j * n + i] = static_cast<double>(d) - 2.0 * static_cast<double>(diff);
        }
}

// Columns per block for n rows: about 256 KiB of X, a multiple of 8.
inline Index fused_block_columns(Index n) {
    return std::max<Index>(64, Index(32768) / std::max<Index>(n, 1) / 8 * 8);
}

// K (n x n, row-major) = X X^T with x_it = scale[t] z_it (scale == nullptr:
// all 1), z_it = variate i d + t of s under z. The blocks live in a buffer of
// n * fused_block_columns(n) doubles and K is accumulated from it; if X is not
// null each block is also copied into X (n x d, row-major), so K is bitwise the
// same whether X is kept or not. block_columns (0: the default) changes only
// the rounding of K, never X. Rademacher z with unit scales (scale == nullptr)
// takes rademacher_gram: the same K exactly, from the sign bits.
inline void fused_draw_gram(const CounterStream& s, ZLaw z, Index n, Index d, const double* scale, double* K,
                            double* X = nullptr, Index block_columns = 0) {
    if (z == ZLaw::rademacher && scale == nullptr) {
        rademacher_gram(s, n, d, K, X);
        return;
    }
    const Index bw = block_columns > 0 ? block_columns : fused_block_columns(n);
    const Index width = std::min(bw, d);
    std::vector<double> buffer(static_cast<std::size_t>(n * width));
    std::fill(K, K + n * n, 0.0);
    for (Index c0 = 0; c0 < d; c0 += bw) {
        const Index w = std::min(bw, d - c0);
        double* B = buffer.data();
        for (Index i = 0; i < n; ++i) {
            double* row = B + i * w;
            draw_variates(
                s, z, static_cast<std::uint64_t>(i) * static_cast<std::uint64_t>(d) + static_cast<std::uint64_t>(c0), w,
                row);
            if (scale != nullptr)
                for (Index t = 0; t < w; ++t) row[t] *= scale[c0 + t];
            if (X != nullptr) std::copy(row, row + w, X + i * d + c0);
        }
        blas::syrk_lower_add(B, w, n, 0, w, K, n);
    }
    for (Index i = 0; i < n; ++i)
        for (Index j = i + 1; j < n; ++j) K[i * n + j] = K[j * n + i];
}

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
