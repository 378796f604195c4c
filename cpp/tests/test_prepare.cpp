// gd/prepare.hpp: the prepare step of every init against references computed
// here by other means: alpha0 against the minimum-norm solution of
// K alpha0 = beta0 from a Jacobi SVD of K (pseudo-inverse), mu_1 against the
// largest singular value of K, beta0 = W0 X^T and W0 = alpha0 X by products,
// the Gram-only Gaussian start against K = L L^T, the all-positive mode against
// positive_start(), and the refusals with their messages (gd/refusal.hpp).
#include "check.hpp"
#include "problems.hpp"

#include "relucore/gd/prepare.hpp"
#include "relucore/gd/refusal.hpp"
#include "relucore/gd/starts.hpp"

#include <Eigen/SVD>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace relucore;
using namespace relucore_test;

namespace {

// (K^+ B^T)^T by a Jacobi SVD, singular values below n eps s_max dropped.
RowMatrix pinv_reference(const RowMatrix& K, const RowMatrix& B) {
    const Eigen::MatrixXd Kd = K;
    Eigen::JacobiSVD<Eigen::MatrixXd> svd(Kd, Eigen::ComputeFullU | Eigen::ComputeFullV);
    const Eigen::VectorXd s = svd.singularValues();
    const double cut = static_cast<double>(K.rows()) * std::numeric_limits<double>::epsilon() * s[0];
    Eigen::VectorXd inv(s.size());
    for (Index i = 0; i < s.size(); ++i) inv[i] = s[i] > cut ? 1.0 / s[i] : 0.0;
    const Eigen::MatrixXd P = svd.matrixV() * inv.asDiagonal() * svd.matrixU().transpose();
    return RowMatrix((P * B.transpose()).transpose());
}

double largest_singular_value(const RowMatrix& K) {
    const Eigen::MatrixXd Kd = K;
    return Eigen::JacobiSVD<Eigen::MatrixXd>(Kd).singularValues()[0];
}

RowMatrix gaussian_weights(Index m, Index d, unsigned seed) {
    std::mt19937_64 gen(seed);
    return gaussian(m, d, gen);
}

struct Out {
    RowMatrix K, beta0, alpha0, W0;
    Vector mu;
    double mu1 = 0;
    Out(Index n, Index m, Index d) : K(n, n), beta0(m, n), alpha0(m, n), W0(m, d), mu(n) { mu.setConstant(-1); }
};

StartCheck run(const RowMatrix& X, const Vector& outer, const PrepareRequest& req, Out& o, double eta = 0) {
    const ConstMatrixRef x(X);
    const Vector y = Vector::Ones(X.rows());
    double tol = -1;
    return prepare_start(&x, y, outer, req, o.K, o.mu, o.mu1, o.beta0, o.alpha0, o.W0, eta, tol);
}

}  // namespace

TEST_CASE("prepare_start: weights given, n <= d (Cholesky of K) and n > d (X^T X) against the pseudo-inverse") {
    for (Index d : {40, 6}) {
        const Index n = 12, m = 3;
        const Problem p = make_problem(n, d, 5);
        Vector outer(m);
        outer << 1.0, -1.0, 0.5;
        Out o(n, m, d);
        o.W0 = gaussian_weights(m, d, 9);
        PrepareRequest req;
        req.solve = StartSolve::least_squares;
        req.beta = StartBeta::from_weights;  // the default step needs mu_1
        CHECK(run(p.X, outer, req, o) == StartCheck::ok);
        CHECK_CLOSE(o.K, p.K, 1e-13, 1e-15);
        CHECK_CLOSE(o.beta0, RowMatrix(o.W0 * p.X.transpose()), 1e-13, 1e-15);
        CHECK_CLOSE(o.alpha0, pinv_reference(p.K, o.beta0), 1e-9, 1e-12);
        CHECK_CLOSE(o.mu1, largest_singular_value(p.K), 1e-12, 0.0);
    }
}

TEST_CASE("prepare_start: beta0 given (positive, disjoint) solves K alpha0 = beta0; W0 = alpha0 X") {
    const Index n = 10, m = 4, d = 30;
    const Problem p = make_problem(n, d, 7);
    Vector outer = Vector::Ones(m);
    Out o(n, m, d);
    o.beta0 = gaussian_weights(m, n, 3).cwiseAbs();
    const RowMatrix beta = o.beta0;
    PrepareRequest req;  // inverse, beta given, a given step and tol: no mu_1
    req.tol = 0;
    CHECK(run(p.X, outer, req, o, 0.1) == StartCheck::ok);
    CHECK(std::isnan(o.mu1));
    CHECK((o.mu.array() == -1).all());  // no spectrum computed
    CHECK((o.beta0.array() == beta.array()).all());
    CHECK_CLOSE(RowMatrix(o.alpha0 * p.K), beta, 1e-10, 1e-14);
    CHECK_CLOSE(o.W0, RowMatrix(o.alpha0 * p.X), 1e-12, 1e-15);
}

TEST_CASE("prepare_start: a given step is checked from tr(K) alone unless the bounds cannot decide") {
    const Index n = 10, m = 2, d = 30;
    const Problem p = make_problem(n, d, 8);
    const Vector outer = Vector::Ones(m);
    Out o(n, m, d);
    o.beta0.setConstant(0.1);
    PrepareRequest req;
    req.tol = 0;  // a given tol: only the step could need mu_1
    CHECK(run(p.X, outer, req, o, 0.1) == StartCheck::ok);
    CHECK(std::isnan(o.mu1));
    // eta between machine eps x the default step and machine eps x its upper bound n / (||s||^2 tr K):
    // the bounds cannot decide, so mu_1 is computed (and the step passes, mu_1 ~ 2.5 > 1.4 here).
    o.beta0.setConstant(0.1);
    CHECK(run(p.X, outer, req, o, 8e-17) == StartCheck::ok);
    CHECK_CLOSE(o.mu1, largest_singular_value(p.K), 1e-12, 0.0);
}

TEST_CASE("prepare_start: Gram-only gaussian start beta0 = (L z)^T, alpha0 = (L^{-T} z)^T") {
    const Index n = 8, m = 3;
    const Problem p = make_problem(n, 20, 11);
    const Vector outer = Vector::Ones(m);
    RowMatrix K = p.K, beta0 = gaussian_weights(m, n, 4), alpha0(m, n), W0(m, 0);
    const RowMatrix z = beta0;
    Vector mu(n);
    double mu1 = 0;
    PrepareRequest req;
    req.gram_given = true;
    req.beta = StartBeta::gaussian_gram;
    const Vector y = Vector::Ones(n);
    double eta = 0, tol = -1;
    CHECK(prepare_start(nullptr, y, outer, req, K, mu, mu1, beta0, alpha0, W0, eta, tol) == StartCheck::ok);
    // beta0 alpha0^T = z^T L^T L^{-T} z = z^T z, and K alpha0^T = beta0^T.
    CHECK_CLOSE(RowMatrix(beta0 * alpha0.transpose()), RowMatrix(z * z.transpose()), 1e-10, 1e-13);
    CHECK_CLOSE(RowMatrix(alpha0 * K), beta0, 1e-10, 1e-13);
    // beta0 beta0^T summed over draws has mean K: here the exact identity beta0^T = L z with L lower triangular.
    const RowMatrix L = K.llt().matrixL();
    CHECK_CLOSE(beta0, RowMatrix((L * z.transpose()).transpose()), 1e-13, 1e-15);
}

TEST_CASE("prepare_start: refusals carry the spectrum") {
    const Index m = 2;
    const Vector outer = Vector::Ones(m);
    {  // n > d with an init that needs K^{-1}
        const Problem p = make_problem(8, 3, 2);
        Out o(8, m, 3);
        o.beta0.setConstant(0.1);
        CHECK(run(p.X, outer, PrepareRequest{}, o) == StartCheck::ill_conditioned);
        CHECK(o.mu[7] > 0 && o.mu[7] / std::abs(o.mu[0]) > 1e12);
    }
    {  // X = 0
        const RowMatrix X = RowMatrix::Zero(4, 5);
        Out o(4, m, 5);
        o.beta0.setConstant(0.1);
        CHECK(run(X, outer, PrepareRequest{}, o) == StartCheck::gram_degenerate);
        CHECK(o.mu[3] == 0);
    }
    {  // K overflows
        const Problem p = make_problem(4, 6, 2);
        Out o(4, m, 6);
        o.beta0.setConstant(0.1);
        CHECK(run(RowMatrix(p.X * 1e200), outer, PrepareRequest{}, o) == StartCheck::gram_not_finite);
    }
    {  // a singular K is fine for the least-squares inits: a repeated example
        Problem p = make_problem(6, 10, 3);
        p.X.row(5) = p.X.row(0);
        const RowMatrix K = gram_matrix(p.X);
        Out o(6, m, 10);
        o.W0 = gaussian_weights(m, 10, 1);
        PrepareRequest req;
        req.solve = StartSolve::least_squares;
        req.beta = StartBeta::from_weights;
        CHECK(run(p.X, outer, req, o) == StartCheck::ok);
        CHECK_CLOSE(o.alpha0, pinv_reference(K, o.beta0), 1e-8, 1e-10);
    }
}

TEST_CASE("prepare_start: the positive mode is positive_start(), bit for bit, with mu_1 written") {
    const Index n = 9, m = 3, d = 40;
    const Problem p = make_problem(n, d, 21);
    Vector outer(m);
    outer << 1.0, -0.5, 2.0;
    Out o(n, m, d);
    PrepareRequest req;
    req.beta = StartBeta::positive;
    double eta = 0, tol = 0;
    const ConstMatrixRef x(p.X);
    CHECK(prepare_start(&x, p.y, outer, req, o.K, o.mu, o.mu1, o.beta0, o.alpha0, o.W0, eta, tol) == StartCheck::ok);
    Out r(n, m, d);
    double eta_r = 0, tol_r = 0;
    CHECK(positive_start(p.X, p.y, outer, StartOptions{}, r.K, r.mu, r.beta0, r.alpha0, r.W0, eta_r, tol_r) ==
          StartCheck::ok);
    CHECK((o.alpha0.array() == r.alpha0.array()).all() && (o.W0.array() == r.W0.array()).all());
    CHECK(eta == eta_r && tol == tol_r && o.mu1 == r.mu[n - 1]);
    CHECK_CLOSE(o.mu1, largest_singular_value(o.K), 1e-12, 0.0);
}

TEST_CASE("prepare_start: scale_test stops where the scale may be out of range, and changes nothing elsewhere") {
    const Index n = 6, m = 2, d = 20;
    const Problem p = make_problem(n, d, 5);
    const Vector outer = Vector::Ones(m);
    for (const StartBeta mode : {StartBeta::positive, StartBeta::given}) {
        PrepareRequest req, tested;
        req.beta = tested.beta = mode;
        tested.scale_test = true;
        Out a(n, m, d), b(n, m, d);
        a.beta0.setConstant(0.1), b.beta0.setConstant(0.1);
        CHECK(run(p.X, outer, req, a) == StartCheck::ok);
        CHECK(run(p.X, outer, tested, b) == StartCheck::ok);  // unit scale: the same start, bit for bit
        CHECK((a.alpha0.array() == b.alpha0.array()).all() && (a.W0.array() == b.W0.array()).all());
        // 2^-200 X: max |x_ij| ~ 2^-200 lies outside +-scale_exponent. The test stops there (K formed, nothing
        // solved); the exact test on max |x| agrees.
        const RowMatrix tiny = p.X * std::ldexp(1.0, -200);
        Out c(n, m, d);
        c.beta0.setConstant(0.1);
        c.alpha0.setConstant(-7);
        CHECK(run(tiny, outer, tested, c) == StartCheck::scale_out_of_range);
        CHECK((c.alpha0.array() == -7).all());
        const ConstMatrixRef t(tiny);
        CHECK(scale_may_be_out_of_range(&t, c.K, true, Vector::Ones(n)));
        int e = 0;
        std::frexp(tiny.cwiseAbs().maxCoeff(), &e);
        CHECK(std::abs(e) > defaults::scale_exponent);
        // Labels far from unit scale alone are flagged too.
        Out l(n, m, d);
        l.beta0.setConstant(0.1);
        const ConstMatrixRef x(p.X);
        double eta = 0, tol = -1;
        const Vector y = Vector::Constant(n, std::ldexp(1.0, 300));
        CHECK(prepare_start(&x, y, outer, tested, l.K, l.mu, l.mu1, l.beta0, l.alpha0, l.W0, eta, tol) ==
              StartCheck::scale_out_of_range);
    }
}

// X and y of a problem divided by the powers of two that put max |x_ij| and max |y_i| in [0.5, 1):
// the unit-scale problem that the exact rescaling of gd/scaling.hpp prepares for any multiple of it.
Problem unit_scale(Problem p) {
    int ex = 0, ey = 0;
    std::frexp(p.X.cwiseAbs().maxCoeff(), &ex);
    std::frexp(p.y.cwiseAbs().maxCoeff(), &ey);
    p.X *= std::ldexp(1.0, -ex);
    p.y *= std::ldexp(1.0, -ey);
    p.K = gram_matrix(p.X);
    return p;
}

// Every entry of a times 2^p, one std::ldexp each (the reference of the exact factors).
RowMatrix times_power(RowMatrix a, int p) {
    for (Index i = 0; i < a.size(); ++i) a.data()[i] = std::ldexp(a.data()[i], p);
    return a;
}

bool same_bits(const RowMatrix& a, const RowMatrix& b) {
    return a.rows() == b.rows() && a.cols() == b.cols() && (a.array() == b.array()).all();
}

TEST_CASE("prepare_start with PrepareRequest::rescale: a far-from-unit problem is prepared on its exact copy") {
    const Index n = 6, m = 3, d = 20;
    const Problem u = unit_scale(make_problem(n, d, 21));
    const Vector outer = Vector::Ones(m);
    const RowMatrix W_given = gaussian_weights(m, d, 3);
    // The caller's problem: X 2^-300 and y 2^200, outside the safe range (+-64); its exponents are a and b,
    // those of the unit-scale problem's maxima being 0.
    const int a = -300, b = 200;
    const RowMatrix X = times_power(u.X, a);
    const Vector y = times_power(RowMatrix(u.y.transpose()), b).transpose();
    for (const StartBeta mode : {StartBeta::positive, StartBeta::given, StartBeta::from_weights}) {
        PrepareRequest ref;  // the unit-scale problem, prepared without the rescaling
        ref.beta = mode;
        ref.solve = mode == StartBeta::from_weights ? StartSolve::least_squares : StartSolve::inverse;
        ref.eps = mode == StartBeta::positive ? 0.0 : -1.0;
        ref.tol = 1e-3;
        Out r(n, m, d);
        r.beta0.setConstant(0.25);
        r.W0 = W_given;
        double eta_r = 0.5, tol_r = -1;
        const ConstMatrixRef xu(u.X);
        CHECK(prepare_start(&xu, u.y, outer, ref, r.K, r.mu, r.mu1, r.beta0, r.alpha0, r.W0, eta_r, tol_r) ==
              StartCheck::ok);
        // The same problem and the numbers it is given (step, tolerance, offsets, weights) in the caller's units.
        PrepareRequest req = ref;
        req.rescale = true;
        req.tol = std::ldexp(1e-3, a + b);  // a gradient norm: 2^(ex + ey)
        Out o(n, m, d);
        o.beta0.setConstant(std::ldexp(0.25, b));        // offsets: as y
        o.W0 = times_power(W_given, b - a);              // weights: 2^(ey - ex)
        double eta = std::ldexp(0.5, -2 * a), tol = -1;  // a step: 4^-ex
        const ConstMatrixRef x(X);
        scaling::RescaledProblem rp;
        CHECK(prepare_start(&x, y, outer, req, o.K, o.mu, o.mu1, o.beta0, o.alpha0, o.W0, eta, tol, rp) ==
              StartCheck::ok);
        CHECK(rp.flagged && rp.e.ex == a && rp.e.ey == b);
        CHECK(same_bits(rp.X, u.X) && (rp.y.array() == u.y.array()).all());
        // Every output is the unit-scale problem's, bit for bit, in the copy's units ...
        CHECK(same_bits(o.K, r.K) && same_bits(o.beta0, r.beta0) && same_bits(o.alpha0, r.alpha0));
        CHECK(same_bits(o.W0, r.W0) && eta == eta_r && tol == tol_r);
        CHECK(o.mu1 == r.mu1 || (std::isnan(o.mu1) && std::isnan(r.mu1)));
        // ... so the caller's start is the unit-scale start times the exact factors of its units.
        CHECK(same_bits(times_power(o.alpha0, scaling::power(scaling::units::ALPHA, rp.e)),
                        times_power(r.alpha0, 2 * -a + b)));
        CHECK(same_bits(times_power(o.W0, scaling::power(scaling::units::W, rp.e)), times_power(r.W0, b - a)));
        CHECK(same_bits(times_power(o.beta0, scaling::power(scaling::units::Y, rp.e)), times_power(r.beta0, b)));
    }
    // Gram-only mode, K 2^-1000 and y 2^300: the dual coordinates (~ 2^1300) overflow in the caller's units,
    // so the start cannot be computed there; on the copy (K rescaled in place by 4^-ex) it is the unit-scale one.
    {
        int ek = 0;
        std::frexp(u.K.cwiseAbs().maxCoeff(), &ek);
        const RowMatrix Ku = times_power(u.K, -2 * scaling::half_exponent(ek));  // ex of Ku is 0
        const int ak = -500, bk = 300;
        PrepareRequest ref;
        ref.gram_given = true;
        RowMatrix K_r = Ku, beta0_r = RowMatrix::Constant(m, n, 0.25), alpha0_r(m, n), W_none(m, 0);
        Vector mu_r(n);
        double mu1_r = 0, eta_r = 0, tol_r = -1;
        CHECK(prepare_start(nullptr, u.y, outer, ref, K_r, mu_r, mu1_r, beta0_r, alpha0_r, W_none, eta_r, tol_r) ==
              StartCheck::ok);
        const Vector yk = times_power(RowMatrix(u.y.transpose()), bk).transpose();
        const RowMatrix K_caller = times_power(Ku, 2 * ak),
                        beta0_caller = RowMatrix::Constant(m, n, std::ldexp(0.25, bk));
        RowMatrix K = K_caller, beta0 = beta0_caller, alpha0(m, n);
        Vector mu(n);
        double mu1 = 0, eta = 0, tol = -1;
        CHECK(prepare_start(nullptr, yk, outer, ref, K, mu, mu1, beta0, alpha0, W_none, eta, tol) ==
              StartCheck::start_not_finite);
        PrepareRequest req = ref;
        req.rescale = true;
        K = K_caller, beta0 = beta0_caller, eta = 0, tol = -1;
        scaling::RescaledProblem rp;
        CHECK(prepare_start(nullptr, yk, outer, req, K, mu, mu1, beta0, alpha0, W_none, eta, tol, rp) ==
              StartCheck::ok);
        CHECK(rp.flagged && rp.e.ex == ak && rp.e.ey == bk && rp.X.size() == 0 && rp.K.size() == 0);
        CHECK(same_bits(K, Ku) && same_bits(beta0, beta0_r) && same_bits(alpha0, alpha0_r));
        CHECK(eta == eta_r && tol == tol_r && mu1 == mu1_r);
        CHECK(scaling::power(scaling::units::ALPHA, rp.e) == -2 * ak + bk);  // alpha = alpha0_r 2^1300 for the caller
    }
}

TEST_CASE("prepare_start with StartOffsets: the default offsets of tiny labels are those of the copy") {
    const Index n = 6, m = 3, d = 20;
    const Problem u = unit_scale(make_problem(n, d, 23));
    const Vector outer = (Vector(m) << 1.0, -1.0, 1.0).finished();
    std::vector<std::int64_t> a(static_cast<std::size_t>(n));
    CHECK(default_assignment(u.y.data(), n, outer.data(), m, a.data()) == AssignmentCheck::ok);
    StartOffsets disjoint;  // default offsets y_min / (C_alpha m)
    disjoint.assignment = a.data();
    disjoint.C_g = 2.0;
    PrepareRequest req;
    req.C_alpha = 1e8;  // the default offset of y 2^-1020 is subnormal in the caller's units
    const ConstMatrixRef xu(u.X);
    Out r(n, m, d), o(n, m, d);
    double eta_r = 0, tol_r = -1, eta = 0, tol = -1;
    scaling::RescaledProblem none, rp;
    CHECK(prepare_start(&xu, u.y, outer, req, r.K, r.mu, r.mu1, r.beta0, r.alpha0, r.W0, eta_r, tol_r, none,
                        &disjoint) == StartCheck::ok);
    // The reference: beta0 = eps + (A y) / C_g of the unit-scale labels, written out here.
    const double eps = u.y.cwiseAbs().minCoeff() / (1e8 * m);
    for (Index k = 0; k < m; ++k)
        for (Index i = 0; i < n; ++i) {
            const bool other = a[static_cast<std::size_t>(i)] != k && outer[k] * u.y[i] > 0;
            CHECK(r.beta0(k, i) == (other ? eps + -(u.y[i] > 0 ? 1.0 : -1.0) * u.y[i] / 2.0 : eps));
        }
    const int j = -1020;
    const Vector y = times_power(RowMatrix(u.y.transpose()), j).transpose();
    req.rescale = true;
    CHECK(prepare_start(&xu, y, outer, req, o.K, o.mu, o.mu1, o.beta0, o.alpha0, o.W0, eta, tol, rp, &disjoint) ==
          StartCheck::ok);
    CHECK(rp.e.ex == 0 && rp.e.ey == j);
    CHECK(same_bits(o.beta0, r.beta0) && same_bits(o.alpha0, r.alpha0) && same_bits(o.W0, r.W0) && eta == eta_r);
    // In the caller's units the same offsets lose their bits in the subnormals.
    Out c(n, m, d);
    req.rescale = false;
    eta = 0, tol = -1;
    prepare_start(&xu, y, outer, req, c.K, c.mu, c.mu1, c.beta0, c.alpha0, c.W0, eta, tol, rp, &disjoint);
    CHECK(!same_bits(times_power(c.beta0, -j), r.beta0));
}

TEST_CASE("prepare_start with PrepareRequest::rescale: unflagged problems keep their bits, refusals come first") {
    const Index n = 6, m = 2, d = 20;
    const Problem p = make_problem(n, d, 8);
    const Vector outer = Vector::Ones(m);
    const ConstMatrixRef x(p.X);
    PrepareRequest req, rescaling;
    rescaling.rescale = true;
    Out o(n, m, d), q(n, m, d);
    o.beta0.setConstant(0.1), q.beta0.setConstant(0.1);
    double eta = 0, tol = -1, eta_q = 0, tol_q = -1;
    scaling::RescaledProblem rp;
    CHECK(prepare_start(&x, p.y, outer, req, o.K, o.mu, o.mu1, o.beta0, o.alpha0, o.W0, eta, tol) == StartCheck::ok);
    CHECK(prepare_start(&x, p.y, outer, rescaling, q.K, q.mu, q.mu1, q.beta0, q.alpha0, q.W0, eta_q, tol_q, rp) ==
          StartCheck::ok);
    CHECK(!rp.flagged && !scaling::rescaled(rp.e) && rp.X.size() == 0 && rp.y.size() == 0);
    CHECK(same_bits(o.alpha0, q.alpha0) && same_bits(o.W0, q.W0) && eta == eta_q && tol == tol_q);
    // Flagged by the O(n) test (max_i K_ii < d 2^-129) yet within the range (max |x_ij| ~ 2^-60): unscaled.
    RowMatrix sparse = RowMatrix::Zero(n, 1024);
    for (Index i = 0; i < n; ++i) sparse(i, i) = std::ldexp(1.0 + 0.1 * static_cast<double>(i), -61);
    const ConstMatrixRef xs(sparse);
    Out s(n, m, 1024), t(n, m, 1024);
    s.beta0.setConstant(0.1), t.beta0.setConstant(0.1);
    eta = 0, tol = -1, eta_q = 0, tol_q = -1;
    CHECK(prepare_start(&xs, p.y, outer, req, s.K, s.mu, s.mu1, s.beta0, s.alpha0, s.W0, eta, tol) == StartCheck::ok);
    CHECK(prepare_start(&xs, p.y, outer, rescaling, t.K, t.mu, t.mu1, t.beta0, t.alpha0, t.W0, eta_q, tol_q, rp) ==
          StartCheck::ok);
    CHECK(rp.flagged && !scaling::rescaled(rp.e) && same_bits(s.alpha0, t.alpha0) && eta == eta_q);
    // Out of range: a model that is not homogeneous is refused; a given step that leaves float64 is refused.
    const RowMatrix big = p.X * std::ldexp(1.0, 400);
    const ConstMatrixRef xb(big);
    PrepareRequest logistic = rescaling;
    logistic.not_scale_free = "loss='logistic'";
    eta = 0;
    const StartCheck c =
        prepare_start(&xb, p.y, outer, logistic, q.K, q.mu, q.mu1, q.beta0, q.alpha0, q.W0, eta, tol, rp);
    CHECK(c == StartCheck::scale_not_free);
    RefusedProblem refused;
    const ConstVectorRef yr(p.y);
    refused.X = &xb, refused.y = &yr, refused.e = rp.e;
    CHECK(refusal_message(c, refused, logistic) == scaling::out_of_range_message("loss='logistic'", rp.e, false, -1));
    eta = 1e300;  // 1e300 4^ex overflows with ex ~ 400
    q.beta0.setConstant(0.1);
    CHECK(prepare_start(&xb, p.y, outer, rescaling, q.K, q.mu, q.mu1, q.beta0, q.alpha0, q.W0, eta, tol, rp) ==
          StartCheck::eta_out_of_range);
    CHECK(eta == 1e300);
    refused.eta = eta, refused.e = rp.e;
    CHECK(refusal_message(StartCheck::eta_out_of_range, refused, rescaling).rfind("eta = 1e+300 is out of range", 0) ==
          0);
}

TEST_CASE("refusal_message: each refusal in the words of docs/errors.md") {
    const Index n = 4, m = 2, d = 30;
    const Vector outer = Vector::Ones(m);
    PrepareRequest req;
    req.beta = StartBeta::positive;
    // Prepares (X, y, outer) in the positive mode and returns the message of its refusal ("" when none).
    auto message = [&](const RowMatrix& X, const Vector& y, const Vector& a, double eta) {
        Out o(n, a.size(), d);
        double tol = 0;
        const ConstMatrixRef x(X);
        const StartCheck c = prepare_start(&x, y, a, req, o.K, o.mu, o.mu1, o.beta0, o.alpha0, o.W0, eta, tol);
        if (c == StartCheck::ok) return std::string();
        const ConstVectorRef yr(y), ar(a), mu(o.mu);
        const ConstMatrixRef K(o.K), b(o.beta0), al(o.alpha0), w(o.W0);
        RefusedProblem rp;
        rp.X = &x, rp.y = &yr, rp.outer = &ar, rp.K = &K, rp.mu = &mu, rp.beta0 = &b, rp.alpha0 = &al, rp.W0 = &w;
        rp.eta = eta;
        return refusal_message(c, rp, req);
    };
    const Problem p = make_problem(n, d, 4);
    CHECK(message(p.X, p.y, outer, 0).empty());
    Vector y_nan = p.y;
    y_nan[1] = std::nan("");
    CHECK(message(p.X, y_nan, outer, 0) == "Input y contains NaN.");
    CHECK(message(p.X, p.y * 1e200, outer, 0).rfind("y is too large: the loss 1/2 ||y||^2 overflows", 0) == 0);
    CHECK(message(p.X, p.y, Vector::Zero(m), 0) == "signs (outer-layer weights) must be non-zero");
    RowMatrix X_inf = p.X;
    X_inf(0, 0) = std::numeric_limits<double>::infinity();
    CHECK(message(X_inf, p.y, outer, 0) == "Input X contains infinity.");
    CHECK(message(RowMatrix(p.X * 1e160), p.y, outer, 0).rfind("X is too large: K = X X^T overflows float64", 0) == 0);
    CHECK(message(RowMatrix::Zero(n, d), p.y, outer, 0) ==
          "X is all zeros (K = X X^T vanishes); nothing can be trained");
    RowMatrix X_dup = p.X;
    X_dup.row(3) = X_dup.row(0);
    const std::string dup = message(X_dup, p.y, outer, 0);
    CHECK(dup.rfind("X is rank-deficient or badly conditioned: cond(K) = ", 0) == 0);
    CHECK(dup.find("(n=4, d=30); init='positive' needs K = X X^T invertible") != std::string::npos);
    CHECK(message(p.X, p.y, outer, 1e-300).rfind("eta = 1e-300 is too small: it is below machine epsilon", 0) == 0);
    req.C_alpha = 1e-320;
    CHECK(message(p.X, p.y, outer, 0).rfind("C_alpha = 1e-320 is too small", 0) == 0);
}

TEST_CASE("sum_of_squares: numpy's pairwise order, against a long double sum") {
    std::mt19937_64 gen(17);
    std::normal_distribution<double> z(0.0, 1.0);
    for (Index n : {1, 7, 8, 9, 16, 127, 128, 129, 300, 1000}) {
        Vector v(n);
        long double ref = 0;
        for (Index i = 0; i < n; ++i) {
            v[i] = z(gen);
            ref += static_cast<long double>(v[i]) * v[i];
        }
        const double s = sum_of_squares(v);
        CHECK(std::abs(s - static_cast<double>(ref)) <= 1e-14 * static_cast<double>(ref));
    }
    // The order itself: eight accumulators summed as ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)).
    // Squares 1e16, 0, 1, 1: pairwise 1e16 + (1 + 1) is exact, in order each + 1 rounds back to 1e16.
    Vector v = Vector::Zero(8);
    v[0] = 1e8, v[2] = 1.0, v[3] = 1.0;
    CHECK(sum_of_squares(v) == 1e16 + 2.0);
    CHECK(((1e16 + 0.0) + 1.0) + 1.0 == 1e16);
}

TEST_CASE("prepare_start: every mode writes the default step and tolerance and checks the start") {
    const Index n = 10, m = 3, d = 30;
    const Problem p = make_problem(n, d, 31);
    Vector outer(m);
    outer << 1.0, -0.5, 2.0;
    const ConstMatrixRef x(p.X);
    PrepareRequest req;
    req.solve = StartSolve::least_squares;
    req.beta = StartBeta::from_weights;
    Out o(n, m, d);
    o.W0 = 0.1 * gaussian_weights(m, d, 5);
    double eta = 0, tol = -1;
    CHECK(prepare_start(&x, p.y, outer, req, o.K, o.mu, o.mu1, o.beta0, o.alpha0, o.W0, eta, tol) == StartCheck::ok);
    const double mu1 = largest_singular_value(p.K);
    CHECK_CLOSE(eta, 1.0 / (outer.squaredNorm() * mu1), 1e-12, 0.0);
    CHECK_CLOSE(tol, defaults::tol_factor * std::sqrt(mu1) * p.y.norm(), 1e-12, 0.0);
    // y = 0: the tolerance takes the scale of the starting predictions h0 = sum_k s_k relu(beta0_k).
    Vector h0 = Vector::Zero(n);
    for (Index k = 0; k < m; ++k) h0 += outer[k] * RowMatrix(o.beta0).row(k).transpose().cwiseMax(0.0);
    const Vector y0 = Vector::Zero(n);
    eta = 0, tol = -1;
    CHECK(prepare_start(&x, y0, outer, req, o.K, o.mu, o.mu1, o.beta0, o.alpha0, o.W0, eta, tol) == StartCheck::ok);
    CHECK_CLOSE(tol, defaults::tol_factor * std::sqrt(mu1) * h0.norm(), 1e-12, 0.0);
    // The logistic loss: L = 1/(4n), tol 0.
    req.loss = Loss::logistic;
    eta = 0, tol = -1;
    CHECK(prepare_start(&x, p.y, outer, req, o.K, o.mu, o.mu1, o.beta0, o.alpha0, o.W0, eta, tol) == StartCheck::ok);
    CHECK_CLOSE(eta, 4.0 * n / (outer.squaredNorm() * mu1), 1e-12, 0.0);
    CHECK(tol == 0);
    req.loss = Loss::square;
    // A step below machine eps times the default, starting weights that overflow, labels whose loss overflows.
    eta = 1e-300, tol = -1;
    CHECK(prepare_start(&x, p.y, outer, req, o.K, o.mu, o.mu1, o.beta0, o.alpha0, o.W0, eta, tol) ==
          StartCheck::step_invalid);
    o.W0.setConstant(1e300);
    eta = 0, tol = -1;
    CHECK(prepare_start(&x, p.y, outer, req, o.K, o.mu, o.mu1, o.beta0, o.alpha0, o.W0, eta, tol) ==
          StartCheck::start_not_finite);
    o.W0 = 0.1 * gaussian_weights(m, d, 5);
    const Vector y_big = p.y * 1e160;
    CHECK(prepare_start(&x, y_big, outer, req, o.K, o.mu, o.mu1, o.beta0, o.alpha0, o.W0, eta, tol) ==
          StartCheck::labels_invalid);
    // complete = false: the start alone (no step written, no checks).
    req.complete = false;
    eta = 0, tol = -7;
    CHECK(prepare_start(&x, y_big, outer, req, o.K, o.mu, o.mu1, o.beta0, o.alpha0, o.W0, eta, tol) == StartCheck::ok);
    CHECK(eta == 0 && tol == -7 && std::isnan(o.mu1));
}

TEST_CASE("refusal_message: the start's and the step's words for the other inits") {
    const Index n = 5, m = 2, d = 20;
    const Problem p = make_problem(n, d, 41);
    const Vector outer = Vector::Ones(m);
    RowMatrix beta0 = RowMatrix::Constant(m, n, 0.1), alpha0 = RowMatrix::Zero(m, n), W0 = RowMatrix::Zero(m, d);
    alpha0(1, 2) = std::numeric_limits<double>::infinity();
    const ConstMatrixRef x(p.X), K(p.K), b(beta0), al(alpha0), w(W0);
    const ConstVectorRef yr(p.y), ar(outer);
    RefusedProblem rp;
    rp.X = &x, rp.y = &yr, rp.outer = &ar, rp.K = &K, rp.beta0 = &b, rp.alpha0 = &al, rp.W0 = &w;
    rp.init = "disjoint";
    PrepareRequest req;
    req.eps = 0;  // the default offsets
    CHECK(refusal_message(StartCheck::start_not_finite, rp, req) ==
          "the starting point is too large: alpha0 overflows float64 (check eps, C_g, C_alpha (default eps = "
          "y_min / (C_alpha m)), signs and the scale of X; max |beta0| = 0.1)");
    rp.init = "gaussian";
    CHECK(refusal_message(StartCheck::start_not_finite, rp, req) ==
          "the starting point is too large: alpha0 overflows float64 (check init_scale, signs and the scale of X; "
          "max |beta0| = 0.1)");
    rp.mu1 = 1e-320;  // the default step overflows
    req.gram_given = true;
    CHECK(
        refusal_message(StartCheck::step_invalid, rp, req)
            .rfind(
                "the default step 1/(||s||^2 mu_1(K)) overflows (||s||^2 = 2, mu_1(K) = 1e-320): signs or gram are too "
                "small",
                0) == 0);
}

TEST_CASE("all_finite: Eigen's allFinite() on every placement of NaN and infinity, and on strided views") {
    std::mt19937_64 gen(7);
    std::normal_distribution<double> z;
    const double bad[] = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                          -std::numeric_limits<double>::infinity()};
    for (const Index rows : {1, 2, 3}) {
        for (const Index cols : {1, 7, 33}) {
            RowMatrix a(rows, cols);
            for (Index i = 0; i < a.size(); ++i) a.data()[i] = 1e300 * z(gen);  // huge, finite: a * 0 is still 0
            CHECK(all_finite(a) && a.allFinite());
            for (Index i = 0; i < a.size(); ++i) {
                for (const double v : bad) {
                    RowMatrix b = a;
                    b.data()[i] = v;
                    CHECK(!all_finite(b) && !b.allFinite());
                    // A view without its last column (outer stride != cols) sees the bad entry or not.
                    const ConstMatrixRef view(b.leftCols(cols - 1));
                    CHECK(all_finite(view) == view.allFinite());
                }
            }
        }
    }
    CHECK(all_finite(RowMatrix(0, 4)));
}

RELUCORE_TEST_MAIN
