// Small random problems shared by the C++ tests.
#pragma once

#include "relucore/analysis.hpp"

#include <Eigen/LU>

#include <cstdint>
#include <initializer_list>
#include <random>
#include <vector>

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

// Gradient-descent settings of step eta and at most `steps` steps, the rest defaults.
inline relucore::GDSettings settings_for(double eta, std::int64_t steps, const relucore::ModelSpec& model = {}) {
    relucore::GDSettings s;
    s.eta = eta;
    s.max_steps = steps;
    s.model = model;
    return s;
}

// The engines' named starts filled from positional arguments, for tests that
// build many engines (each helper names what it fills).
template <class Start>
Start with_outer(const Vector& outer) {
    Start s;
    s.outer = outer;
    return s;
}

inline relucore::DualGD::Start dual_start(const Vector& outer, const RowMatrix& alpha, const RowMatrix& beta) {
    auto s = with_outer<relucore::DualGD::Start>(outer);
    s.alpha = alpha, s.beta = beta;
    return s;
}

inline relucore::DenseGD::Start dense_start(const Vector& outer, const RowMatrix& W, const RowMatrix& alpha) {
    auto s = with_outer<relucore::DenseGD::Start>(outer);
    s.W = W, s.alpha = alpha;
    return s;
}

// The all-positive start with one offset for every beta_{k,i} ...
inline relucore::DualGD::PositiveStart positive_offsets(const Vector& outer, double offset) {
    auto s = with_outer<relucore::DualGD::PositiveStart>(outer);
    s.offset = offset;
    return s;
}

// ... or with an m x n matrix of offsets.
inline relucore::DualGD::PositiveStart positive_offsets(const Vector& outer, const RowMatrix& eps) {
    auto s = with_outer<relucore::DualGD::PositiveStart>(outer);
    s.eps = eps;
    return s;
}

// A start of m = outer.size() neurons on p: W0 of N(0, scale^2) entries drawn
// from std::mt19937_64(weight_seed), beta0 = W0 X^T and alpha0 = 0.
struct GaussianStart {
    Vector outer;
    RowMatrix W0, beta0, alpha0;
};

inline GaussianStart gaussian_start(const Problem& p, std::initializer_list<double> outer, unsigned weight_seed,
                                    double scale) {
    GaussianStart s;
    s.outer = Eigen::Map<const Vector>(outer.begin(), Index(outer.size()));
    std::mt19937_64 gen(weight_seed);
    s.W0 = gaussian(s.outer.size(), p.X.cols(), gen, scale);
    s.beta0 = s.W0 * p.X.transpose();
    s.alpha0 = RowMatrix::Zero(s.outer.size(), p.X.rows());
    return s;
}

// Caller-owned History buffers of `slots` records of `width` (= m n) entries,
// every entry `fill`; alpha and mask only `with_dual`. Not copyable: h points
// into the vectors.
struct HistoryBuffers {
    std::vector<std::int64_t> steps;
    std::vector<double> loss, beta, alpha;
    std::vector<std::uint8_t> mask;
    relucore::History h;

    HistoryBuffers(std::int64_t slots, Index width, double fill, bool with_dual)
        : steps(std::size_t(slots), std::int64_t(fill)),
          loss(std::size_t(slots), fill),
          beta(std::size_t(slots * width), fill),
          alpha(with_dual ? std::size_t(slots * width) : 0, fill),
          mask(with_dual ? std::size_t(slots * width) : 0, std::uint8_t(0)) {
        h.steps = steps;
        h.loss = loss;
        h.beta = beta;
        if (with_dual) {
            h.alpha = alpha;
            h.mask = mask;
        }
        h.capacity = slots;
    }
    HistoryBuffers(const HistoryBuffers&) = delete;
    HistoryBuffers& operator=(const HistoryBuffers&) = delete;
};

// The one-neuron minimum-norm dual (Eq. 7) by brute force: min 1/2 z^T K z -
// t+^T z+ subject to z_j <= 0 where t_j = y_j / s <= 0, solved on every face
// (a subset F of the constrained coordinates left free, the others held at 0)
// by a dense LU; the optimum is the feasible face solution of least objective
// (the problem is strictly convex). 2^|S-| solves: small n only.
inline Vector minnorm_single_brute_force(const RowMatrix& K, const Vector& y, double s) {
    const Index n = K.rows();
    std::vector<Index> fit, bound;
    for (Index i = 0; i < n; ++i) (y[i] / s > 0 ? fit : bound).push_back(i);
    Vector best;
    double best_obj = 0;
    for (unsigned long mask = 0; mask < (1ul << bound.size()); ++mask) {
        std::vector<Index> free = fit;
        for (std::size_t q = 0; q < bound.size(); ++q)
            if (mask >> q & 1ul) free.push_back(bound[q]);
        const Index f = Index(free.size());
        Eigen::MatrixXd KF(f, f);
        Eigen::VectorXd cF(f);
        for (Index a = 0; a < f; ++a) {
            cF[a] = y[free[a]] / s > 0 ? y[free[a]] / s : 0.0;
            for (Index b = 0; b < f; ++b) KF(a, b) = K(free[a], free[b]);
        }
        const Eigen::VectorXd zF = KF.fullPivLu().solve(cF);
        Vector z = Vector::Zero(n);
        bool feasible = true;
        for (Index a = 0; a < f; ++a) {
            z[free[a]] = zF[a];
            if (!(y[free[a]] / s > 0) && zF[a] > 0) feasible = false;
        }
        if (!feasible) continue;
        double obj = 0.5 * z.dot(K * z);
        for (Index i : fit) obj -= y[i] / s * z[i];
        if (best.size() == 0 || obj < best_obj) {
            best = z;
            best_obj = obj;
        }
    }
    return best;
}

}  // namespace relucore_test
