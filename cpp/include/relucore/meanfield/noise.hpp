// The random numbers of the mean-field engine (meanfield/weight_gd.hpp): the
// Langevin noise of a chunk of neurons at a step, from the vectorised
// Philox4x32-10 generator of random/counter.hpp, and the initial parameters,
// from the Philox4x64-10 generator of random/rng.hpp.
//
// Noise layout. Under the run's key (Key2), the noise has the 64-bit key
//     noise_key = word 0 of CounterRng(key).block(0, 0, RngStream::noise, 0),
// and coordinate q (0: a, 1..d: w, d+1: b) of neuron i at step t is
//     xi_{t,i,q} = normal i of CounterStream(noise_key, t P + q)
// (P parameters per neuron). A chunk's row q is thus one contiguous range of
// one stream, drawn and transformed whole by the widest path (the paths give
// bitwise the same numbers), and every xi is a pure function of (key, t, i, q):
// independent of the thread count, the chunking and the segmentation of a run.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/types.hpp"
#include "relucore/meanfield/fused.hpp"
#include "relucore/random/counter.hpp"
#include "relucore/random/rng.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {
namespace meanfield {

// The 64-bit key of the noise under the run's key (see the layout above).
inline std::uint64_t noise_key(const PhiloxKeys& keys) {
    return philox4x64_10(Counter4{0, 0, static_cast<std::uint64_t>(RngStream::noise), 0}, keys)[0];
}

// The noise of step t for the neurons i0 .. i0 + n - 1 (n <= kChunk) of a run
// with P parameters per neuron, as rows of kChunk (row 0: a, rows 1..d: w,
// row d+1: b), drawn by the given path (the rows' rejected normals redrawn together).
inline void chunk_noise(std::int64_t t, Index i0, Index n, Index P, const PhiloxKeys& keys, CounterPath path,
                        Scalar* xi) {
    const std::uint64_t s0 = static_cast<std::uint64_t>(t) * static_cast<std::uint64_t>(P);
    counter_normal_rows(noise_key(keys), s0, static_cast<std::int64_t>(P), static_cast<std::uint64_t>(i0),
                        static_cast<std::int64_t>(n), path, xi, static_cast<std::int64_t>(kChunk));
}

// The sample indices of step t's batch into out (B of M; the same on every thread): `fixed`
// when given, all of them in order for the full batch, else a partial Fisher-Yates draw on the
// identity permutation perm (M entries, restored afterwards; swaps holds B entries of scratch).
inline void draw_batch(Key2 key, std::int64_t t, Index M, Index B, const std::int64_t* fixed, std::int64_t* perm,
                       std::int64_t* swaps, std::int64_t* out) {
    if (fixed) {
        std::copy(fixed, fixed + B, out);
        return;
    }
    if (B == M) {
        for (Index j = 0; j < M; ++j) out[j] = j;
        return;
    }
    const CounterRng rng(key);
    for (Index k = 0; k < B; ++k) {
        const double u =
            rng.uniform(static_cast<std::uint64_t>(t), 0, RngStream::sample, static_cast<std::uint64_t>(k));
        const std::int64_t j = k + CounterRng::to_index(u, M - k);
        swaps[k] = j;
        std::swap(perm[k], perm[j]);
        out[k] = perm[k];
    }
    for (Index k = B - 1; k >= 0; --k) std::swap(perm[k], perm[swaps[k]]);
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

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
