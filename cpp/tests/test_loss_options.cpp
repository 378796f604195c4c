// The engines' output bias and loss weights (EngineBase::set_output_bias, set_loss_weights;
// docs/math.md §2): both engines against a plain two-layer GD loop written here, the
// refusals, and the plain code when neither is set.
#include "check.hpp"
#include "problems.hpp"

#include <cmath>
#include <stdexcept>

using namespace relucore;
using namespace relucore_test;

namespace {

// h = c0 + sum_k a_k relu(w_k^T x), loss 1/2 sum_i w_i (h_i - y_i)^2; W, a and c0 moved at once.
void reference(const RowMatrix& X, const Vector& y, const Vector& w, RowMatrix& W, Vector& a, double& c0, double eta,
               int steps) {
    const Index n = X.rows(), m = W.rows();
    for (int t = 0; t < steps; ++t) {
        const RowMatrix pre = W * X.transpose();
        Vector g(n);
        for (Index i = 0; i < n; ++i) {
            double h = c0;
            for (Index k = 0; k < m; ++k) h += a[k] * std::max(pre(k, i), 0.0);
            g[i] = w[i] * (h - y[i]);
        }
        RowMatrix gW = RowMatrix::Zero(m, X.cols());
        Vector ga = Vector::Zero(m);
        for (Index k = 0; k < m; ++k)
            for (Index i = 0; i < n; ++i) {
                ga[k] += std::max(pre(k, i), 0.0) * g[i];
                if (pre(k, i) > 0) gW.row(k) += a[k] * g[i] * X.row(i);
            }
        W -= eta * gW;
        a -= eta * ga;
        c0 -= eta * g.sum();
    }
}

}  // namespace

TEST_CASE("output bias and loss weights: both engines take the reference step") {
    const Problem p = make_problem(9, 30, 5);
    std::mt19937_64 gen(4);
    const Index m = 4, n = p.X.rows();
    Vector a0(m);
    a0 << 0.8, -1.2, 0.0, -0.3;  // a zero outer weight moves with train_outer
    const RowMatrix W0 = gaussian(m, p.X.cols(), gen, 0.3);
    const RowMatrix beta0 = W0 * p.X.transpose();
    const RowMatrix alpha0 = RowMatrix::Zero(m, n);
    Vector w(n);
    for (Index i = 0; i < n; ++i) w[i] = 0.25 * double(i % 4);  // example 0, 4, 8 out of the loss
    GDSettings s = settings_for(0.1, 200);
    s.train_outer = true;
    DualGD dual(p.K, p.y, dual_start(a0, alpha0, beta0), s);
    DenseGD dense(p.X, p.y, dense_start(a0, W0, alpha0), s);
    CHECK(dual.plain_loss() && !dual.has_output_bias() && dual.loss_weights().size() == 0);
    dual.set_loss_weights(w);
    dual.set_output_bias(0.3);
    dense.set_loss_weights(w);
    dense.set_output_bias(0.3);
    CHECK(!dual.plain_loss() && dual.has_output_bias());
    dual.step(200);
    dense.step(200);
    RowMatrix W = W0;
    Vector a = a0;
    double c0 = 0.3;
    reference(p.X, p.y, w, W, a, c0, 0.1, 200);
    RowMatrix Wd(m, p.X.cols());
    weights_from_dual(p.X, W0, alpha0, dual.alpha(), Wd);
    CHECK_CLOSE(dense.W(), W, 1e-12, 1e-13);
    CHECK_CLOSE(Wd, W, 1e-12, 1e-13);
    CHECK_CLOSE(dual.outer(), a, 1e-12, 1e-13);
    CHECK_CLOSE(dense.outer(), a, 1e-12, 1e-13);
    CHECK_CLOSE(dual.output_bias(), c0, 1e-12, 1e-13);
    CHECK_CLOSE(dense.output_bias(), c0, 1e-12, 1e-13);
    CHECK(std::abs(c0 - 0.3) > 1e-3);  // the output bias moved
    // with a fixed outer layer the output bias stays
    GDSettings fixed = settings_for(0.1, 10);
    DualGD still(p.K, p.y, dual_start(a0, alpha0, beta0), fixed);
    still.set_output_bias(0.3);
    still.step(10);
    CHECK(still.output_bias() == 0.3);
}

TEST_CASE("output bias and loss weights: refusals") {
    const Problem p = make_problem(6, 20, 2);
    const Index n = p.X.rows();
    Vector a0(1);
    a0 << 1.0;
    const RowMatrix beta0 = RowMatrix::Constant(1, n, 0.1);
    DualGD gd(p.K, p.y, dual_start(a0, RowMatrix::Zero(1, n), beta0), settings_for(0.1, 10));
    Vector bad = Vector::Ones(n);
    bad[2] = -1;
    CHECK_THROWS(gd.set_loss_weights(bad), std::invalid_argument);
    bad[2] = std::nan("");
    CHECK_THROWS(gd.set_loss_weights(bad), std::invalid_argument);
    CHECK_THROWS(gd.set_loss_weights(Vector::Ones(n + 1)), std::invalid_argument);
    CHECK_THROWS(gd.set_output_bias(INFINITY), std::invalid_argument);
    CHECK(gd.plain_loss());
}

RELUCORE_TEST_MAIN
