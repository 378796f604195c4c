// WeightGD, the mean-field engine (wide network with bias, noisy SGD), in a
// regime with a closed-form answer: every neuron starts with the same (w, b),
// active on every example, and a fixed outer weight a_i = 1, so the network
// is the linear model h(x) = w.x + b (output scale 1/N) and full-batch GD
// without noise or decay converges to the least-squares fit, here the
// coefficients (0.3, -0.2, 0.5) that generated the labels. Exits non-zero on failure.
#include <relucore/relucore.hpp>

#include <cmath>
#include <cstdio>

int main() {
    using relucore::Index;
    using relucore::RowMatrix;
    using relucore::Vector;
    const Index M = 6, d = 2, N = 256;
    RowMatrix X(M, d);
    X << 0.1, 0.2, 0.9, 0.4, 0.5, 0.8, 0.3, 0.7, 0.7, 0.1, 0.6, 0.6;
    Vector y(M);
    for (Index j = 0; j < M; ++j) y[j] = 0.3 * X(j, 0) - 0.2 * X(j, 1) + 0.5;

    relucore::WeightGDStart start;  // the neurons by name: a, w (N x d), b
    start.a = Vector::Ones(N);
    start.w = RowMatrix::Constant(N, d, 0.1);
    start.b = Vector::Constant(N, 0.4);

    relucore::WeightGDSettings s;
    s.step = 0.5 * double(N);  // mean-field scaling: a step of order N moves h by O(s / N)
    s.batch_size = M;          // full batch: every example, in order
    s.train_outer = false;     // a_i = 1 throughout
    s.temperature = 0;         // no Langevin noise
    s.scale = relucore::OutputScale::inv_n;
    relucore::WeightGD engine(X, y, start, s);
    const relucore::WeightGDSummary r = engine.run(/*start=*/0, /*iters=*/20000, /*record_final=*/false);

    RowMatrix theta(N, d + 2);  // columns (a, w_1, w_2, b)
    engine.theta(theta);
    const double w1 = theta.col(1).mean(), w2 = theta.col(2).mean(), b = theta.col(3).mean();
    std::printf("status %d after %lld steps, objective %.3e; mean (w1, w2, b) = (%.12f, %.12f, %.12f)\n",
                static_cast<int>(r.status), static_cast<long long>(r.nit), r.objective, w1, w2, b);
    const bool ok = r.status == relucore::Status::completed && std::abs(w1 - 0.3) < 1e-9 && std::abs(w2 + 0.2) < 1e-9 &&
                    std::abs(b - 0.5) < 1e-9 && r.objective < 1e-18;
    std::printf("%s\n", ok ? "weight_gd example OK" : "weight_gd example FAILED");
    return ok ? 0 : 1;
}
