// minnorm_single_gram, the one-neuron minimum-norm problem in Gram space
// (Eq. 7, Lemma 3): min ||w|| subject to X+ w = y+ and X- w <= 0 (s = +1). When
// the closed form w = X+^T K++^{-1} y+ (every negative constraint binding
// with zero multiplier) already satisfies X- w <= 0, it is the solution; the
// negative examples here are built so that it does (x_j = -(x_1 + x_2) + noise),
// and the QP must return it. Exits non-zero on failure.
#include "example_problem.hpp"

#include <relucore/analysis.hpp>  // the min-norm QP is analysis code, not in the engines umbrella

#include <cstdio>

int main() {
    using relucore::Index;
    using relucore::RowMatrix;
    using relucore::Vector;
    const Index n_pos = 5, n = 8, d = 60;
    RowMatrix X = relucore_examples::gaussian_inputs(n, d, /*seed=*/11);
    for (Index i = n_pos; i < n; ++i) X.row(i) = -(X.row(0) + X.row(1)) + 0.1 * X.row(i);
    Vector y(n);
    for (Index i = 0; i < n; ++i) y[i] = i < n_pos ? 1.0 + 0.1 * double(i) : -1.0;

    const RowMatrix K = relucore::gram_matrix(X);
    const relucore::MinNorm1Result r = relucore::minnorm_single_gram(K, y, /*s=*/1.0);
    const Vector w = X.transpose() * r.z;

    // The closed form on the positive examples, and its feasibility on the negatives.
    const RowMatrix Xp = X.topRows(n_pos);
    const Vector w_closed = Xp.transpose() * (Xp * Xp.transpose()).llt().solve(y.head(n_pos));
    const double max_neg = relucore_examples::max_on_negatives(X, y, w_closed);
    const double dist = (w - w_closed).norm() / w_closed.norm();
    std::printf("QP status %d, ||w*|| %.6f, relative distance to the closed form %.2e, max X- w = %.3f\n",
                static_cast<int>(r.status), w.norm(), dist, max_neg);
    std::printf("certificates: stationarity %.1e, primal %.1e, dual %.1e, complementarity %.1e\n", r.stationarity,
                r.primal_feasibility, r.dual_feasibility, r.complementarity);
    const bool ok = r.status == relucore::Status::optimal && max_neg < 0 && dist < 1e-10 && r.stationarity < 1e-10 &&
                    r.primal_feasibility < 1e-10;
    std::printf("%s\n", ok ? "minnorm_qp example OK" : "minnorm_qp example FAILED");
    return ok ? 0 : 1;
}
