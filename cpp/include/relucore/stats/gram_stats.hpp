// Spectral statistics of a Gram matrix K (Lai et al., App. A.1: Lemma 7,
// Lemma 8 / Corollary 1, Assumption 3).
#pragma once

#include "relucore/core/types.hpp"

#include <Eigen/Core>
#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cmath>
#include <limits>

namespace relucore {

struct GramStatistics {
    double mu_max = 0.0;         // mu_1(K), the largest eigenvalue
    double mu_min = 0.0;         // mu_n(K), the smallest eigenvalue
    double deviation = 0.0;      // || K / norm1 - I ||_2
    double offdiag_ratio = 0.0;  // max_{i != j} |K_ij| / min_i K_ii
    double max_offdiag = 0.0;    // max_{i != j} |K_ij|
    double min_diag = 0.0;       // min_i K_ii
};

// norm1 is ||lambda||_1 (E K_ii); the deviation uses the extreme eigenvalues,
// because || K/s - I ||_2 = max(|mu_1/s - 1|, |mu_n/s - 1|) for symmetric K.
inline GramStatistics gram_statistics(const ConstMatrixRef& K, double norm1) {
    const Index n = K.rows();
    GramStatistics g;
    Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic> A = K;
    Eigen::SelfAdjointEigenSolver<Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>> es(A, Eigen::EigenvaluesOnly);
    const Vector& ev = es.eigenvalues();  // ascending
    g.mu_min = ev[0];
    g.mu_max = ev[n - 1];
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

}  // namespace relucore
