// Trains small shallow ReLU networks with relucore's header-only core and
// checks the results against docs/math.md §5: with one neuron (s = +1) and the
// all-positive init, GD converges to the minimum-distance interpolant of the
// positive examples, w_inf = argmin_{X+ w = y+} ||w - w1||, which stays
// inactive on the negative examples. It also checks that the version header
// and the OpenMP choice are the ones the CMake package reported. Exits
// non-zero on failure.
#include "../example_problem.hpp"  // Theorem 1's problem and limit, shared with dual_gd.cpp

#include <relucore/relucore.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#if !defined(RELUCORE_VERSION_MAJOR) || !defined(RELUCORE_VERSION_STRING)
#error "relucore::core should put the generated relucore/version.hpp on the include path"
#endif
static_assert(RELUCORE_VERSION_MAJOR > 0 || RELUCORE_VERSION_MINOR >= 1, "relucore 0.1 or later");

int main() {
    std::printf("relucore %s (%d.%d.%d), openmp %s\n", RELUCORE_VERSION_STRING, RELUCORE_VERSION_MAJOR,
                RELUCORE_VERSION_MINOR, RELUCORE_VERSION_PATCH, relucore::has_openmp() ? "on" : "off");
#if defined(CONSUMER_EXPECTED_VERSION) && defined(CONSUMER_EXPECTED_OPENMP)
    if (std::strcmp(RELUCORE_VERSION_STRING, CONSUMER_EXPECTED_VERSION) != 0 ||
        relucore::has_openmp() != bool(CONSUMER_EXPECTED_OPENMP)) {
        std::printf("consumer FAILED: the package reported relucore %s, OpenMP %d\n", CONSUMER_EXPECTED_VERSION,
                    int(CONSUMER_EXPECTED_OPENMP));
        return 1;
    }
#endif
    using relucore::Index;
    using relucore::RowMatrix;
    using relucore::Vector;
    const Index n = 16;
    // 16 examples in 400 dimensions, labels +-(1 + 0.05 i), every third one negative.
    const relucore_examples::Problem problem = relucore_examples::theorem1_problem(n, 400, /*seed=*/2026, 1.0, 0.05);
    const RowMatrix& X = problem.X;
    const Vector& y = problem.y;

    const relucore::GDSettings s = relucore_examples::theorem1_settings(/*tol=*/1e-11);
    relucore::DualGD::PositiveStart start;
    start.outer = Vector::Ones(1);
    start.offset = 1e-3;
    auto gd = relucore::DualGD::positive_start(X, y, start, s);
    gd.step(1);
    const RowMatrix W1 = gd.alpha() * X;  // w1 of Theorem 1 (positive init: W = alpha X)

    int reports = 0;
    const relucore::RunSummary r = gd.run(nullptr, 10, [&](const relucore::DualGD& e) {
        if (reports++ < 3) std::printf("  step %lld: loss %.3e\n", static_cast<long long>(e.steps_taken()), e.loss());
    });
    std::printf("status %d after %lld steps, loss %.3e, pattern stable from step %lld\n", static_cast<int>(r.status),
                static_cast<long long>(r.nit), r.loss, static_cast<long long>(r.pattern_stable_step));

    // Closed form of Theorem 1 on the positive examples.
    const Vector w_inf = relucore_examples::theorem1_limit(X, y, W1.row(0).transpose());
    const Vector w_gd = (gd.alpha() * X).row(0).transpose();
    const double dist = (w_gd - w_inf).norm() / w_inf.norm();
    const double max_neg = relucore_examples::max_on_negatives(X, y, w_inf);  // Theorem 1: X- w_inf <= 0
    std::printf("relative distance to the closed-form limit: %.2e; max over negatives of x_i^T w_inf: %.3f\n", dist,
                max_neg);

    // The neuron cannot fit the negative examples: the loss floor is 1/2 sum_{y_i <= 0} y_i^2.
    auto floor_of = [&](const Vector& labels) {
        double f = 0;
        for (Index i = 0; i < n; ++i)
            if (labels[i] <= 0) f += 0.5 * labels[i] * labels[i];
        return f;
    };
    std::printf("loss - floor: %.2e\n", r.loss - floor_of(y));

    // A few independent problems in parallel (OpenMP if relucore was built with it).
    std::vector<double> losses(4);
    relucore::parallel_for(4, 0, [&](Index b) {
        Vector yb = y * (1.0 + 0.1 * double(b));
        auto e = relucore::DualGD::positive_start(X, yb, start, s);
        losses[b] = e.run().loss - floor_of(yb);
    });
    std::printf("openmp %s, batch losses above the floor %.1e %.1e %.1e %.1e\n", relucore::has_openmp() ? "on" : "off",
                losses[0], losses[1], losses[2], losses[3]);

    bool ok = r.status == relucore::Status::converged && dist < 1e-6 && max_neg <= 0 && r.loss - floor_of(y) < 1e-12;
    for (double l : losses) ok = ok && std::abs(l) < 1e-12;
    std::printf("%s\n", ok ? "consumer OK" : "consumer FAILED");
    return ok ? 0 : 1;
}
