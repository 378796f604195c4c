// gd/positive_start.hpp: the one-pass all-positive start against its
// definitions computed here by other means (K by explicit dot products, its
// eigenvalues by a Jacobi SVD, alpha0 by the residual of K alpha0 = eps, the
// default step and tolerance by their formulas), the default offset against
// its closed form, and every refusal (StartCheck) on a problem built to fail it.
#include "check.hpp"
#include "problems.hpp"

#include <Eigen/Eigenvalues>
#include <Eigen/SVD>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <utility>

using namespace relucore;
using namespace relucore_test;

namespace {

struct Outputs {
    RowMatrix K, beta0, alpha0, W0;
    Vector mu;
    double eta = 0, tol = 0;
    Outputs(Index n, Index m, Index d) : K(n, n), beta0(m, n), alpha0(m, n), W0(m, d), mu(n) {}
};

StartCheck run(const RowMatrix& X, const Vector& y, const Vector& outer, const StartOptions& opt, Outputs& o) {
    return positive_start(X, y, outer, opt, o.K, o.mu, o.beta0, o.alpha0, o.W0, o.eta, o.tol);
}

}  // namespace

TEST_CASE("positive_start: K, eigenvalues, offsets, alpha0, W0, default step and tolerance") {
    const Problem p = make_problem(9, 50, 21);
    const Index n = 9, m = 3, d = 50;
    Vector outer(m);
    outer << 1.0, -1.0, 0.5;
    Outputs o(n, m, d);
    CHECK(run(p.X, p.y, outer, StartOptions{}, o) == StartCheck::ok);
    // K_ij = x_i . x_j, by explicit loops.
    RowMatrix K(n, n);
    for (Index i = 0; i < n; ++i)
        for (Index j = 0; j < n; ++j) {
            double s = 0;
            for (Index k = 0; k < d; ++k) s += p.X(i, k) * p.X(j, k);
            K(i, j) = s;
        }
    CHECK_CLOSE(o.K, K, 1e-13, 1e-15);
    // K is symmetric positive definite: its eigenvalues are its singular values.
    const Eigen::MatrixXd Kd = K;
    Eigen::JacobiSVD<Eigen::MatrixXd> svd(Kd);
    const Vector sv = svd.singularValues();  // descending
    for (Index i = 0; i < n; ++i) CHECK_CLOSE(o.mu[i], sv[n - 1 - i], 1e-12, 1e-14);
    // Default offset y_min / (C_alpha m) in every entry of beta0.
    const double y_min = p.y.cwiseAbs().minCoeff();
    const double eps = y_min / (defaults::C_alpha * static_cast<double>(m));
    CHECK((o.beta0.array() == eps).all());
    // alpha0 solves K alpha0_k = eps_k; W0 = alpha0 X, so X W0^T = K alpha0^T = beta0^T.
    CHECK_CLOSE(RowMatrix(o.alpha0 * K), o.beta0, 1e-10, 1e-14);
    CHECK_CLOSE(o.W0, RowMatrix(o.alpha0 * p.X), 1e-12, 1e-15);
    CHECK_CLOSE(RowMatrix(o.W0 * p.X.transpose()), o.beta0, 1e-10, 1e-14);
    // Square loss: eta = 1 / (||s||^2 mu_1), tol = tol_factor sqrt(mu_1) ||y||.
    CHECK_CLOSE(o.eta, 1.0 / (outer.squaredNorm() * sv[0]), 1e-12, 0.0);
    CHECK_CLOSE(o.tol, defaults::tol_factor * std::sqrt(sv[0]) * p.y.norm(), 1e-12, 0.0);

    // A given eps, eta and tol are kept; eps < 0 reads the offsets from beta0.
    StartOptions given;
    given.eps = 2e-3;
    given.tol = 1e-9;
    Outputs g(n, m, d);
    g.eta = 0.25;
    CHECK(run(p.X, p.y, outer, given, g) == StartCheck::ok);
    CHECK((g.beta0.array() == 2e-3).all() && g.eta == 0.25 && g.tol == 1e-9);
    StartOptions from_beta;
    from_beta.eps = -1;
    Outputs b(n, m, d);
    b.beta0 = RowMatrix::Constant(m, n, 2e-3);
    b.beta0(1, 4) = 5e-3;
    CHECK(run(p.X, p.y, outer, from_beta, b) == StartCheck::ok);
    CHECK(b.beta0(1, 4) == 5e-3);
    CHECK_CLOSE(RowMatrix(b.alpha0 * K), b.beta0, 1e-10, 1e-14);
    // The logistic loss: curvature 1/(4n), tolerance 0.
    StartOptions logistic;
    logistic.loss = Loss::logistic;
    Outputs l(n, m, d);
    CHECK(run(p.X, p.y.cwiseSign(), outer, logistic, l) == StartCheck::ok);
    CHECK_CLOSE(l.eta, 4.0 * static_cast<double>(n) / (outer.squaredNorm() * sv[0]), 1e-12, 0.0);
    CHECK(l.tol == 0.0);
}

TEST_CASE("positive_start: each refusal on a problem built to fail it") {
    const Problem p = make_problem(6, 30, 5);
    const Index n = 6, m = 2, d = 30;
    const Vector outer = Vector::Ones(m);
    auto check_of = [&](const RowMatrix& X, const Vector& y, const Vector& a, const StartOptions& opt, double eta) {
        Outputs o(n, m, d);
        o.eta = eta;
        return run(X, y, a, opt, o);
    };
    const StartOptions def;
    Vector y_nan = p.y;
    y_nan[2] = std::nan("");
    CHECK(check_of(p.X, y_nan, outer, def, 0) == StartCheck::labels_invalid);
    Vector zero_outer = outer;
    zero_outer[1] = 0;
    CHECK(check_of(p.X, p.y, zero_outer, def, 0) == StartCheck::outer_invalid);
    RowMatrix X_inf = p.X;
    X_inf(0, 0) = std::numeric_limits<double>::infinity();
    CHECK(check_of(X_inf, p.y, outer, def, 0) == StartCheck::gram_not_finite);
    CHECK(check_of(RowMatrix::Zero(n, d), p.y, outer, def, 0) == StartCheck::gram_degenerate);
    RowMatrix X_dup = p.X;
    X_dup.row(3) = X_dup.row(1);  // rank n - 1: mu_n ~ 0
    CHECK(check_of(X_dup, p.y, outer, def, 0) == StartCheck::ill_conditioned);
    StartOptions bad_eps;
    bad_eps.eps = std::numeric_limits<double>::infinity();
    CHECK(check_of(p.X, p.y, outer, bad_eps, 0) == StartCheck::eps_invalid);
    CHECK(check_of(p.X, p.y, outer, def, 1e-300) == StartCheck::step_invalid);
}

TEST_CASE("default_offset: y_min / (C_alpha m), with the rules for zero and NaN labels") {
    Vector y(4);
    y << 0.5, -0.25, 2.0, -1.0;
    CHECK(default_offset(y, 2, 10.0) == 0.25 / 20.0);
    y[1] = 0.0;  // a zero label: the reference is max |y_i|
    CHECK(default_offset(y, 2, 10.0) == 2.0 / 20.0);
    CHECK(default_offset(Vector::Zero(3), 4, 5.0) == 1.0 / 20.0);
    y[0] = std::nan("");
    CHECK(default_offset(y, 3, 10.0) == 1.0 / 30.0);
}

TEST_CASE("conditioning_rule: the Cholesky estimate first, the spectrum only where it fails") {
    const Problem p = make_problem(7, 40, 9);
    const RowMatrix beta0 = RowMatrix::Constant(2, 7, 1e-3);
    Eigen::LLT<RowMatrix> llt(7);
    int asked = 0;
    // A spectrum callback that counts its calls and reports {mu_1, mu_n}.
    const auto spectrum_of = [&asked](double top, double bottom) {
        return [&asked, top, bottom] {
            ++asked;
            return std::pair(top, bottom);
        };
    };
    const double cmax = defaults::max_condition;
    // Well conditioned: accepted by the estimate, the spectrum is never computed.
    CHECK(factor_gram(p.K, cmax, spectrum_of(1, 0), llt) == StartCheck::ok && asked == 0);
    const RowMatrix alpha0 = llt.solve(beta0.transpose()).transpose();
    CHECK_CLOSE(RowMatrix(alpha0 * p.K), beta0, 1e-10, 1e-15);
    // The estimate decides first: a spectrum that would refuse is not consulted.
    llt.compute(p.K);
    CHECK(conditioning_rule(llt, 1e-300, cmax, spectrum_of(1e20, 1)) == StartCheck::ok && asked == 0);
    // Not factorisable: the spectrum names the fault.
    RowMatrix indefinite = p.K;
    indefinite(0, 0) = -1.0;
    CHECK(factor_gram(indefinite, cmax, spectrum_of(5, -1), llt) == StartCheck::ill_conditioned && asked == 1);
    CHECK(factor_gram(indefinite, cmax, spectrum_of(5, 1), llt) == StartCheck::not_definite && asked == 2);
    // Factorisable, estimate below cholesky_rcond_min: the exact condition number decides.
    RowMatrix near = RowMatrix::Identity(7, 7);
    near(6, 6) = 1e-14;  // cond 1e14 > max_condition
    CHECK(factor_gram(near, cmax, spectrum_of(1, 1e-14), llt) == StartCheck::ill_conditioned && asked == 3);
    near(6, 6) = 1e-12;  // rcond = 1e-12 is not above cholesky_rcond_min, cond = 1e12 is accepted
    CHECK(factor_gram(near, cmax, spectrum_of(1, 1e-12), llt) == StartCheck::ok && asked == 4);
    // Given the spectrum itself (a sweep trial knows it): the same verdicts as the lazy form, with
    // the estimate still deciding where the spectrum alone would refuse.
    llt.compute(p.K);
    CHECK(conditioning_rule(llt, defaults::cholesky_rcond_min, cmax, std::pair(1.0, 0.5)) == StartCheck::ok);
    CHECK(conditioning_rule(llt, 1e-300, cmax, std::pair(1e20, 1.0)) == StartCheck::ok);  // the estimate passes
    CHECK(conditioning_rule(llt, 1.0, cmax, std::pair(1e20, 1.0)) == StartCheck::ill_conditioned);
    llt.compute(indefinite);
    CHECK(conditioning_rule(llt, 1e-300, cmax, std::pair(5.0, -1.0)) == StartCheck::ill_conditioned);
    CHECK(conditioning_rule(llt, 1e-300, cmax, std::pair(5.0, 1.0)) == StartCheck::not_definite);
    for (const double bottom : {1e-14, 1e-12}) {
        near(6, 6) = bottom;
        const StartCheck lazy = factor_gram(near, cmax, spectrum_of(1, bottom), llt);
        CHECK(factor_gram(near, cmax, std::pair(1.0, bottom), llt) == lazy);
    }
}

TEST_CASE("symmetric_eigenvalues without a LAPACK: Eigen's eigenvalues-only solver bit for bit") {
    // The Eigen path spells out SelfAdjointEigenSolver(K, EigenvaluesOnly) (linalg/lapack.hpp);
    // the solver itself is the reference, and the trace a check independent of both.
    std::mt19937_64 gen(41);
    std::normal_distribution<double> z;
    std::vector<RowMatrix> cases;
    for (Index n : {1, 2, 3, 5, 8, 16, 17, 40, 90}) {
        RowMatrix A(n, n + 2);
        for (Index i = 0; i < A.size(); ++i) A.data()[i] = z(gen);
        cases.push_back(A * A.transpose());
        cases.push_back(1e-200 * cases.back());
        cases.push_back(RowMatrix::Zero(n, n));
        RowMatrix S = RowMatrix(n, n);
        for (Index i = 0; i < S.size(); ++i) S.data()[i] = z(gen);
        cases.push_back(S + S.transpose());  // indefinite
        RowMatrix N = cases[cases.size() - 4];
        N(n - 1, 0) = std::numeric_limits<double>::quiet_NaN();
        cases.push_back(N);
    }
    for (const RowMatrix& K : cases) {
        const Index n = K.rows();
        Vector mu(n);
        const bool ok = symmetric_eigenvalues(K, mu);
        const Eigen::SelfAdjointEigenSolver<RowMatrix> ref(K, Eigen::EigenvaluesOnly);
        CHECK(ok == (ref.info() == Eigen::Success));
        if (!ok) continue;
        CHECK(std::memcmp(mu.data(), ref.eigenvalues().data(), sizeof(double) * std::size_t(n)) == 0);
        if (K.allFinite()) CHECK_CLOSE(mu.sum(), K.trace(), 1e-12, 1e-12 * K.cwiseAbs().maxCoeff() * double(n));
    }
}

RELUCORE_TEST_MAIN
