// gd/rescaled_run.hpp: a run on X 2^-400 (and on y 2^300, and both), planned, rescaled, run and scaled back,
// against the unit-scale run's results times the exact powers of two of their units, bit for bit;
// the options given in the caller's units; and a result float64 cannot hold, refused unchanged.
#include "check.hpp"
#include "problems.hpp"

#include "relucore/gd/rescaled_run.hpp"

#include <Eigen/Eigenvalues>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace relucore;
using namespace relucore_test;

namespace {

bool same_bits(const double* a, const double* b, Index n) {
    return std::memcmp(a, b, static_cast<std::size_t>(n) * sizeof(double)) == 0;
}

// The matrix times 2^p, entry by entry with std::ldexp (the reference of the scale-back).
RowMatrix times(const RowMatrix& a, int p) {
    RowMatrix out = a;
    for (Index i = 0; i < out.size(); ++i) out.data()[i] = std::ldexp(a.data()[i], p);
    return out;
}

struct Result {
    RunSummary r;
    RowMatrix alpha, beta, W;
};

// A run from the all-positive start with the default offset computed from the labels it is given.
Result run_positive(const RowMatrix& X, const Vector& y, const GDSettings& s) {
    DualGD::PositiveStart start;
    start.outer = Vector::Ones(2);
    start.outer[1] = -1;
    start.offset = default_offset(y, 2, defaults::C_alpha);
    DualGD gd = DualGD::positive_start(X, y, start, s);
    Result out;
    out.r = gd.run();
    out.alpha = gd.alpha();
    out.beta = gd.beta();
    out.W = gd.alpha() * X;
    return out;
}

}  // namespace

TEST_CASE("rescale_problem + scale_back_run: X 2^-400, y 2^300 and both give the unit run times its factors") {
    // A unit-scale problem: max |x_ij| and max |y_i| in [0.5, 1), so its plan is (0, 0).
    std::mt19937_64 gen(3);
    RowMatrix X = gaussian(8, 40, gen);
    scaling::scale(X.data(), X.size(), -scaling::binary_exponent(X.data(), X.size()));
    Vector y(8);
    for (Index i = 0; i < 8; ++i) y[i] = (i % 3 == 0 ? -1.0 : 1.0) * (0.5 + 0.05 * static_cast<double>(i));
    const RowMatrix K = X * X.transpose();
    const double mu1 = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(Eigen::MatrixXd(K)).eigenvalues().maxCoeff();
    GDSettings unit_settings;
    unit_settings.eta = 0.25 / mu1;
    unit_settings.max_steps = 3000;
    unit_settings.tol = 1e-9;
    const Result unit = run_positive(X, y, unit_settings);
    CHECK(unit.r.status == Status::converged || unit.r.status == Status::max_steps);

    for (const scaling::Exponents caller : {scaling::Exponents{-400, 0}, scaling::Exponents{0, 300},
                                            scaling::Exponents{-300, 200}, scaling::Exponents{300, -100}}) {
        // The caller's problem and options: X 2^ex, y 2^ey, eta as 4^-ex, tol as 2^(ex+ey).
        const RowMatrix Xc = times(X, caller.ex);
        const Vector yc = times(RowMatrix(y.transpose()), caller.ey).transpose();
        GDSettings s = unit_settings;
        s.eta = std::ldexp(unit_settings.eta, scaling::power(scaling::units::ETA, caller));
        s.tol = std::ldexp(unit_settings.tol, scaling::power(scaling::units::GRAD, caller));

        const ConstMatrixRef xref(Xc);
        const scaling::RescaledProblem p = scaling::rescale_problem(&xref, nullptr, yc);
        CHECK(p.e.ex == caller.ex && p.e.ey == caller.ey);
        CHECK(same_bits(p.X.data(), X.data(), X.size()) && same_bits(p.y.data(), y.data(), y.size()));
        scaling::scale_down_settings(p.e, s);
        CHECK(s.eta == unit_settings.eta && s.tol == unit_settings.tol);

        Result run = run_positive(p.X, p.y, s);
        CHECK(scaling::scale_back_run(p.e, run.r, run.alpha, run.beta, run.W));
        CHECK(run.r.status == unit.r.status && run.r.nit == unit.r.nit);
        CHECK(run.r.loss == std::ldexp(unit.r.loss, scaling::power(scaling::units::LOSS, caller)));
        CHECK(run.r.grad_norm == std::ldexp(unit.r.grad_norm, scaling::power(scaling::units::GRAD, caller)));
        const RowMatrix alpha = times(unit.alpha, scaling::power(scaling::units::ALPHA, caller));
        const RowMatrix beta = times(unit.beta, scaling::power(scaling::units::Y, caller));
        const RowMatrix W = times(unit.W, scaling::power(scaling::units::W, caller));
        CHECK(same_bits(run.alpha.data(), alpha.data(), alpha.size()));
        CHECK(same_bits(run.beta.data(), beta.data(), beta.size()));
        CHECK(same_bits(run.W.data(), W.data(), W.size()));
    }
}

TEST_CASE("rescale_problem: data within the safe range run as they are, nothing copied") {
    std::mt19937_64 gen(5);
    const RowMatrix X = gaussian(5, 7, gen);
    const ConstMatrixRef xref(X);
    const Vector y = Vector::Constant(5, 3.0);
    const scaling::RescaledProblem p = scaling::rescale_problem(&xref, nullptr, y);
    CHECK(!scaling::rescaled(p.e) && p.X.size() == 0 && p.y.size() == 0);
    // Gram-only mode: half the exponent of K.
    const RowMatrix K = RowMatrix::Identity(3, 3) * std::ldexp(1.0, -301);  // exponent -300, half -150
    const ConstMatrixRef kref(K);
    const Vector y3 = Vector::Ones(3);
    const scaling::RescaledProblem g = scaling::rescale_problem(nullptr, &kref, y3);
    CHECK(g.e.ex == -150 && g.e.ey == 1);
    CHECK(g.K(0, 0) == std::ldexp(1.0, -1) && g.K(0, 1) == 0.0);
}

TEST_CASE("scale_back_run: a result float64 cannot hold is refused, unchanged; a diverged run is scaled back") {
    RunSummary r;
    r.status = Status::converged;
    r.loss = 0.25;
    r.grad_norm = 1e-3;
    RowMatrix alpha = RowMatrix::Constant(1, 2, 1.0), beta = RowMatrix::Constant(1, 2, 0.5), W(0, 0);
    const scaling::Exponents e{-600, 0};  // alpha as 2^1200
    CHECK(!scaling::scale_back_run(e, r, alpha, beta, W));
    CHECK(alpha(0, 0) == 1.0 && beta(0, 0) == 0.5 && r.loss == 0.25);
    r.status = Status::diverged;
    CHECK(scaling::scale_back_run(e, r, alpha, beta, W));
    CHECK(alpha(0, 0) == std::numeric_limits<double>::infinity() && beta(0, 0) == 0.5);
}

RELUCORE_TEST_MAIN
