// Gram matrices K = X X^T of Gaussian data drawn without X (docs/math.md §8),
// from a counter-based stream, one data set per stream.
//
// For x = V Lambda^{1/2} z with Gaussian z, K = sum_g lambda_g W_g over the
// distinct eigenvalues lambda_g (multiplicity d_g), with independent
// W_g ~ Wishart(d_g, I_n). Each W_g with d_g >= n is drawn exactly by the
// Bartlett decomposition W_g = L L^T: L lower triangular with
// L_ij ~ N(0, 1) below the diagonal and L_ii^2 ~ chi^2(d_g - i) (i = 0..n-1),
// so a data set costs O(n^3) whatever d is (10^9 and more).
//
// Draw order from the stream (PhiloxStream: np.random.Philox raw words), per
// group in the given order: the n(n-1)/2 below-diagonal normals in row-major
// order (PhiloxStream::normals), then the n diagonal chi-squares
// (chi_square, i = 0..n-1); after all groups the labels:
//  * uniform:  n magnitudes lo + (hi - lo) u, then n signs (-1 when u < 1/2);
//  * positive: n magnitudes only;
//  * normal:   n standard normals (PhiloxStream::normals).
#pragma once

#include "relucore/core/types.hpp"
#include "relucore/random/rng.hpp"

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace relucore {

enum class LabelKind : int { uniform = 0, positive = 1, normal = 2 };

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
        row.resize(static_cast<size_t>(n));
        normals.resize(static_cast<size_t>(n * (n - 1) / 2 + 1));
    }
};

// Draws K (n x n row-major, exactly symmetric) and y (n) from the stream.
inline void sample_gram_bartlett(const GramSampleSpec& spec, PhiloxStream& s, double* K, double* y,
                                 GramSampleWork& work) {
    const Index n = spec.n;
    if (work.L.rows() != n) work.resize(n);
    for (Index i = 0; i < n * n; ++i) K[i] = 0.0;
    double* L = work.L.data();
    for (size_t g = 0; g < spec.values.size(); ++g) {
        const long T = static_cast<long>(n * (n - 1) / 2);
        s.normals(work.normals.data(), T);
        long k = 0;
        for (Index i = 1; i < n; ++i)
            for (Index j = 0; j < i; ++j) L[i * n + j] = work.normals[static_cast<size_t>(k++)];
        for (Index i = 0; i < n; ++i) L[i * n + i] = std::sqrt(chi_square(spec.counts[g] - i, s));
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
    switch (spec.labels) {
        case LabelKind::uniform:
        case LabelKind::positive:
            for (Index i = 0; i < n; ++i) y[i] = spec.lo + (spec.hi - spec.lo) * s.uniform();
            if (spec.labels == LabelKind::uniform)
                for (Index i = 0; i < n; ++i)
                    if (s.uniform() < 0.5) y[i] = -y[i];
            break;
        case LabelKind::normal:
            s.normals(y, static_cast<long>(n));
            break;
    }
}

}  // namespace relucore
