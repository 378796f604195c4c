// relucore._core.linear_phase and relucore._core.flow_follow: the linear phase of an activation
// pattern and the exact gradient flow (docs/math.md §13).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "certificate_types.hpp"
#include "common.hpp"
#include "limit_run.hpp"
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
using relucore::bindings::dense_array;
using relucore::bindings::stack_array;
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

}  // namespace

// _core.FlowOutput: flow::FlowOutput (gd/flow_follow.hpp) with the loss of the returned state and the
// examples it leaves unfit or cannot fit, as a read-only class; arrays are copies.
struct FlowRun : FlowOutput {
    double loss = 0.0;
    std::vector<std::int64_t> unfit, out_of_reach;
};

static void bind_flow_output(py::module_& m) {
    using relucore::bindings::int64_array;
    py::class_<FlowRun>(m, "FlowOutput",
                        "The exact gradient flow from a state, event to event (relucore/gd/flow_follow.hpp, "
                        "docs/math.md §13).")
        .def_readonly("status", &FlowOutput::status, "certified, stalled, uncertified, t_max, max_events or stuck.")
        .def_readonly("message", &FlowOutput::message, "The status in words.")
        .def_readonly("t_final", &FlowOutput::t_final, "Time of the returned state (inf for the limit).")
        .def_property_readonly(
            "event_times",
            [](const FlowRun& o) {
                return py::array_t<double>(static_cast<py::ssize_t>(o.event_times.size()), o.event_times.data());
            },
            "The time of each event, (E,).")
        .def_property_readonly(
            "event_patterns",
            [](const FlowRun& o) { return stack_array(o.event_patterns, o.alpha.rows(), o.alpha.cols()); },
            "Active entries beta > 0 after each event, bool (E, m, n).")
        .def_property_readonly(
            "event_sliding",
            [](const FlowRun& o) { return stack_array(o.event_sliding, o.alpha.rows(), o.alpha.cols()); },
            "Sliding entries (held at zero) after each event, bool (E, m, n).")
        .def_readonly("event_kinds", &FlowOutput::event_kinds, "The kind of each event, a list of str.")
        .def_property_readonly(
            "alpha_t", [](const FlowRun& o) { return stack_array(o.alpha_t, o.alpha.rows(), o.alpha.cols()); },
            "alpha at the requested times reached, (T, m, n).")
        .def_property_readonly(
            "beta_t", [](const FlowRun& o) { return stack_array(o.beta_t, o.alpha.rows(), o.alpha.cols()); },
            "beta at the requested times reached, (T, m, n).")
        .def_property_readonly(
            "alpha", [](const FlowRun& o) { return dense_array(o.alpha); }, "alpha of the returned state, (m, n).")
        .def_property_readonly(
            "beta", [](const FlowRun& o) { return dense_array(o.beta); }, "beta of the returned state, (m, n).")
        .def_property_readonly(
            "pattern", [](const FlowRun& o) { return dense_array(o.active); }, "Final pattern beta > 0, bool (m, n).")
        .def_property_readonly(
            "sliding", [](const FlowRun& o) { return dense_array(o.sliding); }, "Final sliding entries, bool (m, n).")
        .def_readonly("limit", &FlowOutput::limit, "Whether the returned state is the certified limit.")
        .def_readonly("margin", &FlowOutput::margin, "Smallest sigma beta_inf over the entries not sliding.")
        .def_readonly("rate", &FlowOutput::rate, "exp(-mu_min(M)) per unit time of the final phase.")
        .def_readonly("last_event", &FlowOutput::last_event, "Time of the last event.")
        .def_readonly("fp_error", &FlowOutput::fp_error, "Largest floating-point bound of the returned limit.")
        .def_readonly("reason", &FlowOutput::reason, "Why the limit failed its self-check (uncertified), else empty.")
        .def_readonly("motion", &FlowOutput::motion,
                      "Proved bound on |beta_limit - beta| entrywise (0: the pattern is frozen).")
        .def_readonly("loss", &FlowRun::loss, "The square loss of the returned state.")
        .def_property_readonly(
            "unfit", [](const FlowRun& o) { return int64_array(o.unfit); },
            "The examples the returned state leaves unfit (state_unfit(), gd/run.hpp).")
        .def_property_readonly(
            "out_of_reach", [](const FlowRun& o) { return int64_array(o.out_of_reach); },
            "The examples no neuron can fit.");
}

void bind_flow(py::module_& m) {
    bind_flow_output(m);
    m.def(
        "linear_phase",
        [](const CArray<double>& K, const CArray<double>& y, const CArray<double>& signs, const CArray<double>& alpha,
           const CArray<double>& beta, const CArray<bool>& active, const CArray<bool>& sliding,
           std::optional<CArray<double>> r) {
            const Mat Km = to_mat(K);
            const Vec rv = r ? to_vec(*r) : Vec();
            const Phase ph = linear_phase(Km, to_vec(y), to_vec(signs), to_row(alpha), to_row(beta), to_bool(active),
                                          to_bool(sliding), r ? &rv : nullptr);
            return ph;
        },
        py::arg("K"), py::arg("y"), py::arg("signs"), py::arg("alpha"), py::arg("beta"), py::arg("active"),
        py::arg("sliding"), py::arg("r") = py::none(),
        "The linear phase of an activation pattern in modal form (docs/math.md §13), a LinearPhaseOutput.");
    m.def(
        "certify_gd",
        [](const CArray<double>& K, const CArray<double>& y, const CArray<double>& signs, const CArray<double>& alpha,
           const CArray<double>& beta,
           double eta) { return certify_gd(to_mat(K), to_vec(y), to_vec(signs), to_row(alpha), to_row(beta), eta); },
        py::arg("K"), py::arg("y"), py::arg("signs"), py::arg("alpha"), py::arg("beta"), py::arg("eta"),
        "One try of the frozen-pattern proof at a GD state (docs/math.md §13), a CertificateOutput.");
    m.def(
        "flow_follow",
        [](const CArray<double>& K, const CArray<double>& y, const CArray<double>& signs, const CArray<double>& alpha,
           const CArray<double>& beta, double t_max, const std::vector<double>& times, std::int64_t max_events,
           int time_exponent, int beta_exponent, const py::object& progress) {
            FlowRun o;
            std::atomic<std::int64_t> events{0};
            const bool counted = !progress.is_none();
            std::function<void()> tick;
            if (counted) tick = [&] { progress(events.load()); };
            // With a bar, the flow runs on a helper thread and this one updates it (run_without_gil).
            relucore::bindings::run_without_gil(
                [&](const std::atomic<bool>*) {
                    const Vec yv = to_vec(y), sv = to_vec(signs);
                    static_cast<FlowOutput&>(o) =
                        follow(to_mat(K), yv, sv, to_row(alpha), to_row(beta), t_max, times, max_events,
                               MessageUnits{time_exponent, beta_exponent}, counted ? &events : nullptr);
                    Vec g;
                    o.loss = relucore::bindings::square_loss(o.beta, sv, yv, g);
                    relucore::bindings::example_lists(o.beta, yv, sv, o.unfit, o.out_of_reach);
                },
                counted, tick);
            return o;
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
