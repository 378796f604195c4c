// DenseGD, the weight-space engine, against DualGD from the same Gaussian
// start (alpha0 = 0, beta0 = X w_k^(0)): the two engines compute the same
// iterates by different arithmetic (O(m n d) against O(m n^2) a step), and
// weights_from_dual() rebuilds DenseGD's W from DualGD's alpha. Exits non-zero
// on failure.
#include "example_problem.hpp"

#include <relucore/relucore.hpp>

#include <cstdio>
#include <random>

int main() {
    using relucore::Index;
    using relucore::RowMatrix;
    using relucore::Vector;
    const Index n = 10, d = 40, m = 4;
    std::mt19937_64 gen(3);
    const RowMatrix X = relucore_examples::gaussian_inputs(n, d, gen);
    const RowMatrix W0 = relucore_examples::gaussian(m, d, /*sd=*/0.3, gen);
    Vector y(n), outer(m);
    for (Index i = 0; i < n; ++i) y[i] = i % 2 == 0 ? 1.0 : -0.5;
    outer << 1.0, -1.0, 0.5, -0.5;

    relucore::GDSettings s;
    s.eta = 0.2;
    s.max_steps = 2000;

    relucore::DenseGD::Start dense_start;
    dense_start.outer = outer;
    dense_start.W = W0;
    dense_start.alpha = RowMatrix::Zero(m, n);
    relucore::DenseGD dense(X, y, std::move(dense_start), s);

    const RowMatrix K = relucore::gram_matrix(X);  // viewed by the dual engine: keep it alive
    relucore::DualGD::Start dual_start;
    dual_start.outer = outer;
    dual_start.alpha = RowMatrix::Zero(m, n);
    dual_start.beta = W0 * X.transpose();
    relucore::DualGD dual(K, y, std::move(dual_start), s);

    const relucore::RunSummary rd = dense.run();
    const relucore::RunSummary rp = dual.run();
    RowMatrix W(m, d);
    relucore::weights_from_dual(X, W0, RowMatrix::Zero(m, n), dual.alpha(), W);
    const double dW = (W - dense.W()).norm() / dense.W().norm();
    const double dbeta = (dual.beta() - dense.beta()).norm() / dense.beta().norm();
    std::printf("losses %.6e (dense) %.6e (dual); relative differences: W %.1e, beta %.1e\n", rd.loss, rp.loss, dW,
                dbeta);
    const bool ok = rd.status == rp.status && rd.nit == rp.nit && dW < 1e-9 && dbeta < 1e-9 &&
                    std::abs(rd.loss - rp.loss) <= 1e-9 * rp.loss && dense.mask() == dual.mask();
    std::printf("%s\n", ok ? "dense_gd example OK" : "dense_gd example FAILED");
    return ok ? 0 : 1;
}
