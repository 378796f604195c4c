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
#include <iterator>
#include <limits>
#include <string>

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
    const GramTrialResult bad = gram_trial(K, p.y, GramTrialSettings{});
    CHECK(bad.error == GramTrialError::ill_conditioned);
    // prepare's words for a given gram (refusal_message's spectrum text), n and no d
    CHECK(bad.message.rfind("X is rank-deficient or badly conditioned: cond(K) = ", 0) == 0);
    CHECK(bad.message.find("(n=6); init='positive' needs K = X X^T invertible") != std::string::npos);
    CHECK(gram_trial_error_text(bad) == "ValueError: " + bad.message);
    GramTrialSettings st;
    st.minnorm = false;
    const GramTrialResult r = gram_trial(p.K, p.y, st);
    CHECK(r.error == GramTrialError::none && std::isnan(r.gap) && std::isnan(r.certificate));
    CHECK(r.message.empty() && gram_trial_error_text(r).empty());
}

TEST_CASE("gram_trial_error_table: one row per code, in order, with the exception of the general path") {
    CHECK(std::size(gram_trial_error_table) == 7);
    for (std::size_t i = 0; i < std::size(gram_trial_error_table); ++i) {
        const GramTrialErrorInfo& row = gram_trial_error_table[i];
        CHECK(static_cast<std::size_t>(row.error) == i);
        CHECK(&gram_trial_error_info(row.error) == &row);
        CHECK(std::string(row.meaning).size() > 0);
        CHECK(std::string(row.exception) == (i == 0 ? "" : i == 2 ? "RuntimeError" : "ValueError"));
    }
    CHECK(std::string(gram_trial_error_info(GramTrialError::step_invalid).name) == "step_invalid");
}

TEST_CASE("gram_trial: train's start checks refuse what prepare_start refuses") {
    const Problem p = make_problem(6, 20, 5);
    // A given step below machine epsilon times the default: prepare's step_invalid, on the same K, y.
    GramTrialSettings st;
    st.eta = 1e-300;
    const GramTrialResult refused = gram_trial(p.K, p.y, st);
    CHECK(refused.error == GramTrialError::step_invalid);
    PrepareRequest req;
    req.gram_given = true;
    RowMatrix K = p.K, beta0 = RowMatrix::Constant(1, 6, default_offset(p.y, 1, req.C_alpha)), alpha0(1, 6), W0(1, 0);
    Vector mu(6);
    const Vector outer = Vector::Constant(1, 1.0);
    double mu1 = 0, eta = 1e-300, tol = 0;
    CHECK(prepare_start(nullptr, p.y, outer, req, K, mu, mu1, beta0, alpha0, W0, eta, tol) == StartCheck::step_invalid);
    {
        // The trial's text is prepare's refusal text for the same problem (mu_1 to rounding, printed to 3 digits).
        const ConstVectorRef yr(p.y), outer_r(outer), mu_r(mu);
        RefusedProblem rp;
        rp.y = &yr;
        rp.outer = &outer_r;
        rp.mu = &mu_r;
        rp.eta = 1e-300;
        req.eps = beta0(0, 0);
        CHECK(refused.message == refusal_message(StartCheck::step_invalid, rp, req));
        CHECK(refused.message.rfind("eta = 1e-300 is too small", 0) == 0);
        req.eps = 0;
    }
    // The default step for the same K: prepare's eta (LAPACK's mu_1) and the trial's (Laguerre's) agree to rounding.
    eta = 0;
    CHECK(prepare_start(nullptr, p.y, outer, req, K, mu, mu1, beta0, alpha0, W0, eta, tol) == StartCheck::ok);
    const GramTrialResult r = gram_trial(p.K, p.y, GramTrialSettings{});
    CHECK_CLOSE(r.eta, eta, 1e-13, 0.0);
    CHECK_CLOSE(r.tol, tol, 1e-13, 0.0);
    // Labels whose loss overflows: labels_usable refuses them before any work.
    Vector y = p.y;
    y[0] = 1e300;
    const GramTrialResult labels = gram_trial(p.K, y, GramTrialSettings{});
    CHECK(labels.error == GramTrialError::labels_invalid);
    CHECK(labels.message == "y is too large: the loss 1/2 ||y||^2 overflows float64 (max |y_i| = 1e+300); rescale y");
    // A start whose loss overflows: start_not_finite's text for a given eps.
    GramTrialSettings huge;
    huge.eps = 1e300;
    const GramTrialResult start = gram_trial(p.K, p.y, huge);
    CHECK(start.error == GramTrialError::not_finite);
    CHECK(start.message ==
          "the starting point is too large: its loss overflows float64 (check eps, signs and the scale of X)");
}

RELUCORE_TEST_MAIN
