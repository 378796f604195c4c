// DualGD, the primal-dual engine: one neuron (s = +1) from the all-positive
// start converges to the closed-form limit of Theorem 1 (docs/math.md §5;
// example_problem.hpp), inactive on the negative examples. Also shows a callback, a History and a
// checkpoint rebuilt from gram(), outer() and the state. Exits non-zero on failure.
#include "example_problem.hpp"

#include <relucore/relucore.hpp>

#include <cstdio>
#include <vector>

int main() {
    using relucore::Index;
    using relucore::RowMatrix;
    using relucore::Vector;
    // 12 examples in 300 dimensions, labels +-(0.5 + 0.1 i), every third one negative.
    const relucore_examples::Problem problem = relucore_examples::theorem1_problem(12, 300, /*seed=*/7, 0.5, 0.1);
    const RowMatrix& X = problem.X;
    const Vector& y = problem.y;

    relucore::GDSettings s = relucore_examples::theorem1_settings(/*tol=*/1e-12);  // eta = 0.5, max_steps = 20000
    s.record_every = 10;

    relucore::DualGD::PositiveStart start;
    start.outer = Vector::Ones(1);  // s_1 = +1
    start.offset = 1e-3;            // beta^(0) = eps = 1e-3 on every example
    relucore::DualGD gd = relucore::DualGD::positive_start(X, y, start, s);
    gd.step(1);
    const Vector w1 = (gd.alpha() * X).row(0).transpose();  // positive start: W = alpha X

    // History in caller-owned buffers, sized by history_capacity().
    const std::int64_t cap = relucore::history_capacity(s.max_steps, s.record_every);
    std::vector<std::int64_t> steps(cap);
    std::vector<double> losses(cap);
    relucore::History history;
    history.steps = steps;
    history.loss = losses;
    history.capacity = cap;
    int calls = 0;
    const relucore::RunSummary r = gd.run(&history, 10, [&](const relucore::DualGD&) { ++calls; });
    std::printf("status %d after %lld steps (%d callbacks, %lld records), loss %.3e\n", static_cast<int>(r.status),
                static_cast<long long>(r.nit), calls, static_cast<long long>(r.n_records), r.loss);

    // The closed form on the positive examples.
    const Vector w_inf = relucore_examples::theorem1_limit(X, y, w1);
    const Vector w_gd = (gd.alpha() * X).row(0).transpose();
    const double dist = (w_gd - w_inf).norm() / w_inf.norm();
    const double max_neg = relucore_examples::max_on_negatives(X, y, w_inf);
    std::printf("relative distance to the closed-form limit %.2e, max_{y_i <= 0} x_i^T w_inf = %.3f\n", dist, max_neg);

    // A checkpoint: the Gram matrix, the outer weights and the state rebuild the engine.
    relucore::DualGD::Start saved;
    saved.outer = gd.outer();
    saved.alpha = gd.alpha();
    saved.beta = gd.beta();
    const RowMatrix K = gd.gram();  // the restored engine views this copy
    relucore::DualGD resumed(K, gd.labels(), saved, gd.settings());
    resumed.restore(gd.steps_taken(), gd.mask(), gd.pattern().stable_step());
    gd.step(10);
    resumed.step(10);
    const bool same = resumed.alpha() == gd.alpha() && resumed.loss() == gd.loss();
    std::printf("checkpoint resumed bitwise: %s\n", same ? "yes" : "no");

    const bool ok = r.status == relucore::Status::converged && dist < 1e-6 && max_neg <= 0 && same &&
                    r.n_records == history.count && calls > 0;
    std::printf("%s\n", ok ? "dual_gd example OK" : "dual_gd example FAILED");
    return ok ? 0 : 1;
}
