// sweep/sweep_gram.hpp: the extreme eigenvalues against a Jacobi SVD, and one
// whole Gram-mode trial against its pieces redone independently: the step and
// tolerance by their formulas, the run by the weight-space engine (DenseGD)
// from the same start, and the gap against the minimum-norm dual solved by
// brute force over its faces.
#include "check.hpp"
#include "problems.hpp"

#include "relucore/gd/prepare.hpp"

#include <Eigen/SVD>

#include <cmath>
#include <limits>

using namespace relucore;
using namespace relucore_test;

TEST_CASE("extreme_eigenvalues: Laguerre on the tridiagonal form agrees with a Jacobi SVD") {
    for (Index n : {1, 2, 5, 12, 40}) {
        const Problem p = make_problem(n, 3 * n + 10, 100 + static_cast<unsigned>(n));
        double mu_max = 0, mu_min = 0;
        extreme_eigenvalues(p.K, mu_max, mu_min);
        const Vector sv = Eigen::JacobiSVD<Eigen::MatrixXd>(Eigen::MatrixXd(p.K)).singularValues();
        CHECK_CLOSE(mu_max, sv[0], 1e-12, 1e-15);
        CHECK_CLOSE(mu_min, sv[n - 1], 1e-10, 1e-15);
    }
}

TEST_CASE("extreme_eigenvalues: K scaled by a power of two far from 1 gives the ends scaled by it") {
    // In [2^-300, 2^300] nothing is rescaled; outside, K is brought back in range exactly.
    for (Index n : {2, 10, 33}) {
        const Problem p = make_problem(n, n + 12, 500 + static_cast<unsigned>(n));
        double mu_max = 0, mu_min = 0;
        extreme_eigenvalues(p.K, mu_max, mu_min);
        for (int e : {-1000, -700, -400, -150, 150, 400, 900}) {
            const RowMatrix Ks = p.K.unaryExpr([e](double v) { return std::ldexp(v, e); });
            double s_max = 0, s_min = 0;
            extreme_eigenvalues(Ks, s_max, s_min);
            CHECK(s_max == std::ldexp(mu_max, e));
            CHECK(s_min == std::ldexp(mu_min, e));
        }
    }
}

TEST_CASE("extreme_eigenvalues: the two ends run interleaved give the bits of each end run alone") {
    for (Index n : {2, 3, 7, 10, 16, 33}) {
        for (unsigned seed : {1u, 2u, 3u}) {
            Problem p = make_problem(n, n + static_cast<Index>(seed) * 4, 300 + seed * 17 + static_cast<unsigned>(n));
            if (seed == 3) p.K *= 1e-30;  // away from 1 in scale, inside the range that is not rescaled
            Eigen::MatrixXd T = p.K;
            Vector diag(n), sub(n - 1), hc(n - 1);
            Eigen::internal::tridiagonalization_inplace(T, diag, sub, hc, false);
            double mu_max = 0, mu_min = 0;
            extreme_eigenvalues(p.K, mu_max, mu_min);
            CHECK(mu_max == detail::laguerre_extreme_eigenvalue(diag, sub, true));
            CHECK(mu_min == detail::laguerre_extreme_eigenvalue(diag, sub, false));
            CHECK(mu_min > 0 && mu_min < mu_max);
        }
    }
}

TEST_CASE("gram_trial: step, tolerance, run and gap against independent recomputations") {
    const Index n = 10, d = 300;
    const Problem p = make_problem(n, d, 44);
    for (double sign : {1.0, -1.0}) {
        GramTrialSettings st;
        st.sign = sign;
        st.norm1 = 1.0;
        const GramTrialResult r = gram_trial(p.K, p.y, st);
        CHECK(r.error == GramTrialError::none && r.qp_status == Status::optimal);
        const Vector sv = Eigen::JacobiSVD<Eigen::MatrixXd>(Eigen::MatrixXd(p.K)).singularValues();
        CHECK_CLOSE(r.mu1, sv[0], 1e-12, 0.0);
        CHECK_CLOSE(r.cond, sv[0] / sv[n - 1], 1e-9, 0.0);
        CHECK_CLOSE(r.eta, 1.0 / sv[0], 1e-12, 0.0);
        CHECK_CLOSE(r.tol, defaults::tol_factor * std::sqrt(sv[0]) * p.y.norm(), 1e-12, 0.0);
        std::int64_t n_pos = 0;
        for (Index i = 0; i < n; ++i) n_pos += p.y[i] > 0;
        CHECK(r.n_pos == n_pos && r.n_neg == n - n_pos);
        CHECK(r.run.status == Status::converged);
        CHECK(r.certificate < 1e-10);

        // The same start and steps in weight space: w0 = X^T K^{-1} eps, alpha0 = K^{-1} eps.
        const double eps = default_offset(p.y, 1, defaults::C_alpha);
        const RowMatrix beta0 = RowMatrix::Constant(1, n, eps);
        const RowMatrix alpha0 = p.K.llt().solve(beta0.transpose()).transpose();
        GDSettings s;
        s.eta = r.eta;
        s.tol = r.tol;
        s.max_steps = st.max_steps;
        DenseGD::Start start;
        start.outer = Vector::Constant(1, sign);
        start.W = alpha0 * p.X;
        start.alpha = alpha0;
        DenseGD dense(p.X, p.y, std::move(start), s);
        const RunSummary dr = dense.run();
        CHECK(dr.status == Status::converged);
        CHECK(std::llabs(dr.nit - r.run.nit) <= 1);
        CHECK_CLOSE(dr.loss, r.run.loss, 1e-8, 1e-14);
        // The gap ||w_GD - w*|| with w* from the brute-force dual and w_GD = X^T alpha (W0 = alpha0 X).
        const Vector z = minnorm_single_brute_force(p.K, p.y, sign);
        const Vector w_star = p.X.transpose() * z;
        const double gap = (dense.W().row(0).transpose() - w_star).norm();
        std::printf("  sign %+.0f: gap %.6e (trial) vs %.6e (dense engine + brute-force w*), %lld steps\n", sign, r.gap,
                    gap, static_cast<long long>(r.run.nit));
        CHECK_CLOSE(r.gap, gap, 1e-6, 1e-12);
        const double n_off = static_cast<double>(sign > 0 ? r.n_neg : r.n_pos);
        CHECK_CLOSE(r.gap_normalized, gap * std::sqrt(st.norm1 / n_off), 1e-6, 1e-12);
    }
}

TEST_CASE(
    "gram_trial: every SIMD cap gives the same trial, bit for bit; ThreadCap nests and restores (level, step_level)") {
    const int top = simd::level();
    CHECK(simd::step_level() == top);  // RELUCORE_SIMD unchanged since the process started
    {
        const simd::ThreadCap outer(simd::kAvx);
        CHECK(simd::level() == std::min(top, simd::kAvx));
        CHECK(simd::step_level() == std::min(top, simd::kAvx));
        {
            const simd::ThreadCap inner(simd::kAvx512);  // a wider cap inside does not widen
            CHECK(simd::level() == std::min(top, simd::kAvx));
            const simd::ThreadCap narrow(simd::kScalar);
            CHECK(simd::level() == simd::kScalar && simd::step_level() == simd::kScalar);
        }
        CHECK(simd::level() == std::min(top, simd::kAvx));
    }
    CHECK(simd::level() == top && simd::step_level() == top);
    for (Index n : {7, 10, 16, 24}) {
        const Problem p = make_problem(n, 3 * n, 70 + static_cast<unsigned>(n));
        GramTrialSettings st;
        st.simd_level = simd::kAvx512;
        const GramTrialResult wide = gram_trial(p.K, p.y, st);
        CHECK(wide.error == GramTrialError::none && wide.run.nit > 5);
        for (int level : {simd::kAvx, simd::kSse2, simd::kScalar}) {
            st.simd_level = level;
            const GramTrialResult r = gram_trial(p.K, p.y, st);
            CHECK(r.run.nit == wide.run.nit && r.run.loss == wide.run.loss && r.run.grad_norm == wide.run.grad_norm);
            CHECK(r.run.pattern_stable_step == wide.run.pattern_stable_step && r.gap == wide.gap);
            CHECK(r.mu1 == wide.mu1 && r.eta == wide.eta && r.tol == wide.tol);
        }
        CHECK(simd::level() == top);  // the trial's cap ends with it
    }
}

TEST_CASE("gram_trial: a singular K is refused; minnorm = false leaves the gap NaN") {
    Problem p = make_problem(6, 20, 3);
    RowMatrix X = p.X;
    X.row(4) = X.row(2);
    const RowMatrix K = gram_matrix(X);
    CHECK(gram_trial(K, p.y, GramTrialSettings{}).error == GramTrialError::ill_conditioned);
    GramTrialSettings st;
    st.minnorm = false;
    const GramTrialResult r = gram_trial(p.K, p.y, st);
    CHECK(r.error == GramTrialError::none && std::isnan(r.gap) && std::isnan(r.certificate));
}

TEST_CASE("gram_trial: train's start checks refuse what prepare_start refuses") {
    const Problem p = make_problem(6, 20, 5);
    // A given step below machine epsilon times the default: prepare's step_invalid, on the same K, y.
    GramTrialSettings st;
    st.eta = 1e-300;
    CHECK(gram_trial(p.K, p.y, st).error == GramTrialError::step_invalid);
    PrepareRequest req;
    req.gram_given = true;
    RowMatrix K = p.K, beta0 = RowMatrix::Constant(1, 6, default_offset(p.y, 1, req.C_alpha)), alpha0(1, 6), W0(1, 0);
    Vector mu(6);
    const Vector outer = Vector::Constant(1, 1.0);
    double mu1 = 0, eta = 1e-300, tol = 0;
    CHECK(prepare_start(nullptr, p.y, outer, req, K, mu, mu1, beta0, alpha0, W0, eta, tol) == StartCheck::step_invalid);
    // The default step for the same K: prepare's eta (LAPACK's mu_1) and the trial's (Laguerre's) agree to rounding.
    eta = 0;
    CHECK(prepare_start(nullptr, p.y, outer, req, K, mu, mu1, beta0, alpha0, W0, eta, tol) == StartCheck::ok);
    const GramTrialResult r = gram_trial(p.K, p.y, GramTrialSettings{});
    CHECK_CLOSE(r.eta, eta, 1e-13, 0.0);
    CHECK_CLOSE(r.tol, tol, 1e-13, 0.0);
    // Labels whose loss overflows: labels_usable refuses them before any work.
    Vector y = p.y;
    y[0] = 1e300;
    CHECK(gram_trial(p.K, y, GramTrialSettings{}).error == GramTrialError::labels_invalid);
}

RELUCORE_TEST_MAIN
