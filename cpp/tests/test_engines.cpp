// DualGD and DenseGD: agreement with each other, the one-step closed forms of
// docs/math.md §5, the step/run/callback/checkpoint API and History capacity;
// WeightStep (gd/weight_step.hpp), the weight-space block kernel, against plain loops.
#include "check.hpp"
#include "problems.hpp"

#include "relucore/gd/weight_step.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

using namespace relucore;
using namespace relucore_test;

namespace {

// Both engines from the same Gaussian init W0 (alpha0 = 0, so w_perp = W0).
void check_dual_matches_dense(const ModelSpec& model, const char* what) {
    const Problem p = make_problem(12, 40, 7);
    std::mt19937_64 gen(11);
    const Index m = 3;
    Vector outer(m);
    outer << 1.0, -1.0, 0.5;
    const RowMatrix W0 = gaussian(m, p.X.cols(), gen, 0.3);
    const RowMatrix beta0 = W0 * p.X.transpose();
    const RowMatrix alpha0 = RowMatrix::Zero(m, p.X.rows());
    GDSettings s = settings_for(0.2, 300);
    s.model = model;
    DualGD dual(p.K, p.y, dual_start(outer, alpha0, beta0), s);
    DenseGD dense(p.X, p.y, dense_start(outer, W0, alpha0), s);
    dual.step(300);
    dense.step(300);
    RowMatrix W(m, p.X.cols());
    weights_from_dual(p.X, W0, alpha0, dual.alpha(), W);
    std::printf("  %s: loss %.3e (dual) vs %.3e (dense)\n", what, dual.loss(), dense.loss());
    CHECK_CLOSE(dual.beta(), dense.beta(), 1e-9, 1e-11);
    CHECK_CLOSE(dual.alpha(), dense.alpha(), 1e-9, 1e-11);
    CHECK_CLOSE(W, dense.W(), 1e-9, 1e-11);
    CHECK_CLOSE(dual.loss(), dense.loss(), 1e-9, 1e-13);
    CHECK_CLOSE(dual.grad_norm(), dense.grad_norm(), 1e-7, 1e-11);
    CHECK(dual.mask() == dense.mask());
    CHECK(dual.pattern().stable_step() == dense.pattern().stable_step());
    CHECK(dual.loss() < 0.5 * 0.5 * p.y.squaredNorm());  // it did train
}

// Two-layer GD written out in plain loops: h = c sum_k a_k relu(w_k^T x), W and a moved
// at once by -eta times their gradients on 1/2 ||h - y||^2.
void two_layer_reference(const RowMatrix& X, const Vector& y, RowMatrix& W, Vector& a, double c, double eta,
                         int steps) {
    const Index n = X.rows(), m = W.rows();
    for (int t = 0; t < steps; ++t) {
        const RowMatrix pre = W * X.transpose();
        Vector r = Vector::Zero(n);
        for (Index i = 0; i < n; ++i) {
            for (Index k = 0; k < m; ++k) r[i] += c * a[k] * std::max(pre(k, i), 0.0);
            r[i] -= y[i];
        }
        RowMatrix gW = RowMatrix::Zero(m, X.cols());
        Vector ga = Vector::Zero(m);
        for (Index k = 0; k < m; ++k)
            for (Index i = 0; i < n; ++i) {
                ga[k] += c * std::max(pre(k, i), 0.0) * r[i];
                if (pre(k, i) > 0) gW.row(k) += c * a[k] * r[i] * X.row(i);
            }
        W -= eta * gW;
        a -= eta * ga;
    }
}

}  // namespace

TEST_CASE("train_outer: both engines take the two-layer GD step of a plain reference") {
    const Problem p = make_problem(9, 30, 5);
    std::mt19937_64 gen(3);
    const Index m = 4;
    Vector a0(m);
    a0 << 0.8, -1.2, 0.5, -0.3;
    const double c = 0.5;
    const RowMatrix W0 = gaussian(m, p.X.cols(), gen, 0.3);
    const RowMatrix beta0 = W0 * p.X.transpose();
    const RowMatrix alpha0 = RowMatrix::Zero(m, p.X.rows());
    GDSettings s = settings_for(0.1, 200);
    s.train_outer = true;
    s.output_scale = c;
    const Vector outer0 = c * a0;  // the engines hold c a_k
    DualGD dual(p.K, p.y, dual_start(outer0, alpha0, beta0), s);
    DenseGD dense(p.X, p.y, dense_start(outer0, W0, alpha0), s);
    dual.step(200);
    dense.step(200);
    RowMatrix W = W0;
    Vector a = a0;
    two_layer_reference(p.X, p.y, W, a, c, 0.1, 200);
    RowMatrix Wd(m, p.X.cols());
    weights_from_dual(p.X, W0, alpha0, dual.alpha(), Wd);
    CHECK_CLOSE(Vector(dense.outer() / c), a, 1e-12, 1e-13);
    CHECK_CLOSE(Vector(dual.outer() / c), a, 1e-12, 1e-13);
    CHECK_CLOSE(dense.W(), W, 1e-12, 1e-13);
    CHECK_CLOSE(Wd, W, 1e-12, 1e-13);
    CHECK_CLOSE(dual.beta(), dense.beta(), 1e-12, 1e-13);
    CHECK((dual.outer() - outer0).cwiseAbs().maxCoeff() > 1e-3);  // the outer layer moved
    // the default keeps the outer layer fixed
    GDSettings fixed = settings_for(0.1, 10);
    DualGD still(p.K, p.y, dual_start(outer0, alpha0, beta0), fixed);
    still.step(10);
    CHECK((still.outer().array() == outer0.array()).all());
    GDSettings bad = s;
    bad.output_scale = 0;
    CHECK_THROWS(bad.validate(), std::invalid_argument);
    // Turned on through settings() after construction (the engine sizes the outer step's
    // buffer there): the run of an engine built with it on, bit for bit, on both engines.
    DualGD later(p.K, p.y, dual_start(outer0, alpha0, beta0), fixed);
    DenseGD later_dense(p.X, p.y, dense_start(outer0, W0, alpha0), fixed);
    later.settings() = s;
    later_dense.settings() = s;
    later.step(200);
    later_dense.step(200);
    CHECK((later.outer().array() == dual.outer().array()).all());
    CHECK((later.alpha().array() == dual.alpha().array()).all());
    CHECK((later_dense.outer().array() == dense.outer().array()).all());
    CHECK((later_dense.W().array() == dense.W().array()).all());
}

TEST_CASE("dual engine agrees with weight-space engine (relu, square)") {
    check_dual_matches_dense(ModelSpec{}, "relu/square");
}

TEST_CASE("dual engine agrees with weight-space engine (leaky relu, logistic)") {
    ModelSpec spec;
    spec.activation = Activation::leaky_relu;
    spec.leaky_slope = 0.1;
    spec.loss = Loss::logistic;
    check_dual_matches_dense(spec, "leaky/logistic");
}

TEST_CASE("Theorem 1: one step from the positive init, w1 = eta X^T (y - eps + K^-1 eps / eta)") {
    const Problem p = make_problem(10, 60, 3);
    const double eta = 0.3, eps = 1e-3;
    // beta0 = eps > 0 keeps every example active in the first step, whatever the labels.
    Vector y = p.y.cwiseAbs();
    y[3] = -y[3];
    Vector outer = Vector::Ones(1);
    DualGD gd = DualGD::positive_start(p.X, y, positive_offsets(outer, eps), settings_for(eta, 1));
    CHECK_CLOSE(gd.beta(), RowMatrix::Constant(1, 10, eps), 0, 0);  // beta0 = eps exactly
    CHECK(gd.step(1) == 1);
    const Vector e = Vector::Constant(10, eps);
    const Vector Kinv_e = p.K.llt().solve(e);
    const Vector w1 = eta * p.X.transpose() * (y - e + Kinv_e / eta);
    const RowMatrix W = gd.alpha() * p.X;  // positive init: W = alpha X
    CHECK_CLOSE(W.row(0).transpose(), w1, 1e-10, 1e-12);
    // beta1 = X w1 = eta (K y - K eps) + eps
    const Vector beta1 = eta * p.K * (y - e) + e;
    CHECK_CLOSE(gd.beta().row(0).transpose(), beta1, 1e-10, 1e-12);
}

TEST_CASE("Theorem 3: one step with signs (+1, -1) from the positive init") {
    const Problem p = make_problem(8, 50, 5);
    const double eta = 0.25;
    Vector outer(2);
    outer << 1.0, -1.0;
    RowMatrix eps(2, 8);
    for (Index i = 0; i < 8; ++i) {
        eps(0, i) = 1e-3 * (1 + 0.1 * i);
        eps(1, i) = 2e-3 * (1 + 0.05 * i);
    }
    DualGD gd = DualGD::positive_start(p.X, p.y, positive_offsets(outer, eps), settings_for(eta, 1));
    gd.step();
    const Vector ep = eps.row(0).transpose(), em = eps.row(1).transpose();
    const auto llt = p.K.llt();
    const Vector wp = eta * p.X.transpose() * (p.y - ep + em + llt.solve(ep) / eta);
    const Vector wm = eta * p.X.transpose() * (-p.y + ep - em + llt.solve(em) / eta);
    const RowMatrix W = gd.alpha() * p.X;
    CHECK_CLOSE(W.row(0).transpose(), wp, 1e-10, 1e-12);
    CHECK_CLOSE(W.row(1).transpose(), wm, 1e-10, 1e-12);
}

TEST_CASE("positive_start rejects a rank-deficient X and bad eps") {
    Problem p = make_problem(6, 20, 9);
    p.X.row(5) = p.X.row(4);
    Vector outer = Vector::Ones(1);
    CHECK_THROWS(DualGD::positive_start(p.X, p.y, positive_offsets(outer, 1e-3), settings_for(0.1, 1)),
                 std::invalid_argument);
    const Problem q = make_problem(6, 20, 9);
    CHECK_THROWS(DualGD::positive_start(q.X, q.y, positive_offsets(outer, -1.0), settings_for(0.1, 1)),
                 std::invalid_argument);
    CHECK_THROWS(DualGD::positive_start(q.X, q.y, positive_offsets(outer, 1e-3), settings_for(-0.1, 1)),
                 std::invalid_argument);
}

TEST_CASE("positive_start: alpha0 is the Cholesky solve K^-1 eps, bit for bit; its message on a singular K") {
    const Problem p = make_problem(9, 30, 4);
    Vector outer(2);
    outer << 1.0, -1.0;
    RowMatrix eps(2, 9);
    for (Index i = 0; i < 9; ++i) {
        eps(0, i) = 1e-3 * (1 + 0.3 * i);
        eps(1, i) = 3e-3 / (1 + 0.2 * i);
    }
    const DualGD gd = DualGD::positive_start(p.X, p.y, positive_offsets(outer, eps), settings_for(0.1, 1));
    const Eigen::LLT<RowMatrix> llt(gram_matrix(p.X));
    const RowMatrix expected = llt.solve(eps.transpose()).transpose();
    CHECK((gd.alpha().array() == expected.array()).all());
    CHECK((gd.beta().array() == eps.array()).all());
    Problem q = make_problem(6, 20, 9);
    q.X.row(5) = q.X.row(4);
    std::string message;
    try {
        DualGD::positive_start(q.X, q.y, positive_offsets(Vector::Ones(1), 1e-3), settings_for(0.1, 1));
    } catch (const std::invalid_argument& e) {
        message = e.what();
    }
    CHECK(message == "K = X X^T is singular or badly conditioned (X needs full row rank, linearly independent rows)");
}

TEST_CASE("default_offset: y_min / (C_alpha m), max |y| when a label is 0, 1 when all are") {
    Vector y(3);
    y << -0.5, 2.0, 1.0;
    CHECK(default_offset(y, 2, 4.0) == 0.5 / 8.0);
    y << 0.0, -3.0, 1.5;
    CHECK(default_offset(y, 1, 2.0) == 3.0 / 2.0);
    y.setZero();
    CHECK(default_offset(y, 3, 2.0) == 1.0 / 6.0);
    y << 1.0, std::nan(""), 2.0;  // numpy's min and max propagate NaN
    CHECK(default_offset(y, 1, 2.0) == 0.5);
}

TEST_CASE("constructor validates shapes and evaluates the initial state") {
    const Problem p = make_problem(6, 20, 2);
    Vector outer = Vector::Ones(2);
    const RowMatrix a0 = RowMatrix::Zero(2, 6), b0 = RowMatrix::Constant(2, 6, 0.1);
    CHECK_THROWS(DualGD(p.K, p.y.head(5), dual_start(outer, a0, b0), settings_for(0.1, 1)), std::invalid_argument);
    CHECK_THROWS(DualGD(p.K, p.y, dual_start(outer, a0.topRows(1), b0), settings_for(0.1, 1)), std::invalid_argument);
    DualGD gd(p.K, p.y, dual_start(outer, a0, b0), settings_for(0.1, 1));
    CHECK(gd.evaluated());
    // h = 2 * 0.1 for every example; loss = 1/2 ||h - y||^2
    CHECK_CLOSE(gd.loss(), 0.5 * (Vector::Constant(6, 0.2) - p.y).squaredNorm(), 1e-14, 0);
    CHECK(gd.n_neurons() == 2 && gd.n_samples() == 6);
    CHECK_THROWS(gd.step(-1), std::invalid_argument);
    CHECK_THROWS(gd.set_eta(0.0), std::invalid_argument);
    CHECK_THROWS(gd.set_labels(p.y.head(3)), std::invalid_argument);
}

TEST_CASE("step(k) equals run() with max_steps = k, bitwise") {
    const Problem p = make_problem(10, 30, 4);
    Vector outer(2);
    outer << 1.0, -1.0;
    DualGD a = DualGD::positive_start(p.X, p.y, positive_offsets(outer, 1e-3), settings_for(0.2, 137));
    DualGD b = a;  // copies share the engine's Gram matrix
    CHECK(a.step(137) == 137);
    const RunSummary r = b.run();
    CHECK(r.status == Status::max_steps && r.nit == 137);
    CHECK(a.alpha() == b.alpha());
    CHECK(a.beta() == b.beta());
    CHECK(a.loss() == r.loss && a.grad_norm() == r.grad_norm);
    CHECK(a.pattern().stable_step() == r.pattern_stable_step);
    // Stepping in pieces is the same as stepping at once.
    DualGD c = DualGD::positive_start(p.X, p.y, positive_offsets(outer, 1e-3), settings_for(0.2, 137));
    c.step(50);
    c.step(0);
    c.step(87);
    CHECK(c.alpha() == a.alpha() && c.beta() == a.beta() && c.steps_taken() == 137);
}

TEST_CASE("run with a callback every k steps: observes, stops, and does not perturb") {
    const Problem p = make_problem(10, 30, 6);
    Vector outer = Vector::Ones(1);
    GDSettings s = settings_for(0.2, 95);
    DualGD plain = DualGD::positive_start(p.X, p.y, positive_offsets(outer, 1e-3), s);
    const RunSummary r0 = plain.run();

    DualGD observed = DualGD::positive_start(p.X, p.y, positive_offsets(outer, 1e-3), s);
    std::vector<std::int64_t> seen;
    std::vector<double> losses;
    const RunSummary r1 = observed.run(nullptr, 10, [&](const DualGD& e) {
        seen.push_back(e.steps_taken());
        losses.push_back(e.loss());
    });
    CHECK(r1.status == r0.status && r1.nit == r0.nit);
    CHECK(observed.alpha() == plain.alpha());
    CHECK(seen.size() == 9 && seen.front() == 10 && seen.back() == 90);
    CHECK(losses.size() == 9 && losses.back() <= losses.front());

    DualGD stopped = DualGD::positive_start(p.X, p.y, positive_offsets(outer, 1e-3), s);
    int calls = 0;
    const RunSummary r2 = stopped.run(nullptr, 15, [&](const DualGD& e) {
        ++calls;
        return e.steps_taken() >= 45;
    });
    CHECK(r2.status == Status::stopped && r2.nit == 45 && calls == 3);
    CHECK(r2.loss == stopped.loss());
    // The run resumes where it stopped and ends where the uninterrupted run ended.
    const RunSummary r3 = stopped.run();
    CHECK(r3.nit == r0.nit && stopped.alpha() == plain.alpha() && r3.loss == r0.loss);
}

TEST_CASE("a callback may change labels and eta between steps (a simulator)") {
    const Problem p = make_problem(10, 30, 16);
    Vector outer(2);
    outer << 1.0, -1.0;
    GDSettings s = settings_for(0.2, 120);
    DualGD a = DualGD::positive_start(p.X, p.y, positive_offsets(outer, 1e-3), s);
    DualGD b = a;
    const Vector y2 = 0.5 * p.y;
    const RunSummary r = a.run(nullptr, 40, [&](DualGD& e) {
        if (e.steps_taken() == 40) e.set_labels(y2);
        if (e.steps_taken() == 80) {
            e.settings().eta = 0.1;  // stale until re-evaluated: the run re-evaluates
            e.step(3);               // and stepping from the callback is allowed
        }
    });
    CHECK(r.status == Status::max_steps && r.nit == 120);
    b.step(40);
    b.set_labels(y2);
    b.step(40);
    b.set_eta(0.1);
    b.step(3);
    b.step(37);
    CHECK(a.alpha() == b.alpha() && a.beta() == b.beta() && a.loss() == b.loss());
    CHECK(r.loss == b.loss());
}

TEST_CASE("stopping rules: tol, divergence and the cancel flag") {
    // d = 400 >> n: the neuron keeps every example (at d = 40 it dies on one
    // and the run stalls).
    const Problem wide = make_problem(8, 400, 8);
    const Problem p = make_problem(8, 40, 8);
    Vector outer = Vector::Ones(1);
    GDSettings s = settings_for(0.3, 100000);
    s.tol = 1e-9;
    DualGD gd = DualGD::positive_start(wide.X, wide.y.cwiseAbs(), positive_offsets(outer, 1e-3), s);
    const RunSummary r = gd.run();
    CHECK(r.status == Status::converged && r.grad_norm < 1e-9 && r.nit < 100000);

    GDSettings big = settings_for(50.0, 1000);
    DualGD blow = DualGD::positive_start(p.X, p.y.cwiseAbs(), positive_offsets(outer, 1e-3), big);
    CHECK(blow.run().status == Status::diverged);

    std::atomic<bool> cancel{true};
    DualGD c = DualGD::positive_start(p.X, p.y, positive_offsets(outer, 1e-3), settings_for(0.1, 100));
    c.set_cancel_flag(&cancel);
    CHECK(c.step(10) == 0 && c.steps_taken() == 0);
    CHECK(c.run().status == Status::cancelled);
    // Cancellation wins over the other stopping rules that hold at the same state.
    GDSettings done = settings_for(0.1, 0);  // budget used up at step 0
    done.cancel = &cancel;
    DualGD over_budget = DualGD::positive_start(p.X, p.y, positive_offsets(outer, 1e-3), done);
    CHECK(over_budget.run().status == Status::cancelled && over_budget.steps_taken() == 0);
    done.max_steps = 100;
    done.tol = 1e300;  // converged at step 0
    DualGD converged = DualGD::positive_start(p.X, p.y, positive_offsets(outer, 1e-3), done);
    CHECK(converged.run().status == Status::cancelled && converged.steps_taken() == 0);
    cancel = false;
    CHECK(converged.run().status == Status::converged);
    CHECK(over_budget.run().status == Status::max_steps);
    CHECK(c.step(10) == 10);
    c.set_cancel_flag(nullptr);
}

TEST_CASE("set_eta, set_labels and settings() between steps") {
    const Problem p = make_problem(10, 30, 12);
    Vector outer(2);
    outer << 1.0, -1.0;
    DualGD a = DualGD::positive_start(p.X, p.y, positive_offsets(outer, 1e-3), settings_for(0.2, 0));
    a.step(20);
    DualGD b = a, c = a;
    a.set_eta(0.1);
    b.settings().eta = 0.1;  // invalidates the pending update
    a.step(20);
    b.step(20);
    CHECK(a.alpha() == b.alpha() && a.loss() == b.loss());
    // Same state, fresh engine with eta = 0.1: identical trajectory.
    DualGD fresh(a.gram(), p.y, dual_start(outer, c.alpha(), c.beta()), settings_for(0.1, 0));
    fresh.step(20);
    CHECK(fresh.alpha() == a.alpha());
    const Vector y2 = -p.y;
    c.set_labels(y2);
    CHECK(c.labels() == y2);
    CHECK_CLOSE(c.residual(), c.predictions() - y2, 0, 0);
}

TEST_CASE("a checkpoint (alpha, beta, step count, pattern) resumes bitwise") {
    const Problem p = make_problem(12, 30, 13);
    const auto [outer, W0, beta0, alpha0] = gaussian_start(p, {1.0, -1.0, 1.0}, 1, 0.2);
    DualGD a(p.K, p.y, dual_start(outer, alpha0, beta0), settings_for(0.2, 0));
    a.step(40);
    const RowMatrix alpha = a.alpha(), beta = a.beta();
    const Mask mask = a.mask();
    const std::int64_t t = a.steps_taken(), stable = a.pattern().stable_step();
    DualGD b(p.K, p.y, dual_start(outer, alpha, beta), settings_for(0.2, 0));
    b.restore(t, mask, stable);
    a.step(60);
    b.step(60);
    CHECK(a.alpha() == b.alpha() && a.beta() == b.beta());
    CHECK(a.steps_taken() == 100 && b.steps_taken() == 100);
    CHECK(a.pattern().stable_step() == b.pattern().stable_step());
    CHECK_THROWS(b.restore(5, mask, 6), std::invalid_argument);
}

TEST_CASE("History: capacity from history_capacity() suffices, overflow is dropped") {
    const Problem p = make_problem(6, 20, 14);
    Vector outer = Vector::Ones(1);
    GDSettings s = settings_for(0.2, 50);
    s.record_every = 7;
    const std::int64_t cap = history_capacity(50, 7);
    CHECK(cap == 9);
    HistoryBuffers buffers(cap + 1, 6, -42.0, false);  // one slot more than the capacity given
    auto& [steps, loss, beta, alpha, mask, h] = buffers;
    h.capacity = cap;
    DualGD gd = DualGD::positive_start(p.X, p.y, positive_offsets(outer, 1e-3), s);
    const RunSummary r = gd.run(&h);
    // steps 0, 7, ..., 49 and the final state 50
    CHECK(r.n_records == 9 && h.count == 9);
    CHECK(steps[0] == 0 && steps[7] == 49 && steps[8] == 50 && steps[9] == -42);
    CHECK(loss[8] == r.loss && loss[9] == -42.0);
    CHECK(RowMatrix(Eigen::Map<RowMatrix>(beta.data() + 8 * 6, 1, 6)) == gd.beta());
    CHECK(beta[9 * 6] == -42.0);

    // A buffer that is too small keeps the first records and writes nothing beyond.
    std::vector<std::int64_t> small(4, -1);
    History h2;
    h2.steps = small;
    h2.capacity = 3;
    DualGD gd2 = DualGD::positive_start(p.X, p.y, positive_offsets(outer, 1e-3), s);
    CHECK(gd2.run(&h2).n_records == 3);
    CHECK(small[0] == 0 && small[1] == 7 && small[2] == 14 && small[3] == -1);
}

TEST_CASE("DenseGD mirrors the DualGD API") {
    const Problem p = make_problem(8, 20, 15);
    const auto [outer, W0, beta0, alpha0] = gaussian_start(p, {1.0}, 3, 0.3);
    DenseGD a(p.X, p.y, dense_start(outer, W0, alpha0), settings_for(0.2, 60));
    DenseGD b = a;
    int calls = 0;
    const RunSummary r = a.run(nullptr, 20, [&](const DenseGD&) { return ++calls == 2; });
    CHECK(r.status == Status::stopped && r.nit == 40);
    CHECK(b.step(40) == 40 && b.W() == a.W());
    a.set_eta(0.1);
    b.set_eta(0.1);
    a.step(5);
    b.step(5);
    CHECK(a.W() == b.W() && a.mask() == b.mask());
}

TEST_CASE("DenseGD::advance (blocks of neurons, fused) is apply() then evaluate(), bit for bit") {
    // Sizes with one block and several (the last partial), on the packed kernels and on Eigen's
    // per-neuron products; a trained outer layer with an output scale; the leaky ReLU with the
    // logistic loss; resynchronisations on the way (every 7 steps).
    struct Case {
        Index n, d, m;
        bool outer, leaky;
    };
    const Case cases[] = {
        {40, 2, 500, true, false}, {12, 3, 9, false, false}, {300, 5, 70, true, true}, {40, 2, 501, false, true}};
    auto same = [](const auto& a, const auto& b) {
        return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(*a.data()) * std::size_t(a.size())) == 0;
    };
    for (const Case& c : cases) {
        const Problem p = make_problem(c.n, c.d, 31);
        std::mt19937_64 gen(5);
        const RowMatrix W0 = gaussian(c.m, c.d, gen, 0.5);
        const Vector outer = gaussian(c.m, 1, gen, 1.0 / std::sqrt(double(c.m))).col(0);
        ModelSpec spec;
        Vector y = p.y;
        if (c.leaky) {
            spec.activation = Activation::leaky_relu;
            spec.loss = Loss::logistic;
            y = y.array().sign();
        }
        GDSettings s = settings_for(0.01, 80, spec);
        s.train_outer = c.outer;
        s.output_scale = c.outer ? 0.3 : 1.0;
        const RowMatrix alpha0 = RowMatrix::Zero(c.m, c.n);
        DenseGD fused(p.X, y, dense_start(outer, W0, alpha0), s);
        DenseGD plain(p.X, y, dense_start(outer, W0, alpha0), s);
        fused.set_resync_every(7);
        plain.set_resync_every(7);
        fused.step(80);  // advance() between steps
        for (int t = 0; t < 80; ++t) {
            plain.apply();
            plain.evaluate();
        }
        CHECK(same(fused.W(), plain.W()) && same(fused.alpha(), plain.alpha()) && same(fused.beta(), plain.beta()));
        CHECK(same(fused.outer(), plain.outer()) && same(fused.predictions(), plain.predictions()));
        CHECK(same(fused.residual(), plain.residual()) && fused.mask() == plain.mask());
        CHECK(fused.grad_norm() == plain.grad_norm() && fused.loss() == plain.loss());
        CHECK(fused.pattern().stable_step() == plain.pattern().stable_step() && fused.steps_taken() == 80);
        CHECK(std::isfinite(fused.loss()) && !(fused.W() == W0));  // it moved (not a vacuous comparison)
    }
}

TEST_CASE("WeightStep: the block products against plain loops, and blocks bitwise the whole") {
    // The weight-space step kernel of both front ends (gd/weight_step.hpp): beta = W X^T and the
    // step -eta a_k phi'(beta_k) g X against loops written here; on a block of rows, bitwise the
    // rows of the whole (what DenseGD::advance relies on), on the packed kernels (n = 300, d = 40
    // where the CPU has AVX-512F) and on Eigen's.
    const Index sizes[][3] = {{20, 3, 11}, {300, 40, 24}};
    for (const auto& sz : sizes) {
        const Index n = sz[0], d = sz[1], m = sz[2];
        const Problem p = make_problem(n, d, 17);
        std::mt19937_64 gen(9);
        const RowMatrix W = gaussian(m, d, gen, 0.5);
        const Vector a = gaussian(m, 1, gen, 1.0).col(0);
        const Vector g = gaussian(n, 1, gen, 1.0).col(0);
        const WeightStep kernel(p.X, m);
        RowMatrix beta(m, n), coeff(m, n), dW(m, d);
        kernel.project(W, beta);
        const ModelSpec spec;
        kernel.backward(beta, a, g, 0.1, spec, coeff, dW);
        RowMatrix beta_ref = RowMatrix::Zero(m, n), dW_ref = RowMatrix::Zero(m, d);
        for (Index k = 0; k < m; ++k)
            for (Index i = 0; i < n; ++i) {
                for (Index j = 0; j < d; ++j) beta_ref(k, i) += W(k, j) * p.X(i, j);
                const double u = beta_ref(k, i) > 0 ? -0.1 * a[k] * g[i] : 0.0;
                for (Index j = 0; j < d; ++j) dW_ref(k, j) += u * p.X(i, j);
            }
        CHECK_CLOSE(beta, beta_ref, 1e-12, 1e-13);
        CHECK_CLOSE(dW, dW_ref, 1e-11, 1e-12);
        CHECK(dW.cwiseAbs().maxCoeff() > 1e-3);  // a step was taken (not a vacuous comparison)
        if (!kernel.blocked()) continue;
        const Index k0 = 5, r = m - 7;
        RowMatrix beta_b(r, n), coeff_b(r, n), dW_b(r, d);
        kernel.project(W.middleRows(k0, r), beta_b);
        kernel.backward(beta_b, a.segment(k0, r), g, 0.1, spec, coeff_b, dW_b);
        CHECK(beta_b == beta.middleRows(k0, r) && dW_b == dW.middleRows(k0, r));
    }
}

RELUCORE_TEST_MAIN
