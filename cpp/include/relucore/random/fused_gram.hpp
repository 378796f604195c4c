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

#include "relucore/core/types.hpp"
#include "relucore/linalg/gram.hpp"  // gram_matrix, blas::syrk_lower_add
#include "relucore/random/counter.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace relucore {

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

// Columns per block for n rows: about 256 KiB of X, a multiple of 8.
inline Index fused_block_columns(Index n) {
    return std::max<Index>(64, Index(32768) / std::max<Index>(n, 1) / 8 * 8);
}

// K (n x n, row-major) = X X^T with x_it = scale[t] z_it (scale == nullptr:
// all 1), z_it = variate i d + t of s under z. The blocks live in a buffer of
// n * fused_block_columns(n) doubles and K is accumulated from it; if X is not
// null each block is also copied into X (n x d, row-major), so K is bitwise the
// same whether X is kept or not. block_columns (0: the default) changes only
// the rounding of K, never X.
inline void fused_draw_gram(const CounterStream& s, ZLaw z, Index n, Index d, const double* scale, double* K,
                            double* X = nullptr, Index block_columns = 0) {
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

}  // namespace relucore
