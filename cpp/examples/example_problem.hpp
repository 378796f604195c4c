// What the examples share: Gaussian inputs, and the closed-form limit of one
// neuron (s = +1) from the all-positive start, Theorem 1 (docs/math.md §5):
//     w_inf = w1 + X+^T K++^{-1} (y+ - X+ w1),
// the point of {X+ w = y+} closest to the weights w1 after the first step,
// inactive on the negative examples (X- w_inf <= 0).
#pragma once

#include <relucore/core/types.hpp>

#include <Eigen/Cholesky>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace relucore_examples {

using relucore::Index;
using relucore::RowMatrix;
using relucore::Vector;

/// n x d inputs with independent N(0, 1/d) entries (rows of squared norm about 1), row by row.
inline RowMatrix gaussian_inputs(Index n, Index d, std::mt19937_64& gen) {
    std::normal_distribution<double> normal(0.0, 1.0 / std::sqrt(double(d)));
    RowMatrix X(n, d);
    for (Index i = 0; i < n; ++i)
        for (Index j = 0; j < d; ++j) X(i, j) = normal(gen);
    return X;
}

/// Theorem 1's limit w_inf from w1, over the examples with y_i > 0.
inline Vector theorem1_limit(const RowMatrix& X, const Vector& y, const Vector& w1) {
    std::vector<Index> pos;
    for (Index i = 0; i < y.size(); ++i)
        if (y[i] > 0) pos.push_back(i);
    RowMatrix Xp(Index(pos.size()), X.cols());
    Vector yp(Index(pos.size()));
    for (Index j = 0; j < Index(pos.size()); ++j) {
        Xp.row(j) = X.row(pos[j]);
        yp[j] = y[pos[j]];
    }
    const RowMatrix Kp = Xp * Xp.transpose();
    return w1 + Xp.transpose() * Kp.llt().solve(yp - Xp * w1);
}

/// max over the examples with y_i <= 0 of x_i^T w (-1e300 when there are none).
inline double max_on_negatives(const RowMatrix& X, const Vector& y, const Vector& w) {
    double m = -1e300;
    for (Index i = 0; i < y.size(); ++i)
        if (y[i] <= 0) m = std::max(m, X.row(i).dot(w.transpose()));
    return m;
}

}  // namespace relucore_examples
