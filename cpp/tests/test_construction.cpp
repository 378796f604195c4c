// Named construction of the engines (gd/dual_gd.hpp, gd/dense_gd.hpp,
// meanfield/weight_gd.hpp): the start structs refuse positional
// brace-initialisation, the new entry points keep the views-cannot-dangle
// refusals, the default offset of DualGD::positive_start is default_offset(),
// and the 0.x positional forms no longer exist.
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

// The 0.x positional forms, in which two arguments of the same type swap silently, are gone in 1.0.
static_assert(!std::is_constructible_v<DualGD, RowMatrix, Vector, Vector, RowMatrix, RowMatrix, GDSettings>);
static_assert(!std::is_constructible_v<DualGD, std::shared_ptr<const RowMatrix>, Vector, Vector, RowMatrix, RowMatrix,
                                       GDSettings>);
static_assert(!std::is_constructible_v<DenseGD, RowMatrix, Vector, Vector, RowMatrix, RowMatrix, GDSettings>);
static_assert(!std::is_constructible_v<WeightGD, RowMatrix, Vector, RowMatrix, WeightGDSettings>);
static_assert(std::is_constructible_v<WeightGD, RowMatrix, Vector, WeightGDStart, WeightGDSettings>);

RELUCORE_TEST_MAIN
