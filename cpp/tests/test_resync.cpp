// Resynchronisation of the engines' derived state (docs/math.md, resynchronisation):
// DualGD keeps beta = beta_start + K (alpha - alpha_start) and DenseGD keeps
// W = W_start + (alpha - alpha_start) X to rounding over millions of steps. The
// reference is recomputed here in long double from the engine's alpha.
#include "check.hpp"
#include "problems.hpp"

#include <cstdint>

using namespace relucore;
using namespace relucore_test;

namespace {

using LongMatrix = Eigen::Matrix<long double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Vardi & Shamir (2021): x1 = (3, -1, 0), x2 = (4, 2, 0), x3 = (0, g, g), y = (16, 18, 0).
struct VardiShamir {
    RowMatrix X{3, 3};
    Vector y{3};
    RowMatrix K;
    RowMatrix W0 = RowMatrix::Constant(1, 3, 1e-6);
    Vector outer = Vector::Ones(1);
    explicit VardiShamir(double g) {
        X << 3, -1, 0, 4, 2, 0, 0, g, g;
        y << 16, 18, 0;
        K = gram_matrix(X);
    }
};

// Without the gradient tolerance: every run takes the steps asked.
GDSettings settings_no_tol(double eta, std::int64_t steps) {
    GDSettings s = settings_for(eta, steps);
    s.tol = 0;
    return s;
}

// ||beta - X (W0 + alpha X)^T|| / ||X (W0 + alpha X)^T||, the reference in long double (alpha0 = 0).
double dual_drift(const VardiShamir& p, const DualGD& e) {
    const LongMatrix X = p.X.cast<long double>();
    const LongMatrix W = p.W0.cast<long double>() + e.alpha().cast<long double>() * X;
    const LongMatrix XW = W * X.transpose();
    return static_cast<double>((e.beta().cast<long double>() - XW).norm() / XW.norm());
}

// ||W - (W0 + alpha X)|| / ||W - W0||, the reference in long double (alpha0 = 0).
double dense_drift(const VardiShamir& p, const DenseGD& e) {
    const LongMatrix X = p.X.cast<long double>();
    const LongMatrix span = e.alpha().cast<long double>() * X;
    const LongMatrix W = e.W().cast<long double>() - p.W0.cast<long double>();
    return static_cast<double>((W - span).norm() / span.norm());
}

}  // namespace

TEST_CASE("DualGD: beta = X W to 1e-12 after 2e6 steps with resync, not without") {
    for (double g : {0.0, 1.0, 5.0}) {
        const VardiShamir p(g);
        const RowMatrix beta0 = p.W0 * p.X.transpose();
        DualGD kept(p.K, p.y, dual_start(p.outer, RowMatrix::Zero(1, 3), beta0), settings_no_tol(1e-4, 0));
        DualGD drifting(p.K, p.y, dual_start(p.outer, RowMatrix::Zero(1, 3), beta0), settings_no_tol(1e-4, 0));
        CHECK(kept.resync_every() == defaults::resync_every);
        drifting.set_resync_every(0);
        kept.step(2000000);
        drifting.step(2000000);
        CHECK(dual_drift(p, kept) < 1e-12);
        // Without resync beta drifts measurably (1.6e-10 here): the check above can fail.
        CHECK(dual_drift(p, drifting) > 1e-11);
        CHECK(kept.loss() < 1e-20);
    }
}

TEST_CASE("DualGD: runs shorter than resync_every are unchanged bitwise; the resync sets beta0 + K alpha") {
    const Problem p = make_problem(12, 30, 5);
    const auto [outer, W0, beta0, alpha0] = gaussian_start(p, {1.0, -1.0}, 3, 0.2);
    DualGD a(p.K, p.y, dual_start(outer, alpha0, beta0), settings_no_tol(0.1, 0));
    DualGD b(p.K, p.y, dual_start(outer, alpha0, beta0), settings_no_tol(0.1, 0));
    b.set_resync_every(0);
    a.step(defaults::resync_every - 1);
    b.step(defaults::resync_every - 1);
    CHECK(a.alpha() == b.alpha() && a.beta() == b.beta());
    a.step(1);
    b.step(1);
    CHECK(a.alpha() == b.alpha());
    // The resync after step resync_every: beta0 + K alpha, recomputed here in long double.
    const LongMatrix ref = beta0.cast<long double>() + a.alpha().cast<long double>() * p.K.cast<long double>();
    CHECK(static_cast<double>((a.beta().cast<long double>() - ref).norm() / ref.norm()) < 1e-15);
    CHECK((a.beta() - b.beta()).norm() / b.beta().norm() < 1e-12);
    CHECK_THROWS(a.set_resync_every(-1), std::invalid_argument);
}

TEST_CASE("DualGD: a checkpoint with its reference resumes bitwise across resyncs") {
    const Problem p = make_problem(12, 30, 13);
    const auto [outer, W0, beta0, alpha0] = gaussian_start(p, {1.0, -1.0, 1.0}, 1, 0.2);
    DualGD a(p.K, p.y, dual_start(outer, alpha0, beta0), settings_no_tol(0.05, 0));
    a.step(1500);
    DualGD b(p.K, p.y, dual_start(outer, a.alpha(), a.beta()), settings_no_tol(0.05, 0));
    b.restore(a.steps_taken(), a.mask(), a.pattern().stable_step());
    b.set_reference(alpha0, beta0);
    CHECK(b.alpha_reference() == alpha0 && b.beta_reference() == beta0);
    a.step(3000);
    b.step(3000);
    CHECK(a.alpha() == b.alpha() && a.beta() == b.beta());
    CHECK_THROWS(b.set_reference(RowMatrix::Zero(2, 12), beta0), std::invalid_argument);
}

TEST_CASE("DenseGD: W = W0 + alpha X to 1e-12 after 2e6 steps with resync, not without") {
    for (double g : {1.0, 2.0}) {
        const VardiShamir p(g);
        DenseGD kept(p.X, p.y, dense_start(p.outer, p.W0, RowMatrix::Zero(1, 3)), settings_no_tol(1e-4, 0));
        DenseGD drifting(p.X, p.y, dense_start(p.outer, p.W0, RowMatrix::Zero(1, 3)), settings_no_tol(1e-4, 0));
        drifting.set_resync_every(0);
        kept.step(2000000);
        drifting.step(2000000);
        CHECK(dense_drift(p, kept) < 1e-12);
        CHECK(dense_drift(p, drifting) > 1e-11);
    }
}

RELUCORE_TEST_MAIN
