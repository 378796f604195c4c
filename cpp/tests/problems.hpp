// Small random problems shared by the C++ tests.
#pragma once

#include "relucore/analysis.hpp"

#include <random>

namespace relucore_test {

using relucore::Index;
using relucore::RowMatrix;
using relucore::Vector;

inline RowMatrix gaussian(Index rows, Index cols, std::mt19937_64& gen, double scale = 1.0) {
    std::normal_distribution<double> normal(0.0, scale);
    RowMatrix a(rows, cols);
    for (Index i = 0; i < rows; ++i)
        for (Index j = 0; j < cols; ++j) a(i, j) = normal(gen);
    return a;
}

// n x d data with rows of squared norm about 1 (nearly orthogonal for d >> n)
// and labels of either sign with |y_i| in [0.5, 1.5].
struct Problem {
    RowMatrix X;
    Vector y;
    RowMatrix K;
};

inline Problem make_problem(Index n, Index d, unsigned seed) {
    std::mt19937_64 gen(seed);
    Problem p;
    p.X = gaussian(n, d, gen, 1.0 / std::sqrt(double(d)));
    std::uniform_real_distribution<double> mag(0.5, 1.5);
    p.y.resize(n);
    for (Index i = 0; i < n; ++i) p.y[i] = (i % 2 == 0 ? 1.0 : -1.0) * mag(gen);
    p.K = relucore::gram_matrix(p.X);
    return p;
}

}  // namespace relucore_test
