// Gram matrices K = X X^T of Gaussian data drawn without X (docs/math.md §8),
// from the counter-based generator of random/counter.hpp, one data set per key.
//
// For x = V Lambda^{1/2} z with Gaussian z, K = sum_g lambda_g W_g over the
// distinct eigenvalues lambda_g (multiplicity d_g), with independent
// W_g ~ Wishart(d_g, I_n). Each W_g with d_g >= n is drawn exactly by the
// Bartlett decomposition W_g = L L^T: L lower triangular with
// L_ij ~ N(0, 1) below the diagonal and L_ii^2 ~ chi^2(d_g - i) (i = 0..n-1),
// so a data set costs O(n^3) whatever d is (10^9 and more).
//
// Stream layout. Every number of the data set with 64-bit key k is a variate
// of a CounterStream(k, stream) (counter.hpp: Philox4x32-10, ziggurat
// normals), addressed by (stream, index), never by a position in a sequence:
//  * group g (in the given order), below the diagonal: L_ij (j < i) is
//    normal i (i - 1) / 2 + j of stream (g + 1) 2^32;
//  * group g, diagonal i: L_ii^2 = chi^2(d_g - i) from stream
//    (g + 1) 2^32 + 1 + i: for d_g - i <= 16 the sum of the squares of its
//    normals 0 .. d_g - i - 1, above that 2 Gamma((d_g - i) / 2) by Marsaglia and
//    Tsang (gamma_marsaglia_tsang of rng.hpp), whose attempt a takes normal a
//    and uniform 2^46 + a of that stream;
//  * labels, stream 1: uniform: |y_i| = lo + (hi - lo) u_i (u_i = uniform i)
//    and y_i < 0 when uniform n + i is below 1/2; positive: the magnitudes
//    only; normal: y_i = normal i.
// Stream 0 is the z of relucore.sample (fused_gram.hpp) and stream 2 the
// columns of the groups with d_g < n in relucore.sample_gram (sampling.py),
// which this file does not draw. So a data set is the same on any thread, in
// any batch, and the labels do not move when the spectrum changes.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/checks.hpp"
#include "relucore/core/types.hpp"
#include "relucore/random/counter.hpp"
#include "relucore/random/rng.hpp"

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

enum class LabelKind : int { uniform = 0, positive = 1, normal = 2 };

// The streams of a data set (the layout at the top of this file).
namespace gram_streams {
constexpr std::uint64_t labels = 1;
constexpr std::uint64_t small_groups = 2;  // relucore.sample_gram's columns of groups with d_g < n
inline std::uint64_t off_diagonal(std::uint64_t g) {
    return (g + 1) << 32;
}
inline std::uint64_t diagonal(std::uint64_t g, std::uint64_t i) {
    return ((g + 1) << 32) + 1 + i;
}
}  // namespace gram_streams

// normal() and uniform() of one counter stream, in index order (normal a at
// index a, uniform a at index 2^46 + a: disjoint words): the source of
// chi_square / gamma_marsaglia_tsang (rng.hpp) for one diagonal entry.
class CounterDraws {
public:
    explicit CounterDraws(const CounterStream& s) : s_(s) {}
    double normal() {
        double z;
        s_.normals(next_normal_++, 1, &z);
        return z;
    }
    double uniform() {
        double u;
        s_.uniforms(kUniformBase + next_uniform_++, 1, &u);
        return u;
    }
    static constexpr std::uint64_t kUniformBase = std::uint64_t(1) << 46;

private:
    const CounterStream& s_;
    std::uint64_t next_normal_ = 0, next_uniform_ = 0;
};

struct GramSampleSpec {
    Index n = 0;
    std::vector<double> values;        // eigenvalue of each group (> 0)
    std::vector<std::int64_t> counts;  // multiplicity of each group (>= n)
    LabelKind labels = LabelKind::uniform;
    double lo = 0.1, hi = 1.0;  // label magnitudes for uniform / positive

    void validate() const {
        if (n < 1) throw std::invalid_argument("n must be >= 1");
        if (values.size() != counts.size()) throw std::invalid_argument("values and counts differ in length");
        for (size_t g = 0; g < values.size(); ++g) {
            if (!(values[g] > 0) || !std::isfinite(values[g]))
                throw std::invalid_argument("eigenvalues must be positive");
            if (counts[g] < n) throw std::invalid_argument("the Bartlett construction needs every multiplicity >= n");
        }
        if (!(lo >= 0 && lo <= hi && std::isfinite(hi))) throw std::invalid_argument("labels need 0 <= lo <= hi < inf");
    }
};

// Scratch space of one sampler (reused across data sets: no allocation per draw).
struct GramSampleWork {
    RowMatrix L, U;
    std::vector<double> normals, row;
    void resize(Index n) {
        L.setZero(n, n);
        U.setZero(n, n);
        row.resize(static_cast<size_t>(2 * n));
        normals.resize(static_cast<size_t>(n * (n - 1) / 2 + 1));
    }
};

// chi^2(k) of diagonal i of group g (the layout above).
inline double gram_diagonal_chi_square(std::uint64_t key, std::uint64_t g, std::uint64_t i, std::int64_t k,
                                       CounterPath path) {
    const CounterStream s(key, gram_streams::diagonal(g, i), path);
    if (k <= 16) {
        double z[16];
        s.normals(0, k, z);
        double acc = 0.0;
        for (std::int64_t q = 0; q < k; ++q) acc += z[q] * z[q];
        return acc;
    }
    CounterDraws draws(s);
    return chi_square(k, draws);
}

// Draws K (n x n row-major, exactly symmetric; the first n^2 entries of its
// buffer) and y (n) of the data set with this key. The path changes only the
// speed, never a bit of the result. Checks spec (validate()) and the buffers'
// sizes first: std::invalid_argument otherwise.
inline void sample_gram_bartlett(const GramSampleSpec& spec, std::uint64_t key, Span<double> K_out, Span<double> y_out,
                                 GramSampleWork& work, CounterPath path = counter_path()) {
    spec.validate();
    const Index n = spec.n;
    detail::require_room("K", K_out.size, n * n);
    detail::require_room("y", y_out.size, n);
    double* K = K_out.data;
    double* y = y_out.data;
    if (work.L.rows() != n) work.resize(n);
    for (Index i = 0; i < n * n; ++i) K[i] = 0.0;
    double* L = work.L.data();
    for (size_t g = 0; g < spec.values.size(); ++g) {
        const long T = static_cast<long>(n * (n - 1) / 2);
        if (T > 0) CounterStream(key, gram_streams::off_diagonal(g), path).normals(0, T, work.normals.data());
        long k = 0;
        for (Index i = 1; i < n; ++i)
            for (Index j = 0; j < i; ++j) L[i * n + j] = work.normals[static_cast<size_t>(k++)];
        for (Index i = 0; i < n; ++i)
            L[i * n + i] =
                std::sqrt(gram_diagonal_chi_square(key, g, static_cast<std::uint64_t>(i), spec.counts[g] - i, path));
        // K += lambda_g L L^T on the lower triangle, K_ij = sum_{q <= j} L_iq L_jq (j <= i),
        // as row updates K_i,q..i += L_iq U_q,q..i with U = L^T (contiguous, vectorisable).
        double* U = work.U.data();
        for (Index q = 0; q < n; ++q)
            for (Index j = q; j < n; ++j) U[q * n + j] = L[j * n + q];
        const double v = spec.values[g];
        for (Index i = 0; i < n; ++i) {
            double* Ki = K + i * n;
            double* acc = work.row.data();
            for (Index j = 0; j <= i; ++j) acc[j] = 0.0;
            for (Index q = 0; q <= i; ++q) {
                const double c = L[i * n + q];
                const double* Uq = U + q * n;
                for (Index j = q; j <= i; ++j) acc[j] += c * Uq[j];
            }
            for (Index j = 0; j <= i; ++j) Ki[j] += v * acc[j];
        }
    }
    for (Index i = 0; i < n; ++i)
        for (Index j = 0; j < i; ++j) K[j * n + i] = K[i * n + j];
    const CounterStream ls(key, gram_streams::labels, path);
    switch (spec.labels) {
        case LabelKind::uniform:
        case LabelKind::positive: {
            double* u = work.row.data();  // 2n uniforms: magnitudes, then signs
            ls.uniforms(0, spec.labels == LabelKind::uniform ? 2 * n : n, u);
            for (Index i = 0; i < n; ++i) y[i] = spec.lo + (spec.hi - spec.lo) * u[i];
            if (spec.labels == LabelKind::uniform)
                for (Index i = 0; i < n; ++i)
                    if (u[n + i] < 0.5) y[i] = -y[i];
            break;
        }
        case LabelKind::normal:
            ls.normals(0, n, y);
            break;
    }
}

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
