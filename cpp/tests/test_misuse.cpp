// Misuse of the public C++ API (issue "C++ that cannot be misused silently"):
// every row of its table either throws a clear exception, checked here with its
// message, or behaves correctly, checked against a reference run. The rows
// refused at compile time (assignment, temporaries given to a view) are the
// compile_fail tests; differently built TUs are the abi_* test.
#include "relucore/analysis.hpp"

#include "check.hpp"
#include "problems.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace relucore;
using namespace relucore_test;

namespace {

// Runs f and returns the message of the Exception it throws ("" if none, "<other>" for another type).
template <class Exception, class F>
std::string message_of(F&& f) {
    try {
        f();
    } catch (const Exception& e) {
        return e.what();
    } catch (...) {
        return "<other>";
    }
    return "";
}

#define CHECK_MESSAGE(Exception, expr, expected)                                                       \
    do {                                                                                               \
        const std::string rc_msg_ = message_of<Exception>([&] { (void)(expr); });                      \
        relucore_test::report(rc_msg_.find(expected) != std::string::npos && !rc_msg_.empty(),         \
                              "CHECK_MESSAGE(" #expr ", " #expected ")", __FILE__, __LINE__, rc_msg_); \
    } while (0)

const double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Fixture {
    Problem p = make_problem(12, 30, 7);
    Vector outer = Vector::Constant(2, 1.0);
    RowMatrix beta0 = RowMatrix::Constant(2, 12, 1e-3);
    RowMatrix alpha0 = Eigen::LLT<RowMatrix>(p.K).solve(beta0.transpose()).transpose();
    GDSettings s = settings_for(0.2, 200);
    DualGD::Start start() const { return dual_start(outer, alpha0, beta0); }
};

}  // namespace

TEST_CASE("wrong sizes name the argument and what was expected") {
    const Fixture f;
    const Vector y11 = f.p.y.head(11);
    CHECK_MESSAGE(std::invalid_argument, DualGD(f.p.K, y11, f.start(), f.s), "y must have n = 12 entries, got 11");
    const RowMatrix K_rect = f.p.K.leftCols(11);
    CHECK_MESSAGE(std::invalid_argument, DualGD(K_rect, f.p.y, f.start(), f.s),
                  "K must be square (n x n), got 12 x 11");
    DualGD::Start bad = f.start();
    bad.beta = RowMatrix::Constant(2, 11, 1e-3);
    CHECK_MESSAGE(std::invalid_argument, DualGD(f.p.K, f.p.y, std::move(bad), f.s),
                  "start.beta must be m x n = 2 x 12, got 2 x 11");
    CHECK_MESSAGE(std::invalid_argument,
                  DenseGD(f.p.X, y11, dense_start(f.outer, RowMatrix::Zero(2, 30), f.alpha0 * 0), f.s),
                  "y must have n = 12 entries, got 11");
    CHECK_MESSAGE(std::invalid_argument,
                  DenseGD(f.p.X, f.p.y, dense_start(f.outer, RowMatrix::Zero(2, 29), f.alpha0 * 0), f.s),
                  "start.W must be m x d = 2 x 30, got 2 x 29");
    DualGD gd(f.p.K, f.p.y, f.start(), f.s);
    CHECK_MESSAGE(std::invalid_argument, gd.set_labels(y11), "y must have n = 12 entries, got 11");
    // gram_trial and minnorm_single_gram check in every build type (this test runs in Release).
    CHECK_MESSAGE(std::invalid_argument, gram_trial(f.p.K, y11, GramTrialSettings{}), "y must have n = 12 entries");
    CHECK_MESSAGE(std::invalid_argument, gram_trial(K_rect, f.p.y, GramTrialSettings{}), "K must be square");
    CHECK_MESSAGE(std::invalid_argument, minnorm_single_gram(f.p.K, y11, 1.0), "y must have n = 12 entries");
    CHECK_MESSAGE(std::invalid_argument, minnorm_single_gram(K_rect, f.p.y, 1.0), "K must be square");
}

TEST_CASE("NaN in K, the labels or the start is refused, not a divergence or a stall") {
    const Fixture f;
    RowMatrix K = f.p.K;
    K(3, 4) = kNaN;
    CHECK_MESSAGE(std::invalid_argument, DualGD(K, f.p.y, f.start(), f.s), "K must be finite, got nan at entry (3, 4)");
    Vector y = f.p.y;
    y[5] = kNaN;
    CHECK_MESSAGE(std::invalid_argument, DualGD(f.p.K, y, f.start(), f.s), "y must be finite, got nan at entry 5");
    DualGD::Start st = f.start();
    st.beta(1, 2) = kNaN;
    CHECK_MESSAGE(std::invalid_argument, DualGD(f.p.K, f.p.y, std::move(st), f.s), "start.beta must be finite");
    st = f.start();
    st.alpha(0, 0) = std::numeric_limits<double>::infinity();
    CHECK_MESSAGE(std::invalid_argument, DualGD(f.p.K, f.p.y, std::move(st), f.s),
                  "start.alpha must be finite, got inf");
    RowMatrix X = f.p.X;
    X(0, 0) = kNaN;
    CHECK_MESSAGE(std::invalid_argument,
                  DenseGD(X, f.p.y, dense_start(f.outer, RowMatrix::Zero(2, 30), f.alpha0 * 0), f.s),
                  "X must be finite");
    // set_labels(NaN) is refused and leaves the engine as it was.
    DualGD gd(f.p.K, f.p.y, f.start(), f.s);
    const double loss = gd.loss();
    CHECK_MESSAGE(std::invalid_argument, gd.set_labels(y), "y must be finite");
    CHECK(gd.labels() == f.p.y && gd.loss() == loss);
    // minnorm_single_gram: NaN K or s = 0 refused (it reported "solved" with a NaN objective).
    CHECK_MESSAGE(std::invalid_argument, minnorm_single_gram(K, f.p.y, 1.0), "K must be finite");
    CHECK_MESSAGE(std::invalid_argument, minnorm_single_gram(f.p.K, f.p.y, 0.0),
                  "s must be non-zero and finite, got 0");
    CHECK_MESSAGE(std::invalid_argument, minnorm_single_gram(f.p.K, y, 1.0), "y must be finite");
    CHECK_MESSAGE(std::invalid_argument, gram_trial(K, f.p.y, GramTrialSettings{}), "K must be finite");
}

TEST_CASE("the minimum-norm QPs refuse non-finite data and inconsistent sizes (they reported optimal with NaN z)") {
    const Fixture f;
    const Index n = f.p.K.rows();
    const Vector c = f.p.y, lo = Vector::Constant(n, -std::numeric_limits<double>::infinity()),
                 up = Vector::Constant(n, std::numeric_limits<double>::infinity());
    RowMatrix K = f.p.K;
    K(2, 1) = kNaN;
    CHECK_MESSAGE(std::invalid_argument, solve_box_qp(K, c, lo, up, QPSettings{}),
                  "H must be finite, got nan at entry (2, 1)");
    Vector c_bad = c;
    c_bad[3] = std::numeric_limits<double>::infinity();
    CHECK_MESSAGE(std::invalid_argument, solve_box_qp(f.p.K, c_bad, lo, up, QPSettings{}),
                  "c must be finite, got inf at entry 3");
    Vector lo_bad = lo;
    lo_bad[0] = kNaN;
    CHECK_MESSAGE(std::invalid_argument, solve_box_qp(f.p.K, c, lo_bad, up, QPSettings{}),
                  "solve_box_qp: lower > upper");
    CHECK_MESSAGE(std::invalid_argument, solve_box_qp(f.p.K, c.head(n - 1), lo, up, QPSettings{}),
                  "solve_box_qp: inconsistent sizes");
    RowMatrix E = RowMatrix::Ones(1, n);
    const Vector e = Vector::Ones(1), z0 = Vector::Constant(n, 1.0 / static_cast<double>(n));
    const std::vector<signed char> st(static_cast<size_t>(n), 0);
    CHECK_MESSAGE(std::invalid_argument, solve_qp_primal(K, c, E, e, lo, up, z0, st, QPSettings{}), "H must be finite");
    Vector z_bad = z0;
    z_bad[4] = kNaN;
    CHECK_MESSAGE(std::invalid_argument, solve_qp_primal(f.p.K, c, E, e, lo, up, z_bad, st, QPSettings{}),
                  "z must be finite, got nan at entry 4");
    RowMatrix E_bad = E;
    E_bad(0, 5) = kNaN;
    CHECK_MESSAGE(std::invalid_argument, solve_qp_primal(f.p.K, c, E_bad, e, lo, up, z0, st, QPSettings{}),
                  "E must be finite");
    CHECK_MESSAGE(std::invalid_argument, solve_qp_primal(f.p.K, c, E, Vector::Ones(2), lo, up, z0, st, QPSettings{}),
                  "e must have p = 1 entries, got 2");
    CHECK_MESSAGE(std::invalid_argument,
                  solve_qp_primal(f.p.K, c, E, e, lo, up, z0, std::vector<signed char>(3, 0), QPSettings{}),
                  "state must have n = 12 entries, got 3");
    // The checked problems still solve: the simplex-constrained start is feasible.
    CHECK(solve_qp_primal(f.p.K, c, E, e, lo, up, z0, st, QPSettings{}).status == Status::optimal);
    CHECK(solve_box_qp(f.p.K, c, lo, up, QPSettings{}).status == Status::optimal);
}

TEST_CASE("sampler and History buffers carry their sizes") {
    GramSampleSpec spec;
    spec.n = 4;
    spec.values = {1.0};
    spec.counts = {3};  // < n: the Bartlett construction needs every multiplicity >= n
    GramSampleWork work;
    std::vector<double> K(16), y(4);
    CHECK_MESSAGE(std::invalid_argument, sample_gram_bartlett(spec, 1, K, y, work), "multiplicity >= n");
    spec.counts = {10};
    std::vector<double> short_K(15);
    CHECK_MESSAGE(std::invalid_argument, sample_gram_bartlett(spec, 1, short_K, y, work),
                  "K must hold at least 16 entries, got 15");
    CHECK_MESSAGE(std::invalid_argument, sample_gram_bartlett(spec, 1, K, Span<double>(y.data(), 3), work),
                  "y must hold at least 4 entries, got 3");
    sample_gram_bartlett(spec, 1, K, y, work);
    CHECK(K[0] > 0 && K[1] == K[4]);

    const Fixture f;
    DualGD gd(f.p.K, f.p.y, f.start(), f.s);
    gd.settings().record_every = 10;
    std::vector<double> loss(5);
    std::vector<double> beta(5 * 24 - 1);  // one entry short of 5 records of m n = 24
    History h;
    h.loss = loss;
    h.beta = beta;
    h.capacity = 5;
    CHECK_MESSAGE(std::invalid_argument, gd.run(&h), "history.beta must hold at least 120 entries, got 119");
    CHECK(h.count == 0);
    // The same run with room for its records: the refusal left the engine usable.
    beta.resize(5 * 24);
    h.beta = beta;
    const RunSummary r = gd.run(&h);
    CHECK(h.count == 5 && loss[0] > loss[4] && r.nit > 40);
}

TEST_CASE("a copy is an independent engine; a moved-from engine throws std::logic_error") {
    const Fixture f;
    DualGD a(f.p.K, f.p.y, f.start(), f.s);
    a.step(5);
    DualGD b(a);
    b.step(20);
    CHECK(a.steps_taken() == 5 && b.steps_taken() == 25);
    DualGD reference(f.p.K, f.p.y, f.start(), f.s);
    reference.step(5);
    CHECK(a.beta() == reference.beta() && a.alpha() == reference.alpha() && a.loss() == reference.loss());
    reference.step(20);
    CHECK(b.beta() == reference.beta() && b.loss() == reference.loss());
    b.set_labels(-f.p.y);  // changing the copy leaves the original alone
    CHECK(a.labels() == f.p.y);

    DualGD c(std::move(a));
    CHECK(c.steps_taken() == 5);
    const char* moved = "moved from";
    CHECK_MESSAGE(std::logic_error, a.step(1), moved);
    CHECK_MESSAGE(std::logic_error, a.run(), moved);
    CHECK_MESSAGE(std::logic_error, a.beta(), moved);
    CHECK_MESSAGE(std::logic_error, a.gram(), moved);
    CHECK_MESSAGE(std::logic_error, a.set_labels(f.p.y), moved);
    CHECK_MESSAGE(std::logic_error, a.evaluate(), moved);
    DualGD copy_of_moved(a);  // a copy of a moved-from engine is moved-from too
    CHECK_MESSAGE(std::logic_error, copy_of_moved.step(1), moved);
    c.step(20);
    CHECK(c.beta() == reference.beta());

    DenseGD d(f.p.X, f.p.y, dense_start(f.outer, RowMatrix::Zero(2, 30), RowMatrix::Zero(2, 12)), f.s);
    DenseGD e(std::move(d));
    CHECK_MESSAGE(std::logic_error, d.step(1), moved);
    CHECK_MESSAGE(std::logic_error, d.W(), moved);
    CHECK(e.step(3) == 3);
}

TEST_CASE("two threads stepping one engine: the second is refused with std::logic_error") {
    const Fixture f;
    DualGD gd(f.p.K, f.p.y, f.start(), f.s);
    std::mutex mu;
    std::condition_variable cv;
    bool inside = false, tried = false;
    std::string message;
    std::int64_t other_steps = -1;
    // The run's callback (on the running thread, between two steps) lets the other
    // thread try step() and waits for its answer: the overlap is certain.
    std::thread other([&] {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return inside; });
        message = message_of<std::logic_error>([&] { other_steps = gd.step(1); });
        tried = true;
        cv.notify_all();
    });
    const RunSummary r = gd.run(nullptr, 10, [&](DualGD& e) {
        std::unique_lock<std::mutex> lock(mu);
        inside = true;
        cv.notify_all();
        cv.wait(lock, [&] { return tried; });
        // The running thread may step inside its own callback.
        CHECK(e.step(2) == 2);
        return true;
    });
    other.join();
    CHECK(message.find("two threads are stepping the same engine") != std::string::npos);
    CHECK(other_steps == -1);
    CHECK(r.status == Status::stopped && r.nit == 12);
    // Once the run is over the engine is free again, for any thread.
    std::int64_t taken = 0;
    std::thread later([&] { taken = gd.step(3); });
    later.join();
    CHECK(taken == 3 && gd.steps_taken() == 15);
    // The refusal changed nothing: the same run without the intruder.
    DualGD reference(f.p.K, f.p.y, f.start(), f.s);
    reference.step(15);
    CHECK(gd.beta() == reference.beta() && gd.loss() == reference.loss());
}

TEST_CASE("engines own their K or X by default: the caller's copy may die, bitwise the borrowed run") {
    // n = 12 (the padded step) and n = 40 (the general products).
    for (const Index n : {Index(12), Index(40)}) {
        const Problem p = make_problem(n, n + 10, 21);
        const Vector outer = Vector::Constant(3, 1.0);
        const RowMatrix beta0 = RowMatrix::Constant(3, n, 1e-3);
        const RowMatrix alpha0 = Eigen::LLT<RowMatrix>(p.K).solve(beta0.transpose()).transpose();
        const GDSettings s = settings_for(0.5 / double(n), 300);
        DualGD borrowed(borrow, p.K, p.y, dual_start(outer, alpha0, beta0), s);
        borrowed.step(300);
        auto make_owning = [&] {
            RowMatrix K = p.K;  // dies when this returns
            return DualGD(std::move(K), p.y, dual_start(outer, alpha0, beta0), s);
        };
        DualGD owning = make_owning();
        {
            RowMatrix K_copy = p.K;  // an lvalue: copied, then destroyed and overwritten
            DualGD from_lvalue(K_copy, p.y, dual_start(outer, alpha0, beta0), s);
            K_copy.setConstant(kNaN);
            from_lvalue.step(300);
            CHECK(from_lvalue.beta() == borrowed.beta());
        }
        owning.step(300);
        CHECK(owning.beta() == borrowed.beta() && owning.alpha() == borrowed.alpha() &&
              owning.loss() == borrowed.loss());
        CHECK(owning.gram() == p.K && owning.gram().data() != p.K.data());  // its own K
        CHECK(borrowed.gram().data() == p.K.data());                        // the view, as asked
        DualGD copy(owning);
        CHECK(copy.gram().data() == owning.gram().data());  // copies share the immutable K

        auto make_dense = [&] {
            RowMatrix X = p.X;
            return DenseGD(std::move(X), p.y, dense_start(outer, alpha0 * p.X, RowMatrix::Zero(3, n)), s);
        };
        DenseGD dense = make_dense();
        DenseGD dense_borrowed(borrow, p.X, p.y, dense_start(outer, alpha0 * p.X, RowMatrix::Zero(3, n)), s);
        dense.step(50);
        dense_borrowed.step(50);
        CHECK(dense.W() == dense_borrowed.W() && dense.loss() == dense_borrowed.loss());
    }
}

TEST_CASE("all_finite on strided views, blocks and expressions answers as Eigen's allFinite") {
    // The finiteness checks read K through a Ref with a run-time row stride (summed a row at a
    // time): a bad entry anywhere, inside or outside the view, must be seen exactly when inside.
    const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    const RowMatrix base = RowMatrix::Random(7, 9);
    int mismatches = 0;
    for (const double v : {inf, -inf, nan, 1e308})
        for (Index i = 0; i < 7; ++i)
            for (Index j = 0; j < 9; ++j) {
                RowMatrix M = base;
                M(i, j) = v;
                const Eigen::MatrixXd C = M;  // column-major
                for (Index r0 : {0, 2})
                    for (Index c0 : {0, 3}) {
                        const ConstMatrixRef view = M.block(r0, c0, 4, 5);
                        const bool want = M.block(r0, c0, 4, 5).allFinite();
                        mismatches += all_finite(view) != want;
                        mismatches += all_finite(C.block(r0, c0, 4, 5)) != want;
                    }
                mismatches += all_finite(M) != M.allFinite();
                mismatches += all_finite(M.col(j)) != M.col(j).allFinite();  // inner stride 9
                mismatches += all_finite(M * 2.0) != (M * 2.0).allFinite();
            }
    CHECK(mismatches == 0);
    CHECK(all_finite(RowMatrix(0, 3)));
}

RELUCORE_TEST_MAIN
