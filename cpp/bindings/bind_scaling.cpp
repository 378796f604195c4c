// relucore._core's exact power-of-two normalisation (relucore/gd/scaling.hpp): the exponent rule,
// the units, the exact scaling of arrays, the representability check and the refusals' texts, for
// relucore._scaling (a thin wrapper). Per problem of a batch along an array's first axis.
#include "common.hpp"

#include "relucore/gd/rescaled_run.hpp"
#include "relucore/gd/scaling.hpp"

#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>

namespace py = pybind11;

namespace {

namespace sc = relucore::scaling;
using relucore::Index;
using relucore::Scalar;
using relucore::bindings::CArray;

using DataArray = py::array_t<double, py::array::c_style | py::array::forcecast>;
using IntArray = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;

// The exponents of every problem of a batch, with the plan's data kind; bound as ScalePlan.
struct Plan {
    IntArray ex, ey;
    bool gram = false;
};

struct Units {};

Index problem_size(const DataArray& a) {
    return a.shape(0) == 0 ? 0 : static_cast<Index>(a.size() / a.shape(0));
}

sc::Exponents exponents_at(const Plan& p, py::ssize_t b) {
    return {static_cast<int>(p.ex.at(b)), static_cast<int>(p.ey.at(b))};
}

// The exponents of each problem of a batch (X (B, n, d) or None, gram (B, n, n) or None, y (B, n)).
Plan exponents(const std::optional<DataArray>& X, const std::optional<DataArray>& gram, const DataArray& y) {
    if (y.ndim() < 1) throw py::value_error("y: expected a batch axis");
    const py::ssize_t B = y.shape(0);
    const DataArray* data = X ? &*X : (gram ? &*gram : nullptr);
    if (data != nullptr && (data->ndim() < 1 || data->shape(0) != B))
        throw py::value_error("the data and y have different batch sizes");
    Plan p{IntArray(B), IntArray(B), !X && gram};
    auto ex = p.ex.mutable_unchecked<1>();
    auto ey = p.ey.mutable_unchecked<1>();
    const Index ny = problem_size(y), nd = data == nullptr ? 0 : problem_size(*data);
    for (py::ssize_t b = 0; b < B; ++b) {
        const Scalar* xb = X ? X->data() + b * nd : nullptr;
        const Scalar* kb = !X && gram ? gram->data() + b * nd : nullptr;
        const sc::Exponents e = sc::exponents_of(xb, nd, kb, nd, y.data() + b * ny, ny);
        ex(b) = e.ex;
        ey(b) = e.ey;
    }
    return p;
}

void bind_unit(py::class_<Units>& cls, const char* name, sc::Unit u, const char* doc) {
    cls.def_property_readonly(name, [u](const Units&) { return u; }, doc);
}

// The exact rescaling a batch needs (None: every problem runs unscaled); a problem out of range of
// a model that is not homogeneous (not_scale_free non-empty) is refused.
std::optional<Plan> plan_scaling(const std::optional<DataArray>& X, const std::optional<DataArray>& gram,
                                 const DataArray& y, const std::string& not_scale_free) {
    Plan p = exponents(X, gram, y);
    auto ex = p.ex.mutable_unchecked<1>();
    auto ey = p.ey.mutable_unchecked<1>();
    bool any = false;
    for (py::ssize_t b = 0; b < ex.shape(0); ++b) {
        const sc::Exponents e = exponents_at(p, b);
        if (!sc::rescaled(sc::plan(e))) {
            ex(b) = ey(b) = 0;
            continue;
        }
        if (!not_scale_free.empty())
            throw py::value_error(
                sc::out_of_range_message(not_scale_free, e, p.gram, ex.shape(0) > 1 ? Index(b) : Index(-1)));
        any = true;
    }
    if (!any) return std::nullopt;
    return p;
}

Index per_problem(py::ssize_t size, py::ssize_t batch, const IntArray& ex, const IntArray& ey, const char* name) {
    if (batch != ex.size() || ey.size() != ex.size())
        throw py::value_error(std::string(name) + ": one exponent per problem along the first axis");
    return batch == 0 ? 0 : static_cast<Index>(size / batch);
}

void scale_exact(CArray<double> a, const IntArray& ex, const IntArray& ey, const sc::Unit& unit, int sign) {
    if (a.ndim() < 1) throw py::value_error("scale_exact: expected a batch axis");
    const Index per = per_problem(a.size(), a.shape(0), ex, ey, "scale_exact");
    double* data = a.mutable_data();
    for (py::ssize_t b = 0; b < a.shape(0); ++b) {
        const sc::Exponents e{static_cast<int>(ex.at(b)), static_cast<int>(ey.at(b))};
        sc::scale(data + b * per, per, sign * sc::power(unit, e));
    }
}

long first_unrepresentable(const DataArray& a, const IntArray& ex, const IntArray& ey, const sc::Unit& unit,
                           bool may_underflow,
                           const std::optional<py::array_t<bool, py::array::c_style | py::array::forcecast>>& skip) {
    if (a.ndim() < 1) throw py::value_error("first_unrepresentable: expected a batch axis");
    const Index per = per_problem(a.size(), a.shape(0), ex, ey, "first_unrepresentable");
    for (py::ssize_t b = 0; b < a.shape(0); ++b) {
        const sc::Exponents e{static_cast<int>(ex.at(b)), static_cast<int>(ey.at(b))};
        if (!sc::rescaled(e) || (skip && skip->at(b))) continue;
        if (!sc::representable(a.data() + b * per, per, unit, e, may_underflow)) return static_cast<long>(b);
    }
    return -1L;
}

IntArray scale_powers(const sc::Unit& unit, const IntArray& ex, const IntArray& ey) {
    if (ey.size() != ex.size()) throw py::value_error("scale_powers: ex and ey differ in size");
    IntArray out(ex.size());
    auto o = out.mutable_unchecked<1>();
    for (py::ssize_t b = 0; b < ex.size(); ++b)
        o(b) = sc::power(unit, {static_cast<int>(ex.at(b)), static_cast<int>(ey.at(b))});
    return out;
}

// A batch's run on its exactly rescaled problems back in the caller's units, in place (every problem
// checked first: a ValueError names the first whose result float64 cannot hold, nothing changed).
void scale_back_runs(CArray<double> alpha, CArray<double> beta, std::optional<CArray<double>> W, CArray<double> loss,
                     CArray<double> grad_norm, CArray<double> unresolved_bound, const IntArray& status,
                     const IntArray& ex, const IntArray& ey, bool gram, bool batched) {
    const py::ssize_t B = ex.size();
    if (ey.size() != B || status.size() != B || loss.size() != B || grad_norm.size() != B ||
        unresolved_bound.size() != B || alpha.ndim() != 3 || alpha.shape(0) != B || beta.size() != alpha.size() ||
        (W && (W->ndim() != 3 || W->shape(0) != B)))
        throw py::value_error("scale_back_run: one problem per entry of ex along every array's first axis");
    const Index m = static_cast<Index>(alpha.shape(1)), n = static_cast<Index>(alpha.shape(2));
    const Index d = W ? static_cast<Index>(W->shape(2)) : 0;
    auto problem = [&](py::ssize_t b, relucore::RunSummary& r) {
        r.status = static_cast<relucore::Status>(status.at(b));
        r.loss = loss.at(b);
        r.grad_norm = grad_norm.at(b);
        r.unresolved_bound = unresolved_bound.at(b);
        return std::make_tuple(relucore::MatrixMap(alpha.mutable_data() + b * m * n, m, n),
                               relucore::MatrixMap(beta.mutable_data() + b * m * n, m, n),
                               relucore::MatrixMap(W ? W->mutable_data() + b * m * d : nullptr, W ? m : 0, d));
    };
    for (py::ssize_t b = 0; b < B; ++b) {
        relucore::RunSummary r;
        auto [a, be, w] = problem(b, r);
        const sc::Exponents e{static_cast<int>(ex.at(b)), static_cast<int>(ey.at(b))};
        if (!sc::representable_run(e, r, a, be, w))
            throw py::value_error(sc::unrepresentable_message(e, gram, batched ? Index(b) : Index(-1)));
    }
    for (py::ssize_t b = 0; b < B; ++b) {
        relucore::RunSummary r;
        auto [a, be, w] = problem(b, r);
        sc::scale_back_run({static_cast<int>(ex.at(b)), static_cast<int>(ey.at(b))}, r, a, be, w);
        loss.mutable_at(b) = r.loss;
        grad_norm.mutable_at(b) = r.grad_norm;
        unresolved_bound.mutable_at(b) = r.unresolved_bound;
    }
}

void bind_units(py::module_& m) {
    py::class_<sc::Unit>(m, "ScaleUnit",
                         "The units of a quantity: it scales as 2^(x ex + y ey) when X -> 2^ex X and y -> 2^ey y.")
        .def_readonly("x", &sc::Unit::x)
        .def_readonly("y", &sc::Unit::y)
        .def("__eq__", [](const sc::Unit& a, const sc::Unit& b) { return a.x == b.x && a.y == b.y; })
        .def("__hash__", [](const sc::Unit& a) { return py::hash(py::make_tuple(a.x, a.y)); })
        .def("__repr__", [](const sc::Unit& a) {
            return "ScaleUnit(x=" + std::to_string(a.x) + ", y=" + std::to_string(a.y) + ")";
        });

    py::class_<Units> units(m, "ScaleUnits", "The units of relucore/gd/scaling.hpp; read-only.");
    bind_unit(units, "X", sc::units::X, "X.");
    bind_unit(units, "K", sc::units::K, "K and mu_1.");
    bind_unit(units, "Y", sc::units::Y, "y, beta, eps, the certificate's margins and error bounds.");
    bind_unit(units, "W", sc::units::W, "The inner weights.");
    bind_unit(units, "ALPHA", sc::units::ALPHA, "The dual coordinates.");
    bind_unit(units, "ETA", sc::units::ETA, "eta, and gradient-flow time.");
    bind_unit(units, "GRAD", sc::units::GRAD, "Gradient norms and tol.");
    bind_unit(units, "LOSS", sc::units::LOSS, "The loss.");
    bind_unit(units, "OBJECTIVE", sc::units::OBJECTIVE, "1/2 sum ||w_k||^2 (minnorm).");
    m.attr("scale_units") = Units{};
}

}  // namespace

void bind_scaling(py::module_& m) {
    bind_units(m);
    py::class_<Plan>(m, "ScalePlan",
                     "Per problem of a batch: the data were divided by 2^ex (X) and 2^ey (y); 0 where a problem "
                     "runs unscaled. gram: the data are a Gram matrix.")
        .def_readonly("ex", &Plan::ex)
        .def_readonly("ey", &Plan::ey)
        .def_readonly("gram", &Plan::gram);

    m.def(
        "binary_exponent",
        [](const DataArray& a) { return sc::binary_exponent(a.data(), static_cast<Index>(a.size())); }, py::arg("a"),
        "The binary exponent e of max |a| (max |a| = f 2^e with f in [0.5, 1)); 0 for an empty or all-zero a, or "
        "one with an entry that is not finite.");
    m.def("scale_exponents", &exponents, py::arg("X"), py::arg("gram"), py::arg("y"),
          "The exponents of each problem of a batch whatever their range (X (B, n, d) or None, gram (B, n, n) or "
          "None, y (B, n)): ex of max |x_ij|, else half (floor) that of max |K_ij|; ey of max |y_i|.");
    m.def("plan_scaling", &plan_scaling, py::arg("X"), py::arg("gram"), py::arg("y"), py::arg("not_scale_free") = "",
          "The exact rescaling a batch needs (None: every problem runs unscaled); not_scale_free names what makes "
          "the model not homogeneous (\"\" when it is): then a problem out of the safe range is refused with a "
          "ValueError naming the quantity and the range.");
    m.def("scale_powers", &scale_powers, py::arg("unit"), py::arg("ex"), py::arg("ey"),
          "The exponent unit.x ex + unit.y ey of a quantity's factor, per problem.");
    m.def("scale_exact", &scale_exact, py::arg("a").noconvert(), py::arg("ex"), py::arg("ey"), py::arg("unit"),
          py::arg("sign"),
          "a (float64, C-contiguous, the batch axis first) times 2^(sign (unit.x ex + unit.y ey)) per problem, in "
          "place, correctly rounded as np.ldexp.");
    m.def("first_unrepresentable", &first_unrepresentable, py::arg("a"), py::arg("ex"), py::arg("ey"), py::arg("unit"),
          py::arg("may_underflow"), py::arg("skip"),
          "The first rescaled problem (not skipped) whose a, computed in the rescaled units, does not fit in float64 "
          "once scaled back; -1 when none.");
    m.def(
        "unrepresentable_message",
        [](int ex, int ey, bool gram, long problem) {
            return sc::unrepresentable_message({ex, ey}, gram, static_cast<Index>(problem));
        },
        py::arg("ex"), py::arg("ey"), py::arg("gram"), py::arg("problem"),
        "Why a result computed on the exactly rescaled copy cannot be returned in float64 (problem: its index in a "
        "batch, -1 for a single problem).");
    m.def("scale_back_run", &scale_back_runs, py::arg("alpha").noconvert(), py::arg("beta").noconvert(),
          py::arg("W").noconvert(), py::arg("loss").noconvert(), py::arg("grad_norm").noconvert(),
          py::arg("unresolved_bound").noconvert(), py::arg("status"), py::arg("ex"), py::arg("ey"), py::arg("gram"),
          py::arg("batched"),
          "A batch's run on its exactly rescaled problems back in the caller's units, in place "
          "(gd/rescaled_run.hpp: alpha, beta (B, m, n), W (B, m, d) or None, the (B,) loss, gradient norm and "
          "unresolved bound); every problem is checked first, and a ValueError names the first whose result "
          "float64 cannot hold (a diverged run reports what it reached), nothing changed.");
    m.def(
        "eta_out_of_range_message",
        [](double eta, int ex, int ey) { return sc::eta_out_of_range_message(eta, {ex, ey}); }, py::arg("eta"),
        py::arg("ex"), py::arg("ey"), "The refusal of a step that leaves float64's range on the rescaled copy.");
    m.def(
        "time_out_of_range_message",
        [](double t, int ex, int ey) { return sc::time_out_of_range_message(t, {ex, ey}); }, py::arg("t"),
        py::arg("ex"), py::arg("ey"), "The refusal of a flow time that leaves float64's range on the rescaled copy.");
    m.def(
        "minnorm_unrepresentable_message",
        [](int ex, int ey, const std::string& data, double log2_objective) {
            return sc::minnorm_unrepresentable_message({ex, ey}, data, log2_objective);
        },
        py::arg("ex"), py::arg("ey"), py::arg("data"), py::arg("log2_objective"),
        "Why a minimum-norm solution computed on the exactly rescaled copy cannot be returned in float64.");
}
