// The convex QPs of the minimum-norm problems (relucore/minnorm/minnorm_qp.hpp).
// Arrays are validated and allocated by the Python layer (relucore.theory.minnorm); the
// solves return the core's QPResult, bound read-only (its vectors as numpy copies).
#include "common.hpp"

#include "relucore/minnorm/minnorm_qp.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace py = pybind11;
using namespace relucore;
using namespace relucore::bindings;

namespace {

CArray<double> to_array(const Vector& v) {
    CArray<double> out(v.size());
    std::copy(v.data(), v.data() + v.size(), out.mutable_data());
    return out;
}

// The solvers leave r and nu empty when they stop before a solve (infeasible_start); the bound
// result always has n and p entries, zeros there.
QPResult completed(QPResult res, Index n, Index p) {
    if (res.r.size() != n) res.r = Vector::Zero(n);
    if (res.nu.size() != p) res.nu = Vector::Zero(p);
    return res;
}

void bind_qp_types(py::module_& m) {
    py::class_<QPSettings>(m, "QPSettings", "Settings of the minimum-norm QP solvers (QPSettings in minnorm_qp.hpp).")
        .def(py::init<>())
        .def_readwrite("max_block_iter", &QPSettings::max_block_iter,
                       "Block principal pivoting iterations before the primal fallback.")
        .def_readwrite("stall_limit", &QPSettings::stall_limit,
                       "Block iterations without fewer infeasibilities before the primal fallback.")
        .def_readwrite("max_iter", &QPSettings::max_iter, "Primal active-set iterations (0: 20 (n + p) + 100).")
        .def_readwrite("tol", &QPSettings::tol, "Relative tolerance of the sign tests.");

    py::class_<QPResult>(m, "QPResult",
                         "How a minimum-norm QP solve ended (QPResult in minnorm_qp.hpp); read-only, the arrays "
                         "are copies.")
        .def_property_readonly(
            "z", [](const QPResult& r) { return to_array(r.z); }, "The solution, shape (n,).")
        .def_property_readonly(
            "nu", [](const QPResult& r) { return to_array(r.nu); },
            "Equality multipliers (H z - c + E^T nu = r), shape (p,); zeros when no solve ran.")
        .def_property_readonly(
            "r", [](const QPResult& r) { return to_array(r.r); },
            "Reduced gradient, shape (n,): >= 0 at lower bounds, <= 0 at upper bounds, ~0 elsewhere; zeros when no "
            "solve ran.")
        .def_property_readonly(
            "state",
            [](const QPResult& r) {
                CArray<std::int8_t> out(static_cast<py::ssize_t>(r.state.size()));
                std::copy(r.state.begin(), r.state.end(), out.mutable_data());
                return out;
            },
            "Working set, int8 shape (n,): -1 at the lower bound, +1 at the upper bound, 0 free.")
        .def_readonly("status", &QPResult::status,
                      "A relucore.Status: optimal, max_iter, singular or infeasible_start.")
        .def_readonly("block_iterations", &QPResult::block_iterations, "Block principal pivoting iterations.")
        .def_readonly("primal_iterations", &QPResult::primal_iterations, "Primal active-set iterations.")
        .def_readonly("used_fallback", &QPResult::used_fallback,
                      "Whether the block method handed over to the primal method.");
}

}  // namespace

void bind_minnorm(py::module_& m) {
    bind_qp_types(m);
    m.def(
        "qp_box",
        [](const CArray<double>& H, const CArray<double>& c, const CArray<double>& lower, const CArray<double>& upper,
           const QPSettings& settings) {
            require_shape(H, "H", {-1, -1});
            const Index n = H.shape(0);
            require_shape(H, "H", {n, n});
            for (auto* a : {&c, &lower, &upper}) require_shape(*a, "vector", {n});
            QPResult res;
            {
                py::gil_scoped_release release;
                const Vector lo = ConstVectorMap(lower.data(), n), up = ConstVectorMap(upper.data(), n);
                res = solve_box_qp(ConstMatrixMap(H.data(), n, n), ConstVectorMap(c.data(), n), lo, up, settings);
            }
            return completed(std::move(res), n, 0);
        },
        py::arg("H"), py::arg("c"), py::arg("lower"), py::arg("upper"),
        py::arg_v("settings", QPSettings{}, "QPSettings()"),
        "min 1/2 z'Hz - c'z s.t. lower <= z <= upper (block principal pivoting, primal active-set fallback); "
        "returns a QPResult.");

    m.def(
        "qp_primal",
        [](const CArray<double>& H, const CArray<double>& c, const CArray<double>& E, const CArray<double>& e,
           const CArray<double>& lower, const CArray<double>& upper, const CArray<double>& z0,
           const CArray<std::int8_t>& state0, const QPSettings& settings) {
            require_shape(H, "H", {-1, -1});
            const Index n = H.shape(0);
            require_shape(H, "H", {n, n});
            require_shape(E, "E", {-1, n});
            const Index p = E.shape(0);
            require_shape(e, "e", {p});
            for (auto* a : {&c, &lower, &upper}) require_shape(*a, "vector", {n});
            require_shape(z0, "z0", {n});
            require_shape(state0, "state0", {n});
            QPResult res;
            {
                py::gil_scoped_release release;
                const Vector lo = ConstVectorMap(lower.data(), n), up = ConstVectorMap(upper.data(), n);
                const Vector z = ConstVectorMap(z0.data(), n);
                const std::vector<signed char> st(state0.data(), state0.data() + n);
                res = solve_qp_primal(ConstMatrixMap(H.data(), n, n), ConstVectorMap(c.data(), n),
                                      ConstMatrixMap(E.data(), p, n), ConstVectorMap(e.data(), p), lo, up, z, st,
                                      settings);
            }
            return completed(std::move(res), n, p);
        },
        py::arg("H"), py::arg("c"), py::arg("E"), py::arg("e"), py::arg("lower"), py::arg("upper"),
        py::arg("z0").noconvert(), py::arg("state0").noconvert(), py::arg_v("settings", QPSettings{}, "QPSettings()"),
        "min 1/2 z'Hz - c'z s.t. E z = e, lower <= z <= upper, by a primal active-set method from a feasible z0 "
        "(state0: -1/+1 at lower/upper bound in the initial working set, 0 free); returns a QPResult.");
}
