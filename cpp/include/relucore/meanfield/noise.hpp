// The random numbers of the mean-field engine (meanfield/weight_gd.hpp), from
// the counter-based generator of random/rng.hpp: the Langevin noise of a
// chunk of neurons at a step, and the initial parameters.
#pragma once

#include "relucore/core/types.hpp"
#include "relucore/meanfield/fused.hpp"
#include "relucore/random/rng.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace relucore {
namespace meanfield {

// The noise of step t for the neurons i0 .. i0 + n - 1 (n <= kChunk) of a
// run with P parameters per neuron, as rows of kChunk (row 0: a, rows 1..d:
// w, row d+1: b): the same numbers as CounterRng::normals(t, i, noise, ., P)
// for each neuron i, with the Philox words gathered first (into words,
// 2 ceil(P / 2) rows of kChunk) and the Box-Muller transform run over the
// whole chunk (vectorised).
inline void chunk_noise(std::int64_t t, Index i0, Index n, Index P, const PhiloxKeys& keys, Scalar* xi,
                        std::uint64_t* words) {
    const Index npairs = (P + 1) / 2, nblocks = (P + 3) / 4;
    for (Index i = 0; i < n; ++i)
        for (Index j = 0; j < nblocks; ++j) {
            // = CounterRng(key).block(t, i0 + i, noise, j)
            const Counter4 w =
                philox4x64_10(Counter4{static_cast<std::uint64_t>(t), static_cast<std::uint64_t>(i0 + i),
                                       static_cast<std::uint64_t>(RngStream::noise), static_cast<std::uint64_t>(j)},
                              keys);
            for (Index p = 2 * j; p < std::min(npairs, 2 * j + 2); ++p) {
                words[(2 * p) * kChunk + i] = w[static_cast<size_t>(2 * (p - 2 * j))];
                words[(2 * p + 1) * kChunk + i] = w[static_cast<size_t>(2 * (p - 2 * j) + 1)];
            }
        }
    for (Index p = 0; p < npairs; ++p)
        detail::box_muller_words(words + 2 * p * kChunk, words + (2 * p + 1) * kChunk, xi + 2 * p * kChunk,
                                 xi + (2 * p + 1) * kChunk, static_cast<long>(n));
}

}  // namespace meanfield

// Initial parameters theta_i ~ N(0, scale^2 I_P) from the init stream of the
// generator (neuron i uses counter (0, i, init, .)); with fixed_outer the
// outer weights are instead random signs a_i = +-1 (from the same stream's
// normals: the sign of the first one).
inline void weight_gd_init(MatrixRef theta, Scalar scale, Key2 key, bool fixed_outer) {
    const CounterRng rng(key);
    const Index P = theta.cols();
    std::vector<double> z(static_cast<size_t>(P));
    for (Index i = 0; i < theta.rows(); ++i) {
        rng.normals(0, static_cast<std::uint64_t>(i), RngStream::init, z.data(), static_cast<int>(P));
        for (Index q = 0; q < P; ++q) theta(i, q) = scale * z[static_cast<size_t>(q)];
        if (fixed_outer) theta(i, 0) = z[0] >= 0 ? 1.0 : -1.0;
    }
}

}  // namespace relucore
