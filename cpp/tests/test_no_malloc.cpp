// The hot loop allocates nothing: Eigen's runtime allocation guard
// (EIGEN_RUNTIME_NO_MALLOC) is switched on around step() and run().
//
// eigen_assert is redefined to count violations instead of aborting, so the
// check also works in Release builds (where the default eigen_assert is a
// no-op) and a negative control proves the guard is live.
#define EIGEN_RUNTIME_NO_MALLOC
#include <string>
namespace relucore_test {
inline int eigen_assert_failures = 0;
inline std::string eigen_assert_last;
}  // namespace relucore_test
#define eigen_assert(x)                             \
    do {                                            \
        if (!(x)) {                                 \
            ++relucore_test::eigen_assert_failures; \
            relucore_test::eigen_assert_last = #x;  \
        }                                           \
    } while (false)

#include "check.hpp"
#include "problems.hpp"

#include "relucore/meanfield/weight_gd.hpp"
#include "relucore/random/fused_gram.hpp"

using namespace relucore;
using namespace relucore_test;

namespace {

// Runs f with heap allocation forbidden; returns the number of Eigen
// allocations attempted meanwhile.
template <class F>
int allocations_during(F&& f) {
    const int before = eigen_assert_failures;
    Eigen::internal::set_is_malloc_allowed(false);
    f();
    Eigen::internal::set_is_malloc_allowed(true);
    if (eigen_assert_failures != before) std::fprintf(stderr, "  last: %s\n", eigen_assert_last.c_str());
    return eigen_assert_failures - before;
}

}  // namespace

TEST_CASE("negative control: the guard catches an allocation") {
    const int n = allocations_during([] {
        RowMatrix tmp(64, 64);
        tmp.setZero();
    });
    CHECK(n >= 1);
}

TEST_CASE("DualGD::step and run allocate nothing") {
    const Problem p = make_problem(24, 50, 21);
    const auto [outer, W0, beta0, alpha0] = gaussian_start(p, {1.0, -1.0, 0.5, -0.5}, 2, 0.3);
    for (int variant = 0; variant < 2; ++variant) {
        ModelSpec spec;
        if (variant == 1) {
            spec.activation = Activation::leaky_relu;
            spec.loss = Loss::logistic;
        }
        DualGD gd(p.K, p.y, dual_start(outer, alpha0, beta0), settings_for(0.2, 200, spec));
        CHECK(allocations_during([&] { gd.step(100); }) == 0);
        CHECK(gd.steps_taken() == 100);
        // The resynchronisation of beta from alpha (every defaults::resync_every steps).
        CHECK(allocations_during([&] { gd.resync(); }) == 0);
        // Recording into caller-owned buffers, a callback and the stopping rules: still nothing.
        std::vector<double> loss(history_capacity(200, 10));
        std::vector<double> beta(loss.size() * 4 * 24);
        std::vector<std::uint8_t> mask(beta.size());
        History h;
        h.loss = loss;
        h.beta = beta;
        h.mask = mask;
        h.capacity = static_cast<std::int64_t>(loss.size());
        gd.settings().record_every = 10;
        int calls = 0;
        RunSummary r;
        CHECK(allocations_during([&] { r = gd.run(&h, 25, [&](const DualGD&) { ++calls; }); }) == 0);
        CHECK(r.nit == 200 && calls == 4 && h.count > 0);
        CHECK(allocations_during([&] {
                  gd.set_eta(0.1);
                  gd.set_labels(p.y);
                  gd.step(3);
              }) == 0);
    }
}

TEST_CASE("DenseGD::step allocates nothing") {
    const Problem p = make_problem(16, 40, 22);
    const auto [outer, W0, beta0, alpha0] = gaussian_start(p, {1.0, -1.0}, 3, 0.3);
    DenseGD gd(p.X, p.y, dense_start(outer, W0, alpha0), settings_for(0.2, 50));
    CHECK(allocations_during([&] { gd.step(50); }) == 0);
    CHECK(gd.steps_taken() == 50);
    CHECK(allocations_during([&] { gd.resync(); }) == 0);
    // Several blocks of neurons in advance(), with a trained outer layer.
    const Problem q = make_problem(40, 2, 24);
    std::mt19937_64 gen(6);
    const Index m = 500;
    GDSettings s = settings_for(0.05, 50);
    s.train_outer = true;
    s.output_scale = 0.5;
    DenseGD wide(q.X, q.y, dense_start(gaussian(m, 1, gen).col(0), gaussian(m, 2, gen), RowMatrix::Zero(m, 40)), s);
    CHECK(allocations_during([&] { wide.step(50); }) == 0);
    CHECK(wide.steps_taken() == 50);
    // The outer layer turned on after construction: settings() sizes its buffer, the steps allocate nothing.
    GDSettings plain = settings_for(0.05, 50);
    DenseGD turned(q.X, q.y, dense_start(gaussian(m, 1, gen).col(0), gaussian(m, 2, gen), RowMatrix::Zero(m, 40)),
                   plain);
    turned.settings() = s;
    CHECK(allocations_during([&] { turned.step(50); }) == 0);
}

namespace {
// A registered "BLAS" that only records the call: the dispatch around it
// (argument mapping, the one-thread guard) must not allocate either.
int blas_calls = 0;
void count_dsyrk(char*, char*, int*, int*, double*, double*, int*, double*, double*, int*) {
    ++blas_calls;
}
void count_dgemm(char*, char*, int*, int*, int*, double*, double*, int*, double*, int*, double*, double*, int*) {
    ++blas_calls;
}
int threads = 2;
void set_threads(int t) {
    threads = t;
}
int get_threads() {
    return threads;
}
}  // namespace

TEST_CASE("forming K and W into caller-owned storage allocates nothing (built-in kernels and BLAS dispatch)") {
    const Index n = defaults::blas_syrk_min_rows, m = defaults::blas_gemm_min_rows;  // large enough for the BLAS
    const Problem p = make_problem(n, 37, 23);
    RowMatrix K(n, n), W = RowMatrix::Zero(m, 37);
    std::mt19937_64 gen(4);
    const RowMatrix C = gaussian(m, n, gen);
    std::vector<double> Kf(static_cast<std::size_t>(n * n)), Xf(static_cast<std::size_t>(n * 37));
    const CounterStream s(5, 1);
    CHECK(allocations_during([&] {
              gram_matrix(p.X, K);
              add_row_combination(C, p.X, W);
              fused_draw_gram(s, ZLaw::gaussian, n, 37, nullptr, Kf.data(), Xf.data());
          }) == 0);
    const blas::Library lib{&count_dgemm, &count_dsyrk, &set_threads, &get_threads};
    blas::register_blas(&lib);
    CHECK(allocations_during([&] {
              gram_matrix(p.X, K);
              add_row_combination(C, p.X, W);
          }) == 0);
    blas::register_blas(nullptr);
    CHECK(blas_calls == 2 && threads == 2);
}

TEST_CASE("WeightGD batch steps (matrix products, built-in and BLAS dispatch) allocate nothing") {
    const Problem p = make_problem(24, 9, 25);
    std::mt19937_64 gen(6);
    WeightGDStart start;
    start.a = gaussian(600, 1, gen, 0.5).col(0);
    start.w = gaussian(600, 9, gen, 0.5);
    start.b = gaussian(600, 1, gen, 0.5).col(0);
    const blas::Library lib{&count_dgemm, &count_dsyrk, &set_threads, &get_threads};
    for (const bool with_blas : {false, true})
        for (const Index batch : {Index(24), Index(5), Index(1)}) {  // 1: one example (d = 9 > 3: not fused)
            WeightGDSettings s;
            s.step = 0.1;
            s.batch_size = batch;
            s.temperature = 0.01;
            s.n_threads = 1;
            WeightGD engine(p.X, p.y, start, s);
            blas::register_blas(with_blas ? &lib : nullptr);
            const int before = blas_calls;
            CHECK(allocations_during([&] { engine.run(0, 20, false); }) == 0);
            blas::register_blas(nullptr);
            CHECK(engine.steps_taken() == 20);
            // The mini-batch's products go to a registered BLAS; one example takes WeightStep::project_one
            // (no BLAS); the full batch may take the packed AVX-512 kernels (the CPU decides).
            if (batch == 5) CHECK((blas_calls > before) == with_blas);
            if (batch == 1) CHECK(blas_calls == before);
        }
}

RELUCORE_TEST_MAIN
