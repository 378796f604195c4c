// DualTrainer.run_to_certificate's result, _core.LimitRunOutput (train(steps=np.inf) and
// Trainer.run_to_limit, docs/math.md §13), and the evaluation of the point it returns: the certified
// limit, the exact continuation of an uncertified run or the state the run stopped at, with its loss,
// gradient norm, status and the examples it leaves unfit. relucore.gd.limit only words the outcome.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "certificate_types.hpp"
#include "common.hpp"
#include "relucore/core/status.hpp"
#include "relucore/defaults.hpp"
#include "relucore/gd/certify.hpp"
#include "relucore/gd/flow_follow.hpp"
#include "relucore/gd/model.hpp"
#include "relucore/gd/norm_bound.hpp"
#include "relucore/gd/run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace relucore::bindings {

struct LimitRunOutput {
    Status run_status = Status::max_steps;  ///< how the last GD run ended
    Status status = Status::max_steps;      ///< the outcome (the one rule of core/status.hpp applied)
    std::int64_t pattern_stable_step = 0;
    bool diverged = false;
    std::optional<flow::GDCertificate> certificate;  ///< the last try of the proof (none when diverged)
    bool noncontracting_stop = false;
    std::int64_t noncontracting_since = -1;
    double diverged_mu_max = std::numeric_limits<double>::quiet_NaN();  ///< of the pattern a diverged run reached
    RowMatrix alpha, beta;                                              ///< the returned point
    double loss = 0.0, grad_norm = 0.0;
    bool off_tol = false;  ///< converged on the engine's running norm, not at the returned point
    /// NaN, unless off_tol with grad_norm <= tol: the norm at the returned point is below tol in dual
    /// form but not provably (dual_norm_sq()); then the bound on the rounding of grad_norm (norm_bound())
    double unresolved_bound = std::numeric_limits<double>::quiet_NaN();
    bool stalled_by_rule = false;  ///< status is stalled because the returned point leaves examples unfit
    bool continued = false;        ///< the returned point is the exact continuation from the tol state
    std::optional<flow::BoolMat> sliding;
    std::int64_t continuation_events = 0;
    double motion = 0.0;
    std::vector<std::int64_t> unfit, out_of_reach;
};

/// The square loss 1/2 ||h - y||^2 of beta (m x n) with outer weights signs (loss_and_residual(), gd/model.hpp);
/// fills g with the residual h - y.
inline double square_loss(const RowMatrix& beta, const flow::Vec& signs, const flow::Vec& y, flow::Vec& g) {
    flow::Vec h(beta.cols());
    g.resize(beta.cols());
    return loss_and_residual(beta, signs, y, ModelSpec{}, h, g);
}

/// The examples beta leaves unfit (state_unfit(), gd/run.hpp) and those out of reach of every neuron.
inline void example_lists(const RowMatrix& beta, const flow::Vec& y, const flow::Vec& signs,
                          std::vector<std::int64_t>& unfit, std::vector<std::int64_t>& reach) {
    const ModelSpec spec;
    for (Index i = 0; i < beta.cols(); ++i) {
        Scalar h = 0;
        for (Index k = 0; k < beta.rows(); ++k) h += signs[k] * activate(beta(k, i), spec);
        if (state_unfit(beta, signs.data(), spec, y[i], h, i)) unfit.push_back(i);
        if (out_of_reach(signs.data(), beta.rows(), spec, y[i])) reach.push_back(i);
    }
}

/// The loss of the returned point and ||grad_W R||_F in its dual form sqrt(sum_k u_k^T K u_k),
/// u_ki = s_k [beta_ki > 0] (h_i - y_i); returns whether that norm is provably below tol
/// (dual_norm_sq(), gd/norm_bound.hpp), setting out.unresolved_bound where it is below, not provably.
inline bool evaluate_point(const flow::Mat& K, const flow::Vec& y, const flow::Vec& signs, double tol,
                           LimitRunOutput& out) {
    const RowMatrix& beta = out.beta;
    flow::Vec g;
    out.loss = square_loss(beta, signs, y, g);
    flow::Mat U(beta.cols(), beta.rows());
    for (Index k = 0; k < beta.rows(); ++k)
        for (Index i = 0; i < beta.cols(); ++i) U(i, k) = beta(k, i) > 0 ? signs[k] * g[i] : 0.0;
    const double sq = (U.array() * (K * U).array()).sum();
    out.grad_norm = std::sqrt(std::max(sq, 0.0));
    if (!(out.grad_norm <= tol)) return false;
    const DualNormSq q = dual_norm_sq(K, U.transpose());
    if (q.provably_below(tol)) return true;
    out.unresolved_bound = q.norm_bound();
    return false;
}

/// mu_max(M) of the pattern a diverged run reached, for the error that names it (0 without an active
/// example): beta with NaN read as 0 and +-inf as +-DBL_MAX (numpy's nan_to_num).
inline double diverged_mu_max(const flow::Mat& K, const flow::Vec& y, const flow::Vec& signs, const RowMatrix& alpha,
                              const RowMatrix& beta) {
    const double big = std::numeric_limits<double>::max();
    const RowMatrix b = beta.unaryExpr([big](double v) {
        return std::isnan(v) ? 0.0 : std::isinf(v) ? std::copysign(big, v) : v;
    });
    const flow::BoolMat active = b.array() > 0;
    const flow::Phase ph =
        flow::linear_phase(K, y, signs, alpha, b, active, flow::BoolMat::Constant(b.rows(), b.cols(), false));
    return ph.lam.size() > 0 ? ph.lam(ph.lam.size() - 1) : 0.0;
}

/// The point a run that stopped at (alpha, beta) with its last try of the proof returns, and its outcome
/// (docs/math.md §13): the limit when the proof holds; where GD chatters on a pattern boundary (converged,
/// not certified, the final phase strictly contracting) the exact continuation from the tol state, the
/// gradient flow with sliding entries held at zero, when it reaches a limit; the state otherwise.
inline void finish_limit_run(const flow::Mat& K, const flow::Vec& y, const flow::Vec& signs, const RowMatrix& alpha,
                             const RowMatrix& beta, double tol, LimitRunOutput& out) {
    const flow::GDCertificate& c = *out.certificate;
    const bool holds = c.status == flow::GDCertificate::holds;
    out.alpha = holds ? c.phase.alpha_inf : alpha;
    out.beta = holds ? c.phase.beta_inf : beta;
    if (!holds && out.run_status == Status::converged && c.status != flow::GDCertificate::not_contracting) {
        const flow::FlowOutput f = flow::follow(K, y, signs, alpha, beta, std::numeric_limits<double>::infinity(), {},
                                                defaults::flow_max_events);
        if (f.status == Status::certified || f.status == Status::stalled) {
            out.continued = true;
            out.alpha = f.alpha;
            out.beta = f.beta;
            flow::BoolMat slid = f.sliding;
            for (const flow::BoolMat& s : f.event_sliding) slid = slid || s;
            out.sliding = slid;
            out.continuation_events = static_cast<std::int64_t>(f.event_times.size());
            out.motion = f.motion;
        }
    }
    const bool below = evaluate_point(K, y, signs, tol, out);
    // One rule for success: the engine stops on its own running gradient norm, which with K singular (n > d,
    // collinear or duplicate examples) can be below tol where the gradient at the returned point is not, and
    // the dual-form norm at the returned point counts only where it is provably below tol.
    out.off_tol = out.run_status == Status::converged && !holds && !below;
    if (!out.off_tol) out.unresolved_bound = std::numeric_limits<double>::quiet_NaN();
    Status status = out.off_tol ? Status::max_steps : out.run_status;
    example_lists(out.beta, y, signs, out.unfit, out.out_of_reach);
    if (holds) status = Status::certified;
    out.status = stalled_if_unfit(status, !out.unfit.empty());
    out.stalled_by_rule = out.status != status;
}

inline pybind11::array_t<std::int64_t> int64_array(const std::vector<std::int64_t>& v) {
    return pybind11::array_t<std::int64_t>(static_cast<pybind11::ssize_t>(v.size()), v.data());
}

inline void bind_limit_run_output(pybind11::module_& m) {
    namespace py = pybind11;
    m.def(
        "dual_norm_sq",
        [](const CArray<double>& K, const CArray<double>& U) {
            require_shape(K, "K", {-1, -1});
            require_shape(U, "U", {-1, K.shape(0)});
            const Eigen::Map<const RowMatrix> Km(K.data(), K.shape(0), K.shape(1));
            const Eigen::Map<const RowMatrix> Um(U.data(), U.shape(0), U.shape(1));
            const DualNormSq q = dual_norm_sq(Km, Um);
            return py::make_tuple(q.sq, q.bound, q.scale);
        },
        py::arg("K"), py::arg("U"),
        "dual_norm_sq() of gd/norm_bound.hpp (tests): (sq, bound, scale), sum_k u_k^T K u_k of the rows u_k of U "
        "as computed and the bound on its rounding error, both in units of 2**scale.");
    using O = LimitRunOutput;
    py::class_<O>(m, "LimitRunOutput",
                  "The result of DualTrainer.run_to_certificate (private: relucore.gd.limit); numbers in the run's "
                  "units.")
        .def_readonly("run_status", &O::run_status, "How the last GD run ended (Status).")
        .def_readonly("status", &O::status,
                      "The outcome: certified when the proof holds, max_steps when off_tol, stalled when the "
                      "returned point leaves examples unfit, the run's status otherwise.")
        .def_readonly("pattern_stable_step", &O::pattern_stable_step, "First step after which no mask changed.")
        .def_readonly("diverged", &O::diverged,
                      "Whether the run diverged (its state is not finite): then there is no certificate and no point.")
        .def_readonly("certificate", &O::certificate,
                      "The last try of the proof (CertificateOutput), None when the run diverged.")
        .def_readonly("diverged_mu_max", &O::diverged_mu_max,
                      "mu_max(M) of the pattern a diverged run reached (beta's NaN read as 0, +-inf as the largest "
                      "double); NaN when it did not diverge.")
        .def_readonly("noncontracting_stop", &O::noncontracting_stop,
                      "Whether the run stopped on a final phase that is not strictly contracting.")
        .def_readonly("noncontracting_since", &O::noncontracting_since,
                      "The step of the first try that found the final phase not strictly contracting (-1: none).")
        .def_property_readonly(
            "alpha", [](const O& o) { return dense_array(o.alpha); }, "alpha of the returned point, (m, n).")
        .def_property_readonly(
            "beta", [](const O& o) { return dense_array(o.beta); }, "beta of the returned point, (m, n).")
        .def_readonly("loss", &O::loss, "The square loss at the returned point.")
        .def_readonly("grad_norm", &O::grad_norm, "||grad_W R||_F at the returned point.")
        .def_readonly("off_tol", &O::off_tol,
                      "The run converged on the engine's running gradient norm, but at the returned point the norm "
                      "is not below tol (K singular or nearly so).")
        .def_readonly("unresolved_bound", &O::unresolved_bound,
                      "NaN, unless off_tol with grad_norm <= tol: the gradient norm at the returned point is below "
                      "tol in dual form but not provably so; then the bound on the rounding of grad_norm.")
        .def_readonly("stalled_by_rule", &O::stalled_by_rule,
                      "status is stalled because the returned point leaves examples unfit.")
        .def_readonly("continued", &O::continued,
                      "Whether the returned point is the exact continuation from the tol state.")
        .def_property_readonly(
            "sliding",
            [](const O& o) -> py::object {
                return o.sliding ? py::object(dense_array(*o.sliding)) : py::object(py::none());
            },
            "The entries that slid in the continuation, bool (m, n); None without one.")
        .def_readonly("continuation_events", &O::continuation_events, "Events of the continuation.")
        .def_readonly("motion", &O::motion, "The continuation's remaining-motion bound (0: its pattern is frozen).")
        .def_property_readonly(
            "unfit", [](const O& o) { return int64_array(o.unfit); }, "The examples the returned point leaves unfit.")
        .def_property_readonly(
            "out_of_reach", [](const O& o) { return int64_array(o.out_of_reach); }, "The examples no neuron can fit.");
}

}  // namespace relucore::bindings
