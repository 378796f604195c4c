// Named construction of the engines (gd/dual_gd.hpp, gd/dense_gd.hpp,
// meanfield/weight_gd.hpp): the start structs refuse positional
// brace-initialisation, the new entry points keep the views-cannot-dangle
// refusals, the default offset of DualGD::positive_start is default_offset(),
// and the deprecated positional forms (kept for one release) give bitwise the
// same engines as the named ones.
#include "check.hpp"
#include "problems.hpp"

#include <memory>
#include <type_traits>

using namespace relucore;
using namespace relucore_test;

// The start structs are set field by field: no aggregate (positional) initialisation.
static_assert(!std::is_aggregate_v<DualGD::Start> && !std::is_aggregate_v<DualGD::PositiveStart>);
static_assert(!std::is_aggregate_v<DenseGD::Start> && !std::is_aggregate_v<WeightGDStart>);
static_assert(!std::is_constructible_v<DualGD::Start, Vector, RowMatrix, RowMatrix>);
static_assert(!std::is_constructible_v<DenseGD::Start, Vector, RowMatrix, RowMatrix>);
static_assert(std::is_default_constructible_v<DualGD::Start> && std::is_default_constructible_v<WeightGDStart>);

// The owning entry points take any matrix: moved in (a temporary) or copied ...
using Start = DualGD::Start;
using ColMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic>;
using Product = decltype(RowMatrix() * RowMatrix());
static_assert(std::is_constructible_v<DualGD, const RowMatrix&, const Vector&, Start, const GDSettings&>);
static_assert(std::is_constructible_v<DualGD, RowMatrix, const Vector&, Start, const GDSettings&>);
static_assert(std::is_constructible_v<DualGD, RowMatrix&&, const Vector&, Start, const GDSettings&>);
static_assert(std::is_constructible_v<DualGD, ConstMatrixMap, const Vector&, Start, const GDSettings&>);
static_assert(std::is_constructible_v<DualGD, const ColMatrix&, const Vector&, Start, const GDSettings&>);
static_assert(std::is_constructible_v<DualGD, Product, const Vector&, Start, const GDSettings&>);
static_assert(
    std::is_constructible_v<DualGD, std::shared_ptr<const RowMatrix>, const Vector&, const Start&, const GDSettings&>);
static_assert(std::is_constructible_v<DenseGD, RowMatrix, const Vector&, DenseGD::Start, const GDSettings&>);
static_assert(std::is_constructible_v<DenseGD, const ColMatrix&, const Vector&, DenseGD::Start, const GDSettings&>);
// ... the borrowed views (relucore::borrow) accept storage that outlives the engine ...
static_assert(std::is_constructible_v<DualGD, borrow_t, const RowMatrix&, const Vector&, Start, const GDSettings&>);
static_assert(std::is_constructible_v<DualGD, borrow_t, ConstMatrixMap, const Vector&, Start, const GDSettings&>);
static_assert(
    std::is_constructible_v<DualGD, borrow_t, const ConstMatrixRef&, const Vector&, Start, const GDSettings&>);
static_assert(
    std::is_constructible_v<DenseGD, borrow_t, const RowMatrix&, const Vector&, DenseGD::Start, const GDSettings&>);
// ... and refuse what would leave them viewing a temporary.
static_assert(!std::is_constructible_v<DualGD, borrow_t, RowMatrix, const Vector&, Start, const GDSettings&>);
static_assert(!std::is_constructible_v<DualGD, borrow_t, RowMatrix&&, const Vector&, Start, const GDSettings&>);
static_assert(!std::is_constructible_v<DualGD, borrow_t, ConstMatrixRef, const Vector&, Start, const GDSettings&>);
static_assert(!std::is_constructible_v<DualGD, borrow_t, const ColMatrix&, const Vector&, Start, const GDSettings&>);
static_assert(!std::is_constructible_v<DualGD, borrow_t, Product, const Vector&, Start, const GDSettings&>);
static_assert(!std::is_constructible_v<DenseGD, borrow_t, RowMatrix, const Vector&, DenseGD::Start, const GDSettings&>);
static_assert(
    !std::is_constructible_v<DenseGD, borrow_t, const ColMatrix&, const Vector&, DenseGD::Start, const GDSettings&>);
// Arguments in the wrong order do not compile (the swaps the positional forms allowed).
static_assert(!std::is_constructible_v<DualGD, const RowMatrix&, Start, const Vector&, const GDSettings&>);
static_assert(!std::is_constructible_v<DualGD, const RowMatrix&, const Vector&, const GDSettings&, Start>);

namespace {

template <class Engine>
bool same_state(const Engine& a, const Engine& b) {
    return a.alpha() == b.alpha() && a.beta() == b.beta() && a.loss() == b.loss() && a.grad_norm() == b.grad_norm() &&
           a.mask() == b.mask() && a.steps_taken() == b.steps_taken();
}

}  // namespace

TEST_CASE("DualGD::positive_start: offsets by matrix, by value and by default") {
    const Problem p = make_problem(8, 40, 2);
    Vector outer(2);
    outer << 1.0, -1.0;
    DualGD::PositiveStart by_default;
    by_default.outer = outer;
    const DualGD a = DualGD::positive_start(p.X, p.y, by_default, settings_for(0.2, 0));
    const double eps = default_offset(p.y, 2, defaults::C_alpha);
    CHECK((a.beta().array() == eps).all());
    DualGD::PositiveStart by_value;
    by_value.outer = outer;
    by_value.offset = eps;
    DualGD::PositiveStart by_matrix;
    by_matrix.outer = outer;
    by_matrix.eps = RowMatrix::Constant(2, 8, eps);
    CHECK(same_state(a, DualGD::positive_start(p.X, p.y, by_value, settings_for(0.2, 0))));
    CHECK(same_state(a, DualGD::positive_start(p.X, p.y, by_matrix, settings_for(0.2, 0))));
    // W = alpha X reproduces beta0 = eps (w_perp = 0), and K is owned.
    CHECK_CLOSE(RowMatrix(a.alpha() * p.X * p.X.transpose()), a.beta(), 1e-10, 1e-15);
    by_matrix.eps = RowMatrix::Constant(2, 7, eps);
    CHECK_THROWS(DualGD::positive_start(p.X, p.y, by_matrix, settings_for(0.2, 0)), std::invalid_argument);
    by_value.offset = -1e-3;
    CHECK_THROWS(DualGD::positive_start(p.X, p.y, by_value, settings_for(0.2, 0)), std::invalid_argument);
}

TEST_CASE("DenseGD::Start and DualGD::Start: shapes are checked field by field") {
    const Problem p = make_problem(6, 20, 4);
    DenseGD::Start d;
    d.outer = Vector::Ones(2);
    d.W = RowMatrix::Zero(2, 20);
    d.alpha = RowMatrix::Zero(2, 6);
    const DenseGD ok(p.X, p.y, d, settings_for(0.1, 0));
    CHECK(ok.W() == d.W && ok.n_neurons() == 2);
    d.W = RowMatrix::Zero(2, 19);
    CHECK_THROWS(DenseGD(p.X, p.y, d, settings_for(0.1, 0)), std::invalid_argument);
    d.W = RowMatrix::Zero(2, 20);
    d.alpha = RowMatrix();  // alpha is required (zero unless resuming)
    CHECK_THROWS(DenseGD(p.X, p.y, d, settings_for(0.1, 0)), std::invalid_argument);
    DualGD::Start s;
    s.outer = Vector::Ones(2);
    s.alpha = RowMatrix::Zero(2, 6);
    CHECK_THROWS(DualGD(p.K, p.y, s, settings_for(0.1, 0)), std::invalid_argument);  // beta missing
    s.beta = RowMatrix::Constant(2, 6, 0.1);
    const DualGD dual(p.K, p.y, s, settings_for(0.1, 0));
    CHECK(dual.beta() == s.beta && dual.outer() == s.outer);
    CHECK_THROWS(DualGD(std::shared_ptr<const RowMatrix>(), p.y, s, settings_for(0.1, 0)), std::invalid_argument);
}

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
TEST_CASE("deprecated positional forms forward to the named ones, bitwise") {
    const Problem p = make_problem(10, 50, 6);
    Vector outer(3);
    outer << 1.0, -1.0, 0.5;
    std::mt19937_64 gen(1);  // W0, then theta0 below
    const RowMatrix W0 = gaussian(3, 50, gen, 0.3);
    const RowMatrix beta0 = W0 * p.X.transpose();
    const RowMatrix alpha0 = RowMatrix::Zero(3, 10);
    const GDSettings s = settings_for(0.2, 0);

    DualGD named(p.K, p.y, dual_start(outer, alpha0, beta0), s);
    DualGD old(p.K, p.y, outer, alpha0, beta0, s);
    auto K = std::make_shared<const RowMatrix>(p.K);
    DualGD named_shared(K, p.y, dual_start(outer, alpha0, beta0), s);
    DualGD old_shared(K, p.y, outer, alpha0, beta0, s);
    DenseGD dense_named(p.X, p.y, dense_start(outer, W0, alpha0), s);
    DenseGD dense_old(p.X, p.y, outer, W0, alpha0, s);
    DualGD pos_named = DualGD::positive_start(p.X, p.y, positive_offsets(outer, 1e-3), s);
    DualGD pos_old = DualGD::positive_init(p.X, p.y, outer, 1e-3, s);
    const RowMatrix eps = RowMatrix::Constant(3, 10, 2e-3);
    DualGD pos_matrix_named = DualGD::positive_start(p.X, p.y, positive_offsets(outer, eps), s);
    DualGD pos_matrix_old = DualGD::positive_init(p.X, p.y, outer, eps, s);
    for (int round = 0; round < 2; ++round) {
        CHECK(same_state(named, old) && same_state(named_shared, old_shared) && same_state(named, named_shared));
        CHECK(same_state(dense_named, dense_old) && dense_named.W() == dense_old.W());
        CHECK(same_state(pos_named, pos_old) && same_state(pos_matrix_named, pos_matrix_old));
        for (auto* e :
             {&named, &old, &named_shared, &old_shared, &pos_named, &pos_old, &pos_matrix_named, &pos_matrix_old})
            e->step(25);
        dense_named.step(25);
        dense_old.step(25);
    }

    // WeightGD: the packed theta0 of the old form and the named neurons.
    WeightGDSettings ws;
    ws.step = 0.1;
    ws.temperature = 1e-3;
    ws.batch_size = 3;
    const RowMatrix theta0 = gaussian(20, 50 + 2, gen, 0.5);
    WeightGDStart start;
    start.a = theta0.col(0);
    start.w = theta0.middleCols(1, 50);
    start.b = theta0.col(51);
    WeightGD w_named(p.X, p.y, start, ws), w_old(p.X, p.y, theta0, ws);
    w_named.run(0, 30, false);
    w_old.run(0, 30, false);
    RowMatrix t1(20, 52), t2(20, 52);
    w_named.theta(t1);
    w_old.theta(t2);
    CHECK(t1 == t2 && w_named.objective() == w_old.objective());
}
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

RELUCORE_TEST_MAIN
