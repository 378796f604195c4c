// How a run ends, checked against independent facts: Status::stalled at a
// stationary point that leaves examples unfit (both engines, logistic loss,
// the one-neuron case where unfit-by-sign examples do not count), the
// gradient norm at scales where its plain sum under/overflows, and histories
// that grow with the run; the table of every outcome (core/status.hpp).
#include "check.hpp"
#include "problems.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <vector>

using namespace relucore;
using namespace relucore_test;

namespace {

GDSettings settings_for(double eta, std::int64_t steps, double tol) {
    GDSettings s = relucore_test::settings_for(eta, steps);
    s.tol = tol;
    return s;
}

// A start from which every neuron is inactive on examples `dead` (beta = -1
// there) and active elsewhere: no gradient ever reaches the dead examples.
RowMatrix start_with_dead(Index m, Index n, const std::vector<Index>& dead) {
    RowMatrix beta0 = RowMatrix::Constant(m, n, 0.1);
    for (Index i : dead) beta0.col(i).setConstant(-1.0);
    return beta0;
}

}  // namespace

TEST_CASE("stalled: a stationary point with examples no neuron is active on") {
    const Problem p = make_problem(6, 60, 21);
    const Vector y = p.y.cwiseAbs();  // every example has the sign of the neuron
    const Vector outer = Vector::Ones(1);
    const RowMatrix beta0 = start_with_dead(1, 6, {1, 4});
    // alpha0 with K alpha0 = beta0: the start lies in the data span.
    const RowMatrix alpha0 = (p.K.llt().solve(beta0.transpose())).transpose();
    const GDSettings s = settings_for(0.5, 100000, 1e-12);
    DualGD dual(p.K, y, dual_start(outer, alpha0, beta0), s);
    const RunSummary r = dual.run();
    CHECK(r.status == Status::stalled && r.n_unfit == 2);
    CHECK(example_unfit(dual, 1) && example_unfit(dual, 4) && !example_unfit(dual, 0));
    // The independent fact: a dead example's prediction is 0, its residual |y_i|.
    CHECK(dual.predictions()[1] == 0 && dual.predictions()[4] == 0);
    CHECK_CLOSE(r.loss, 0.5 * (y[1] * y[1] + y[4] * y[4]), 1e-12, 0.0);

    const RowMatrix W0 = alpha0 * p.X;
    DenseGD dense(p.X, y, dense_start(outer, W0, alpha0), s);
    const RunSummary rd = dense.run();
    CHECK(rd.status == Status::stalled && rd.n_unfit == 2);

    // Mixed labels and one positive neuron: the negative examples cannot be
    // fit (h >= 0), h = 0 is their best value, and the run converges.
    DualGD mixed = DualGD::positive_start(p.X, p.y, positive_offsets(outer, 1e-3), settings_for(0.5, 100000, 1e-12));
    const RunSummary rm = mixed.run();
    CHECK(rm.status == Status::converged && rm.n_unfit == 0);
    CHECK(rm.loss > 0.1);  // the negative labels' floor
}

TEST_CASE("stalled: logistic loss, every neuron dead: misclassified examples") {
    const Problem p = make_problem(6, 60, 22);
    Vector y(6);
    for (Index i = 0; i < 6; ++i) y[i] = p.y[i] > 0 ? 1.0 : -1.0;
    Vector outer(2);
    outer << 1.0, -1.0;
    // Every neuron inactive on every example: the gradient is exactly 0, and
    // h = 0 classifies nothing (y_i h_i = 0), though each example has a
    // neuron of its sign.
    const RowMatrix beta0 = RowMatrix::Constant(2, 6, -1.0);
    const RowMatrix alpha0 = (p.K.llt().solve(beta0.transpose())).transpose();
    GDSettings s = settings_for(1.0, 1000, 1e-8);
    s.model.loss = Loss::logistic;
    DualGD gd(p.K, y, dual_start(outer, alpha0, beta0), s);
    const RunSummary r = gd.run();
    CHECK(r.status == Status::stalled && r.nit == 0 && r.grad_norm == 0 && r.n_unfit == 6);
    CHECK_CLOSE(r.loss, std::log(2.0), 1e-15, 0.0);
    // The leaky ReLU never stalls there: its inactive units still carry gradient.
    s.model.activation = Activation::leaky_relu;
    DualGD leaky(p.K, y, dual_start(outer, alpha0, beta0), s);
    CHECK(leaky.run().status != Status::stalled);
}

TEST_CASE("gradient norm: X scaled by 1e150 and 2^-500 takes the unscaled steps") {
    const Problem p = make_problem(8, 50, 23);
    Vector outer(2);
    outer << 1.0, -1.0;
    const RowMatrix eps = RowMatrix::Constant(2, 8, 1e-2);
    DualGD ref = DualGD::positive_start(p.X, p.y, positive_offsets(outer, eps), settings_for(0.25, 100000, 1e-10));
    const RunSummary r0 = ref.run();
    CHECK(r0.status == Status::converged);
    for (double c : {1e150, 1e-150, std::ldexp(1.0, 500), std::ldexp(1.0, -500)}) {
        const RowMatrix Xc = p.X * c;
        // eta scales by 1/c^2 and the gradient norm (hence tol) by c.
        DualGD gd = DualGD::positive_start(Xc, p.y, positive_offsets(outer, eps),
                                           settings_for(0.25 / (c * c), 100000, 1e-10 * c));
        const RunSummary r = gd.run();
        CHECK(r.status == Status::converged && r.nit == r0.nit);
        CHECK_CLOSE(r.grad_norm / c, r0.grad_norm, 1e-9, 0.0);
        CHECK((gd.beta() - ref.beta()).cwiseAbs().maxCoeff() < 1e-12);
    }
}

TEST_CASE("GrowingHistory: grows with the run, same records as preallocated buffers") {
    const Problem p = make_problem(6, 20, 24);
    const Vector outer = Vector::Ones(1);
    GDSettings s = settings_for(0.2, 50, 0);
    s.record_every = 3;
    const std::int64_t cap = history_capacity(50, 3);
    HistoryBuffers buffers(cap, 6, 0.0, true);
    auto& [steps, loss, beta, alpha, mask, h] = buffers;
    DualGD a = DualGD::positive_start(p.X, p.y, positive_offsets(outer, 1e-3), s);
    const RunSummary ra = a.run(&h);
    GrowingHistory g(6, cap, 2);  // starts with 2 slots: grows 2 -> 4 -> 8 -> 16 -> 18
    DualGD b = DualGD::positive_start(p.X, p.y, positive_offsets(outer, 1e-3), s);
    const RunSummary rb = b.run(&g.history());
    CHECK(ra.n_records == 18 && rb.n_records == 18 && g.count() == 18 && !g.failed());
    CHECK(g.history().capacity == 18);
    bool same = true;
    for (std::int64_t r = 0; r < 18; ++r) {
        same = same && g.steps()[r] == steps[r] && g.loss()[r] == loss[r];
        for (int j = 0; j < 6; ++j)
            same = same && g.beta()[r * 6 + j] == beta[r * 6 + j] && g.alpha()[r * 6 + j] == alpha[r * 6 + j] &&
                   g.mask()[r * 6 + j] == mask[r * 6 + j];
    }
    CHECK(same);
    // A run that stops early keeps only what it used.
    GDSettings early = s;
    early.max_steps = 1000000;
    early.tol = 1e300;  // converged at step 0
    GrowingHistory small(6, history_capacity(early.max_steps, 3), 64);
    DualGD c = DualGD::positive_start(p.X, p.y, positive_offsets(outer, 1e-3), early);
    c.run(&small.history());
    CHECK(small.count() == 1 && small.steps().size() == 64);
}

TEST_CASE("default_tolerance: ||y||, or the start's ||h0|| when y = 0") {
    CHECK(default_tolerance(1e-12, 4.0, 3.0, 5.0) == 1e-12 * 2.0 * 3.0);
    CHECK(default_tolerance(1e-12, 4.0, 0.0, 5.0) == 1e-12 * 2.0 * 5.0);
    CHECK(default_tolerance(1e-12, 4.0, 0.0, 0.0) == std::numeric_limits<double>::min());
}

TEST_CASE("status_table: one row per Status, unique names, a message each, the successes") {
    std::set<std::string> names, successes;
    for (std::size_t i = 0; i < status_count; ++i) {
        const StatusInfo& row = status_table[i];
        CHECK(static_cast<std::size_t>(row.status) == i);
        CHECK(names.insert(row.name).second);
        CHECK(std::strlen(row.message) > 0);
        CHECK(status_name(row.status) == row.name && status_success(row.status) == row.success);
        if (row.success) successes.insert(row.name);
    }
    CHECK(successes == std::set<std::string>({"converged", "certified", "completed", "optimal"}));
    CHECK(std::string(status_name(Status::error)) == "error" && !status_success(Status::stalled));
    CHECK(std::string(status_message(Status::max_steps)).find("step budget") != std::string::npos);
}

RELUCORE_TEST_MAIN
