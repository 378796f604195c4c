// relucore._core.linear_phase and relucore._core.flow_follow: the linear phase of an activation
// pattern and the exact gradient flow (docs/math.md §13).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "certify_dict.hpp"
#include "common.hpp"
#include "relucore/gd/flow_follow.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace py = pybind11;
using relucore::Index;
using relucore::RowMatrix;
using relucore::bindings::CArray;
using namespace relucore::flow;

namespace {

// A 2-d array copied into an M (any storage order) entry by entry.
template <class M>
M to_dense(const CArray<typename M::Scalar>& a) {
    M out(a.shape(0), a.shape(1));
    auto v = a.template unchecked<2>();
    for (Index i = 0; i < out.rows(); ++i)
        for (Index j = 0; j < out.cols(); ++j) out(i, j) = v(i, j);
    return out;
}

Mat to_mat(const CArray<double>& a) {
    return to_dense<Mat>(a);
}

RowMatrix to_row(const CArray<double>& a) {
    return Eigen::Map<const RowMatrix>(a.data(), a.shape(0), a.shape(1));
}

Vec to_vec(const CArray<double>& a) {
    return Eigen::Map<const Vec>(a.data(), a.shape(0));
}

BoolMat to_bool(const CArray<bool>& a) {
    return to_dense<BoolMat>(a);
}

template <class M>
py::array_t<double> out_mat(const M& x) {
    py::array_t<double> a({static_cast<py::ssize_t>(x.rows()), static_cast<py::ssize_t>(x.cols())});
    auto v = a.mutable_unchecked<2>();
    for (Index i = 0; i < x.rows(); ++i)
        for (Index j = 0; j < x.cols(); ++j) v(i, j) = x(i, j);
    return a;
}

py::array_t<double> out_vec(const Vec& x) {
    py::array_t<double> a(static_cast<py::ssize_t>(x.size()));
    std::copy(x.data(), x.data() + x.size(), a.mutable_data());
    return a;
}

// A stack of equal-shape matrices as a (len(xs), rows, cols) array of their scalar.
template <class M>
py::array_t<typename M::Scalar> out_stack(const std::vector<M>& xs, Index rows, Index cols) {
    py::array_t<typename M::Scalar> a(
        {static_cast<py::ssize_t>(xs.size()), static_cast<py::ssize_t>(rows), static_cast<py::ssize_t>(cols)});
    auto v = a.template mutable_unchecked<3>();
    for (size_t k = 0; k < xs.size(); ++k)
        for (Index i = 0; i < rows; ++i)
            for (Index j = 0; j < cols; ++j) v(k, i, j) = xs[k](i, j);
    return a;
}

py::dict phase_dict(const Phase& ph, Index m, Index n) {
    const Index nA = ph.lam.size();
    py::dict d;
    d["A"] =
        py::array_t<std::int64_t>(static_cast<py::ssize_t>(nA), reinterpret_cast<const std::int64_t*>(ph.A.data()));
    d["M"] = out_mat(ph.M);
    d["lam"] = out_vec(ph.lam);
    d["V"] = out_mat(ph.V);
    d["c"] = out_vec(ph.c);
    d["z"] = out_vec(ph.z);
    d["rA"] = out_vec(ph.rA);
    d["r"] = out_vec(ph.r);
    d["B"] = out_stack(ph.B, n, nA);
    d["C"] = out_stack(ph.C, n, nA);
    d["beta_inf"] = out_mat(ph.beta_inf);
    d["alpha_inf"] = out_mat(ph.alpha_inf);
    (void)m;
    return d;
}

}  // namespace

void bind_flow(py::module_& m) {
    m.def(
        "linear_phase",
        [](const CArray<double>& K, const CArray<double>& y, const CArray<double>& signs, const CArray<double>& alpha,
           const CArray<double>& beta, const CArray<bool>& active, const CArray<bool>& sliding,
           std::optional<CArray<double>> r) {
            const Mat Km = to_mat(K);
            const Vec rv = r ? to_vec(*r) : Vec();
            const Phase ph = linear_phase(Km, to_vec(y), to_vec(signs), to_row(alpha), to_row(beta), to_bool(active),
                                          to_bool(sliding), r ? &rv : nullptr);
            return phase_dict(ph, beta.shape(0), beta.shape(1));
        },
        py::arg("K"), py::arg("y"), py::arg("signs"), py::arg("alpha"), py::arg("beta"), py::arg("active"),
        py::arg("sliding"), py::arg("r") = py::none(),
        "The linear phase of an activation pattern in modal form (docs/math.md §13): dict with A, M, lam, V, c, "
        "z, rA, r, B, C (m, n, |A|), beta_inf, alpha_inf.");
    m.def(
        "certify_gd",
        [](const CArray<double>& K, const CArray<double>& y, const CArray<double>& signs, const CArray<double>& alpha,
           const CArray<double>& beta, double eta) {
            return relucore::bindings::certificate_dict(
                certify_gd(to_mat(K), to_vec(y), to_vec(signs), to_row(alpha), to_row(beta), eta));
        },
        py::arg("K"), py::arg("y"), py::arg("signs"), py::arg("alpha"), py::arg("beta"), py::arg("eta"),
        "One try of the frozen-pattern proof at a GD state (docs/math.md §13): dict with status (0 holds, "
        "1 not strictly contracting, 2 diverges, 3 fails, 4 the limit failed its self-check), margin, contraction, "
        "fp_error, lam_max, the entry "
        "(k, i) of least slack with its limit, bound and err, need (GD steps after which it holds if the "
        "pattern stays; -1 no estimate, -2 never), reason (of status 4), alpha_inf, beta_inf.");
    m.def(
        "flow_follow",
        [](const CArray<double>& K, const CArray<double>& y, const CArray<double>& signs, const CArray<double>& alpha,
           const CArray<double>& beta, double t_max, const std::vector<double>& times, std::int64_t max_events,
           int time_exponent, int beta_exponent, const py::object& progress) {
            const Index mm = beta.shape(0), n = beta.shape(1);
            FlowOutput o;
            std::atomic<std::int64_t> events{0};
            const bool counted = !progress.is_none();
            std::function<void()> tick;
            if (counted) tick = [&] { progress(events.load()); };
            // With a bar, the flow runs on a helper thread and this one updates it (run_without_gil).
            relucore::bindings::run_without_gil(
                [&](const std::atomic<bool>*) {
                    o = follow(to_mat(K), to_vec(y), to_vec(signs), to_row(alpha), to_row(beta), t_max, times,
                               max_events, MessageUnits{time_exponent, beta_exponent}, counted ? &events : nullptr);
                },
                counted, tick);
            py::dict d;
            d["status"] = o.status;
            d["message"] = o.message;
            d["t_final"] = o.t_final;
            d["event_times"] = o.event_times;
            d["event_patterns"] = out_stack(o.event_patterns, mm, n);
            d["event_sliding"] = out_stack(o.event_sliding, mm, n);
            d["event_kinds"] = o.event_kinds;
            std::vector<Mat> at(o.alpha_t.begin(), o.alpha_t.end()), bt(o.beta_t.begin(), o.beta_t.end());
            d["alpha_t"] = out_stack(at, mm, n);
            d["beta_t"] = out_stack(bt, mm, n);
            d["alpha"] = out_mat(o.alpha);
            d["beta"] = out_mat(o.beta);
            d["pattern"] = out_stack(std::vector<BoolMat>{o.active}, mm, n)[py::int_(0)];
            d["sliding"] = out_stack(std::vector<BoolMat>{o.sliding}, mm, n)[py::int_(0)];
            d["limit"] = o.limit;
            d["margin"] = o.margin;
            d["rate"] = o.rate;
            d["last_event"] = o.last_event;
            d["fp_error"] = o.fp_error;
            d["reason"] = o.reason;
            d["motion"] = o.motion;
            return d;
        },
        py::arg("K"), py::arg("y"), py::arg("signs"), py::arg("alpha"), py::arg("beta"), py::arg("t_max"),
        py::arg("times"), py::arg("max_events"), py::arg("time_exponent") = 0, py::arg("beta_exponent") = 0,
        py::arg("progress").none(true) = py::none(),
        "Exact gradient flow from (alpha, beta) at t = 0 up to t_max (inf: the limit), event to event "
        "(docs/math.md §13); the state at the sorted times. The messages print times times 2^time_exponent and "
        "entries of beta times 2^beta_exponent (a run on exactly rescaled data, relucore._scaling). progress(events), "
        "if "
        "given, is called with the number of events so far while the flow runs (the flow is the same).");
}
