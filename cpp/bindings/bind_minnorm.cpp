// The convex QPs of the minimum-norm problems (relucore/minnorm/minnorm_qp.hpp).
// Arrays are validated and allocated by the Python layer (relucore._minnorm).
#include "common.hpp"

#include "relucore/minnorm/minnorm_qp.hpp"

#include <algorithm>

namespace py = pybind11;
using namespace relucore;
using namespace relucore::bindings;

namespace {

QPSettings make_settings(int max_block_iter, int stall_limit, int max_iter, double tol) {
    QPSettings s;
    s.max_block_iter = max_block_iter;
    s.stall_limit = stall_limit;
    s.max_iter = max_iter;
    s.tol = tol;
    return s;
}

py::dict pack(const QPResult& r, CArray<double>& z, CArray<double>& rr, CArray<std::int8_t>& state,
              CArray<double>* nu) {
    const Index n = static_cast<Index>(r.state.size());
    double* zp = z.mutable_data();
    double* rp = rr.mutable_data();
    std::int8_t* sp = state.mutable_data();
    for (Index j = 0; j < n; ++j) {
        zp[j] = r.z[j];
        rp[j] = r.r.size() == n ? r.r[j] : 0.0;
        sp[j] = static_cast<std::int8_t>(r.state[static_cast<size_t>(j)]);
    }
    if (nu != nullptr) {
        double* np_ = nu->mutable_data();
        for (Index k = 0; k < r.nu.size(); ++k) np_[k] = r.nu[k];
    }
    py::dict d;
    d["status"] = r.status;
    d["block_iterations"] = r.block_iterations;
    d["primal_iterations"] = r.primal_iterations;
    d["used_fallback"] = r.used_fallback;
    return d;
}

}  // namespace

void bind_minnorm(py::module_& m) {
    m.def(
        "qp_box",
        [](const CArray<double>& H, const CArray<double>& c, const CArray<double>& lower, const CArray<double>& upper,
           CArray<double> z, CArray<double> r, CArray<std::int8_t> state, int max_block_iter, int stall_limit,
           int max_iter, double tol) {
            require_shape(H, "H", {-1, -1});
            const Index n = H.shape(0);
            require_shape(H, "H", {n, n});
            for (auto* a : {&c, &lower, &upper}) require_shape(*a, "vector", {n});
            require_shape(z, "z", {n});
            require_shape(r, "r", {n});
            require_shape(state, "state", {n});
            QPResult res;
            const QPSettings s = make_settings(max_block_iter, stall_limit, max_iter, tol);
            {
                py::gil_scoped_release release;
                const Vector lo = ConstVectorMap(lower.data(), n), up = ConstVectorMap(upper.data(), n);
                res = solve_box_qp(ConstMatrixMap(H.data(), n, n), ConstVectorMap(c.data(), n), lo, up, s);
            }
            return pack(res, z, r, state, nullptr);
        },
        py::arg("H"), py::arg("c"), py::arg("lower"), py::arg("upper"), py::arg("z").noconvert(),
        py::arg("r").noconvert(), py::arg("state").noconvert(),
        py::arg("max_block_iter") = defaults::minnorm_max_block_iter,
        py::arg("stall_limit") = defaults::minnorm_stall_limit, py::arg("max_iter") = 0,
        py::arg("tol") = defaults::minnorm_tol,
        "min 1/2 z'Hz - c'z s.t. lower <= z <= upper (block principal pivoting, primal active-set fallback).");

    m.def(
        "qp_primal",
        [](const CArray<double>& H, const CArray<double>& c, const CArray<double>& E, const CArray<double>& e,
           const CArray<double>& lower, const CArray<double>& upper, CArray<double> z, CArray<std::int8_t> state,
           CArray<double> nu, CArray<double> r, int max_iter, double tol) {
            require_shape(H, "H", {-1, -1});
            const Index n = H.shape(0);
            require_shape(H, "H", {n, n});
            require_shape(E, "E", {-1, n});
            const Index p = E.shape(0);
            require_shape(e, "e", {p});
            require_shape(nu, "nu", {p});
            for (auto* a : {&c, &lower, &upper}) require_shape(*a, "vector", {n});
            require_shape(z, "z", {n});
            require_shape(r, "r", {n});
            require_shape(state, "state", {n});
            QPResult res;
            const QPSettings s = make_settings(0, 0, max_iter, tol);
            {
                py::gil_scoped_release release;
                const Vector lo = ConstVectorMap(lower.data(), n), up = ConstVectorMap(upper.data(), n);
                Vector z0 = ConstVectorMap(z.data(), n);
                std::vector<signed char> st(static_cast<size_t>(n));
                for (Index j = 0; j < n; ++j) st[static_cast<size_t>(j)] = static_cast<signed char>(state.data()[j]);
                res = solve_qp_primal(ConstMatrixMap(H.data(), n, n), ConstVectorMap(c.data(), n),
                                      ConstMatrixMap(E.data(), p, n), ConstVectorMap(e.data(), p), lo, up, z0, st, s);
            }
            return pack(res, z, r, state, &nu);
        },
        py::arg("H"), py::arg("c"), py::arg("E"), py::arg("e"), py::arg("lower"), py::arg("upper"),
        py::arg("z").noconvert(), py::arg("state").noconvert(), py::arg("nu").noconvert(), py::arg("r").noconvert(),
        py::arg("max_iter") = 0, py::arg("tol") = defaults::minnorm_tol,
        "min 1/2 z'Hz - c'z s.t. E z = e, lower <= z <= upper, by a primal active-set method from a feasible z "
        "(state: -1/+1 at lower/upper bound in the initial working set, 0 free).");
}
