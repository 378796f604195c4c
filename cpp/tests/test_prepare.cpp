// gd/prepare.hpp: the prepare step of every init against references computed
// here by other means: alpha0 against the minimum-norm solution of
// K alpha0 = beta0 from a Jacobi SVD of K (pseudo-inverse), mu_1 against the
// largest singular value of K, beta0 = W0 X^T and W0 = alpha0 X by products,
// the Gram-only Gaussian start against K = L L^T, and the refusals.
#include "check.hpp"
#include "problems.hpp"

#include "relucore/gd/prepare.hpp"

#include <Eigen/SVD>

#include <cmath>
#include <limits>
#include <random>

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
    std::normal_distribution<double> z(0.0, 1.0);
    RowMatrix W(m, d);
    for (Index i = 0; i < m; ++i)
        for (Index j = 0; j < d; ++j) W(i, j) = z(gen);
    return W;
}

struct Out {
    RowMatrix K, beta0, alpha0, W0;
    Vector mu;
    double mu1 = 0;
    Out(Index n, Index m, Index d) : K(n, n), beta0(m, n), alpha0(m, n), W0(m, d), mu(n) { mu.setConstant(-1); }
};

StartCheck run(const RowMatrix& X, const Vector& outer, const PrepareRequest& req, Out& o) {
    const ConstMatrixRef x(X);
    return prepare_start(&x, outer, req, o.K, o.mu, o.mu1, o.beta0, o.alpha0, o.W0);
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
        req.beta = StartBeta::from_weights;
        req.need_mu1 = true;
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
    PrepareRequest req;  // inverse, beta given, no mu_1
    CHECK(run(p.X, outer, req, o) == StartCheck::ok);
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
    req.eta = 0.1;
    CHECK(run(p.X, outer, req, o) == StartCheck::ok);
    CHECK(std::isnan(o.mu1));
    req.eta = 1e-17;  // near machine eps x the default step: mu_1 is computed
    o.beta0.setConstant(0.1);
    CHECK(run(p.X, outer, req, o) == StartCheck::ok);
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
    CHECK(prepare_start(nullptr, outer, req, K, mu, mu1, beta0, alpha0, W0) == StartCheck::ok);
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

RELUCORE_TEST_MAIN
