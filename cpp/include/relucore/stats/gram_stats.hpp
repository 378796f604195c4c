// Spectral statistics of a Gram matrix K (Lai et al., App. A.1: Lemma 7,
// Lemma 8 / Corollary 1, Assumption 3).
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/types.hpp"

#include <Eigen/Core>
#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cmath>
#include <limits>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

struct GramStatistics {
    double mu_max = 0.0;         // mu_1(K), the largest eigenvalue
    double mu_min = 0.0;         // mu_n(K), the smallest eigenvalue
    double deviation = 0.0;      // || K / norm1 - I ||_2
    double offdiag_ratio = 0.0;  // max_{i != j} |K_ij| / min_i K_ii
    double max_offdiag = 0.0;    // max_{i != j} |K_ij|
    double min_diag = 0.0;       // min_i K_ii
};

// The statistics of K given its extreme eigenvalues mu_max and mu_min (from
// any eigensolver). norm1 is ||lambda||_1 (E K_ii); the deviation uses the
// extreme eigenvalues, because || K/s - I ||_2 = max(|mu_1/s - 1|, |mu_n/s - 1|)
// for symmetric K.
inline GramStatistics gram_statistics(const ConstMatrixRef& K, double norm1, double mu_max, double mu_min) {
    const Index n = K.rows();
    GramStatistics g;
    g.mu_min = mu_min;
    g.mu_max = mu_max;
    g.deviation = std::max(std::abs(g.mu_max / norm1 - 1.0), std::abs(g.mu_min / norm1 - 1.0));
    double mo = 0.0, md = std::numeric_limits<double>::infinity();
    for (Index i = 0; i < n; ++i) {
        md = std::min(md, K(i, i));
        for (Index j = 0; j < n; ++j)
            if (i != j) mo = std::max(mo, std::abs(K(i, j)));
    }
    g.max_offdiag = mo;
    g.min_diag = md;
    g.offdiag_ratio = md > 0 ? mo / md : std::numeric_limits<double>::infinity();
    return g;
}

// The statistics of K with its eigenvalues from Eigen's symmetric eigensolver.
inline GramStatistics gram_statistics(const ConstMatrixRef& K, double norm1) {
    const Index n = K.rows();
    Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic> A = K;
    Eigen::SelfAdjointEigenSolver<Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>> es(A, Eigen::EigenvaluesOnly);
    const Vector& ev = es.eigenvalues();  // ascending
    return gram_statistics(K, norm1, ev[n - 1], ev[0]);
}

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
