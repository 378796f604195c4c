// What the examples share: Gaussian inputs, Theorem 1's problem built on them,
// and the closed-form limit of one neuron (s = +1) from the all-positive start,
// Theorem 1 (docs/math.md §5):
//     w_inf = w1 + X+^T K++^{-1} (y+ - X+ w1),
// the point of {X+ w = y+} closest to the weights w1 after the first step,
// inactive on the negative examples (X- w_inf <= 0).
#pragma once

#include <relucore/core/types.hpp>
#include <relucore/gd/run.hpp>

#include <Eigen/Cholesky>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace relucore_examples {

using relucore::Index;
using relucore::RowMatrix;
using relucore::Vector;

/// A rows x cols matrix of independent N(0, sd^2) entries, drawn row by row.
inline RowMatrix gaussian(Index rows, Index cols, double sd, std::mt19937_64& gen) {
    std::normal_distribution<double> normal(0.0, sd);
    RowMatrix A(rows, cols);
    for (Index i = 0; i < rows; ++i)
        for (Index j = 0; j < cols; ++j) A(i, j) = normal(gen);
    return A;
}

/// n x d inputs with independent N(0, 1/d) entries (rows of squared norm about 1).
inline RowMatrix gaussian_inputs(Index n, Index d, std::mt19937_64& gen) {
    return gaussian(n, d, 1.0 / std::sqrt(double(d)), gen);
}

/// The same from a generator of its own, seeded with seed.
inline RowMatrix gaussian_inputs(Index n, Index d, std::uint64_t seed) {
    std::mt19937_64 gen(seed);
    return gaussian_inputs(n, d, gen);
}

/// Inputs and labels of one problem.
struct Problem {
    RowMatrix X;
    Vector y;
};

/// Theorem 1's problem of the examples: gaussian_inputs(n, d) drawn from the seed, and labels
/// y_i = +-(y0 + dy i), negative on every third example (i = 0, 3, 6, ...), which one neuron
/// with s = +1 cannot fit.
inline Problem theorem1_problem(Index n, Index d, std::uint64_t seed, double y0, double dy) {
    Problem p{gaussian_inputs(n, d, seed), Vector(n)};
    for (Index i = 0; i < n; ++i) p.y[i] = (i % 3 == 0 ? -1.0 : 1.0) * (y0 + dy * double(i));
    return p;
}

/// The settings of the examples' Theorem 1 runs: steps of 0.5 (rows of squared norm about 1,
/// nearly orthogonal: mu_1(K) is about 1), at most 20000, stopping once the gradient norm is below tol.
inline relucore::GDSettings theorem1_settings(double tol) {
    relucore::GDSettings s;
    s.eta = 0.5;
    s.max_steps = 20000;
    s.tol = tol;
    return s;
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
