// Batched runs of the GD engines: B independent problems in one call, OpenMP across problems, the GIL
// released. Arrays are allocated and validated by the Python layer; here they are only viewed.
#include "common.hpp"
#include "blas_registry.hpp"
#include "engine_batch.hpp"

#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "relucore/core/parallel.hpp"
#include "relucore/core/status.hpp"
#include "relucore/gd/dense_gd.hpp"
#include "relucore/gd/dual_gd.hpp"
#include "relucore/gd/positive_start.hpp"
#include "relucore/gd/prepare.hpp"
#include "relucore/gd/refusal.hpp"
#include "relucore/gd/run.hpp"

#include <algorithm>
#include <iterator>
#include <cmath>
#include <limits>
#include <memory>
#include <new>
#include <vector>

namespace py = pybind11;
using namespace relucore;
using namespace relucore::bindings;

// relucore.Status: the members, their messages and success flags, from core/status.hpp's table.
static void bind_status(py::module_& m) {
    py::native_enum<Status> status(m, "Status", "enum.IntEnum",
                                   "How a run or a solve ended (relucore/core/status.hpp): every outcome of every "
                                   "engine and solver, with its message and whether it is a success.");
    for (const StatusInfo& row : status_table) status.value(row.name, row.status);
    status.finalize();
    py::object cls = m.attr("Status");
    py::object property = py::module_::import("builtins").attr("property");
    cls.attr("message") = property(py::cpp_function([](Status s) { return status_message(s); }), py::none(), py::none(),
                                   "What the outcome means, in words.");
    m.def("stalled_if_unfit", &stalled_if_unfit, py::arg("status"), py::arg("leaves_unfit"),
          "The one rule for a stationary outcome (core/status.hpp): converged or certified with examples "
          "left unfit is stalled; any other status is returned as it is.");
    cls.attr("success") = property(py::cpp_function([](Status s) { return status_success(s); }), py::none(), py::none(),
                                   "Whether the outcome is a success.");
}

static void bind_model_settings(py::module_& m) {
    py::native_enum<Activation> activation_enum(m, "Activation", "enum.IntEnum");
    for (const ActivationTraits& t : activation_table) activation_enum.value(t.name, t.activation);
    activation_enum.finalize();
    py::native_enum<Loss> loss_enum(m, "Loss", "enum.IntEnum");
    for (const LossTraits& t : loss_table) loss_enum.value(t.name, t.loss);
    loss_enum.finalize();
    py::class_<LossTraits>(m, "LossTraits", "A row of the loss table (gd/model.hpp, loss_traits): read-only.")
        .def_readonly("loss", &LossTraits::loss, "The loss this row describes.")
        .def_readonly("name", &LossTraits::name, "The loss's name (\"square\", \"logistic\").")
        .def_readonly("curvature_denominator", &LossTraits::curvature_denominator,
                      "The loss's curvature in the predictions is at most 1 / (curvature_denominator * (n if "
                      "per_example else 1)).")
        .def_readonly("per_example", &LossTraits::per_example,
                      "Whether the curvature bound is divided by the number of examples (a mean).")
        .def_readonly("relative_tol", &LossTraits::relative_tol,
                      "True: the default tolerance is tol_factor sqrt(mu_1) ||y||; False: 0 (never stop early).")
        .def_readonly("labels_pm1", &LossTraits::labels_pm1, "True: labels must lie in {-1, +1}.");
    m.def(
        "loss_traits", [](Loss loss) -> const LossTraits& { return loss_traits(loss); }, py::arg("loss"),
        py::return_value_policy::reference, "The loss table's row (gd/model.hpp) of a loss, a LossTraits.");
    py::native_enum<Reduction>(m, "Reduction", "enum.IntEnum",
                               "The square loss's reductions (gd/model.hpp): half_sum, sum, mean.")
        .value("half_sum", Reduction::half_sum)
        .value("sum", Reduction::sum)
        .value("mean", Reduction::mean)
        .finalize();
    m.def("reduction_factor", &reduction_factor, py::arg("reduction"), py::arg("n"),
          "The factor f of a reduction over n examples: the loss is f/2 sum_i (h_i - y_i)^2 (1, 2 or 2/n).");
    m.def("loss_curvature", &loss_curvature, py::arg("loss"), py::arg("n"),
          "The curvature bound L of the loss for n examples: the default step is 1 / (L ||s||^2 mu_1(K)).");
    m.def("default_step", py::vectorize(&default_step), py::arg("loss"), py::arg("n"), py::arg("s2"), py::arg("mu1"),
          "The default step 1 / (L s2 mu1) elementwise (gd/positive_start.hpp), s2 = ||s||^2, L the loss's "
          "curvature bound for n examples.");
    m.def("default_tolerance", py::vectorize(&default_tolerance), py::arg("tol_factor"), py::arg("mu1"),
          py::arg("y_norm"), py::arg("h0_norm"),
          "The default gradient tolerance of a relative-tolerance loss, elementwise (gd/positive_start.hpp): "
          "max(tol_factor sqrt(mu1) s, smallest normal) with s = y_norm, or h0_norm where y_norm = 0.");
    bind_status(m);

    py::class_<GDSettings>(m, "GDSettings", "Settings of a GD run (see relucore/gd/run.hpp).")
        .def(py::init<>())
        .def_readwrite("eta", &GDSettings::eta)
        .def_readwrite("max_steps", &GDSettings::max_steps)
        .def_readwrite("tol", &GDSettings::tol)
        .def_readwrite("record_every", &GDSettings::record_every)
        .def_readwrite("divergence_factor", &GDSettings::divergence_factor)
        .def_property(
            "activation", [](const GDSettings& s) { return s.model.activation; },
            [](GDSettings& s, Activation a) { s.model.activation = a; })
        .def_property(
            "leaky_slope", [](const GDSettings& s) { return s.model.leaky_slope; },
            [](GDSettings& s, double v) { s.model.leaky_slope = v; })
        .def_property(
            "loss", [](const GDSettings& s) { return s.model.loss; }, [](GDSettings& s, Loss l) { s.model.loss = l; })
        .def_readwrite("train_outer", &GDSettings::train_outer)
        .def_readwrite("output_scale", &GDSettings::output_scale)
        .def("validate", &GDSettings::validate);
}

// The outcomes of run_dual_batch / run_dense_batch (engine_batch.hpp): read-only, the arrays are
// the ones the run filled (no copies).
static void bind_batch_output(py::module_& m) {
    py::class_<BatchHistory>(m, "BatchHistory",
                             "The states a batched run kept (engine_batch.hpp): arrays (B, R, ...) padded to the "
                             "longest history with steps -1, loss, states and outer weights NaN, mask 0; read-only.")
        .def_readonly("steps", &BatchHistory::steps, "(B, R) int64: the GD step of each kept state.")
        .def_readonly("loss", &BatchHistory::loss, "(B, R): the loss at each kept state.")
        .def_readonly("outer", &BatchHistory::outer,
                      "(B, R, m): the effective outer weights c a_k at each kept state, or None (not kept).")
        .def_readonly("beta", &BatchHistory::beta, "(B, R, m, n): beta at each kept state, or None (states not kept).")
        .def_readonly("alpha", &BatchHistory::alpha, "(B, R, m, n): alpha at each kept state, or None.")
        .def_readonly("mask", &BatchHistory::mask, "(B, R, m, n) uint8: the activation masks beta > 0, or None.");
    py::class_<Outcomes>(m, "BatchOutput",
                         "The per-problem outcomes of a batched run (run_dual_batch, run_dense_batch); read-only.")
        .def_readonly("status", &Outcomes::status,
                      "(B) int32: the Status values; a run whose final state is not finite is diverged (see "
                      "overflowed).")
        .def_readonly("nit", &Outcomes::nit, "(B) int64: GD steps taken.")
        .def_readonly("pattern_stable_step", &Outcomes::pattern_stable_step,
                      "(B) int64: the first step after which no activation mask changed again.")
        .def_readonly("n_records", &Outcomes::n_records, "(B) int64: the states kept in the history.")
        .def_readonly("loss", &Outcomes::loss, "(B): the final loss.")
        .def_readonly("grad_norm", &Outcomes::grad_norm, "(B): the gradient norm at the final state.")
        .def_readonly("unresolved_bound", &Outcomes::unresolved_bound,
                      "(B): NaN, unless the final gradient norm is below tol in dual form but not provably so (K "
                      "singular): then the bound on the rounding of grad_norm, and the run did not converge.")
        .def_readonly("unfit", &Outcomes::unfit,
                      "(B, n) uint8: 1 where a stalled run leaves the example unfit (example_unfit), 0 elsewhere.")
        .def_readonly("out_of_reach", &Outcomes::out_of_reach,
                      "(B, n) uint8: 1 where no neuron can output the sign of the example's label.")
        .def_readonly("finite", &Outcomes::finite,
                      "(B) uint8: 1 where the final loss, gradient norm, alpha, beta and W (where the run formed "
                      "it) are all finite.")
        .def_readonly("overflowed", &Outcomes::overflowed,
                      "(B) uint8: 1 where the engine stopped without diverging but the final state was not finite, "
                      "so the status was made diverged (and unfit cleared).")
        .def_readonly("history", &Outcomes::history, "The BatchHistory when one was kept, or None.");
}

static void bind_dual_runs(py::module_& m) {
    m.def(
        "run_dual_batch",
        [](const CArray<double>& K, const CArray<double>& y, CArray<double> outer, CArray<double> alpha,
           CArray<double> beta, const CArray<double>& eta, const CArray<double>& tol, const GDSettings& settings,
           const py::dict& history, int n_threads, const std::optional<CArray<double>>& X,
           const std::optional<CArray<double>>& W0, const std::optional<CArray<double>>& alpha0,
           std::optional<CArray<double>> W, std::optional<CArray<double>> output_bias,
           std::optional<CArray<double>> loss_weights, const py::object& progress) {
            require_shape(K, "K", {-1, -1, -1});
            const Index B = K.shape(0), n = K.shape(1), m_ = alpha.ndim() == 3 ? alpha.shape(1) : 0;
            require_shape(K, "K", {B, n, n});
            const double* kp = K.data();
            // The final W (W = W0 + (alpha - alpha0) X, weights_from_dual) of each problem after its run.
            const bool with_w = X.has_value();
            if (with_w != W0.has_value() || with_w != alpha0.has_value() || with_w != W.has_value())
                throw py::value_error("run_dual_batch: X, W0, alpha0 and W go together");
            const Index d = with_w ? X->shape(X->ndim() - 1) : 0;
            if (with_w) {
                require_shape(*X, "X", {B, n, d});
                require_shape(*W0, "W0", {B, m_, d});
                require_shape(*alpha0, "alpha0", {B, m_, n});
                require_shape(*W, "W", {B, m_, d});
                ensure_blas();
            }
            const double *xp = with_w ? X->data() : nullptr, *w0p = with_w ? W0->data() : nullptr,
                         *a0p = with_w ? alpha0->data() : nullptr;
            double* wp = with_w ? W->mutable_data() : nullptr;
            const blas::SingleThreaded blas_threads;
            BatchExtras extras{std::move(output_bias), std::move(loss_weights), progress};
            return run_engine_batch(
                B, n, y, outer, alpha, beta, eta, tol, settings, history, n_threads, static_cast<double>(n) * n,
                static_cast<double>(B) * m_ * n * d, extras,
                [&](Index b, ProblemViews& v, const GDSettings& s, History* h, Outcomes& out) {
                    DualGD::Start start;
                    start.outer = v.outer;
                    start.alpha = v.alpha;
                    start.beta = v.beta;
                    DualGD engine(borrow, ConstMatrixMap(kp + b * n * n, n, n), v.y, std::move(start), s);
                    v.configure(engine);
                    out.store(b, v.run(engine, h), engine);
                    v.store(engine, outer.ndim() == 2);
                    if (!with_w) return;
                    MatrixMap W_b(wp + b * m_ * d, m_, d);
                    weights_from_dual(ConstMatrixMap(xp + b * n * d, n, d), ConstMatrixMap(w0p + b * m_ * d, m_, d),
                                      ConstMatrixMap(a0p + b * m_ * n, m_, n), v.alpha, W_b);
                    if (!all_finite(W_b)) out.finite.mutable_data()[b] = 0;
                });
        },
        py::arg("K").noconvert(), py::arg("y").noconvert(), py::arg("outer").noconvert(), py::arg("alpha").noconvert(),
        py::arg("beta").noconvert(), py::arg("eta").noconvert(), py::arg("tol").noconvert(), py::arg("settings"),
        py::arg("history"), py::arg("n_threads") = 0, py::arg("X").noconvert().none(true) = py::none(),
        py::arg("W0").noconvert().none(true) = py::none(), py::arg("alpha0").noconvert().none(true) = py::none(),
        py::arg("W").noconvert().none(true) = py::none(), py::arg("output_bias").noconvert().none(true) = py::none(),
        py::arg("loss_weights").noconvert().none(true) = py::none(), py::arg("progress").none(true) = py::none(),
        "Runs the primal-dual engine on B problems (per-problem eta and tol); alpha and beta (B, m, n) are updated in "
        "place, and outer when it is (B, m) (a trained outer layer). output_bias (B), updated in place, gives each "
        "network an output bias, loss_weights (B, n) weighs the examples (set_output_bias, set_loss_weights). Given X "
        "(B, n, d), W0 and W (B, m, d) and "
        "alpha0 (B, m, n), each problem's final W = W0 + (alpha - alpha0) X is written into W after its run (as "
        "weights_from_dual_batch writes it). The outcomes' \"finite\" (B) is 1 where the final loss, gradient norm, "
        "alpha, beta (and W) are all finite; where it is not, the status is diverged. Returns a BatchOutput. "
        "progress(steps), if given, is called with the steps of the batch so "
        "far while it runs (the results are the same).");
}

static void bind_default_offset(py::module_& m) {
    m.def(
        "default_offset_batch",
        [](const CArray<double>& y, Index m_, double C_alpha) {
            require_shape(y, "y", {-1, -1});
            const Index B = y.shape(0), n = y.shape(1);
            if (n == 0) throw py::value_error("y: the default offset needs at least one label per problem");
            CArray<double> eps(B);
            for (Index b = 0; b < B; ++b)
                eps.mutable_data()[b] = default_offset(ConstVectorMap(y.data() + b * n, n), m_, C_alpha);
            return eps;
        },
        py::arg("y"), py::arg("m"), py::arg("C_alpha"),
        "The default offset y_min / (C_alpha m) of the all-positive start for each row of y (B, n) -> (B,) "
        "(relucore/gd/positive_start.hpp: labels with a 0 use max |y|, all-zero labels 1).");
}

// The arrays of one prepare_batch call, viewed per problem.
struct PrepareArrays {
    const double* x = nullptr;
    const double* y = nullptr;
    const double* outer = nullptr;  // m outer weights shared by the problems, or B x m (outer_step = m)
    Index outer_step = 0;
    double *k = nullptr, *beta0 = nullptr, *alpha0 = nullptr, *w0 = nullptr, *mu1 = nullptr, *eta = nullptr,
           *tol = nullptr;
    Index B = 0, n = 0, m = 0, d = 0;
    std::vector<double> mu;  // B x n spectra, for the refusal messages
    std::vector<std::int32_t> check;
    std::vector<std::uint8_t> scale;  // 1 where scale_may_be_out_of_range() (gd/positive_start.hpp)
    // With settings.rescale: each problem's exponents, and the rescaled copy of those that run rescaled.
    std::vector<scaling::RescaledProblem> rescaled;
    // beta0 from the offsets of a positive or disjoint start (StartOffsets: B x m x n given offsets or the
    // default, B x n assignment or none), where from_offsets.
    bool from_offsets = false;
    const double* offsets = nullptr;
    const std::int64_t* assignment = nullptr;
    double C_g = 1;
    // prepare_start() on problem b (the one with the exact rescaling where r.rescale), then its scale flag.
    void prepare(Index b, const PrepareRequest& r) {
        RowMatrix no_w;
        const ConstMatrixMap xb(x ? x + b * n * d : nullptr, n, d);
        const ConstMatrixRef xr(xb);
        const ConstMatrixRef* xp = x ? &xr : nullptr;
        MatrixMap wb(w0 ? w0 + b * m * d : no_w.data(), m, w0 ? d : 0);
        const ConstVectorMap yb(y + b * n, n);
        const ConstVectorMap ob(outer + b * outer_step, m);
        MatrixMap kb(k + b * n * n, n, n), beta0b(beta0 + b * m * n, m, n), alpha0b(alpha0 + b * m * n, m, n);
        VectorMap mub(mu.data() + b * n, n);
        StartOffsets start;
        start.eps = offsets != nullptr ? offsets + b * m * n : nullptr;
        start.assignment = assignment != nullptr ? assignment + b * n : nullptr;
        start.C_g = C_g;
        scaling::RescaledProblem unscaled;
        const StartCheck c = r.rescale || from_offsets
                                 ? prepare_start(xp, yb, ob, r, kb, mub, mu1[b], beta0b, alpha0b, wb, eta[b], tol[b],
                                                 r.rescale ? rescaled[static_cast<std::size_t>(b)] : unscaled,
                                                 from_offsets ? &start : nullptr)
                                 : prepare_start(xp, yb, ob, r, kb, mub, mu1[b], beta0b, alpha0b, wb, eta[b], tol[b]);
        check[static_cast<std::size_t>(b)] = static_cast<std::int32_t>(c);
        flag_scale(b, xp, r);
    }
    void flag_scale(Index b, const ConstMatrixRef* xr, const PrepareRequest& r) {  // after b's prepare_start
        auto& c = check[static_cast<std::size_t>(b)];
        if (r.rescale) {  // the test ran inside prepare_start
            scale[static_cast<std::size_t>(b)] = rescaled[static_cast<std::size_t>(b)].flagged;
            return;
        }
        const bool formed = r.gram_given || !r.lazy_gram || xr == nullptr;  // K formed (without scale_test)
        // With scale_test, prepare_start stopped at the test where it held (not a refusal).
        const bool out = r.scale_test ? c == static_cast<std::int32_t>(StartCheck::scale_out_of_range)
                                      : scale_may_be_out_of_range(xr, ConstMatrixMap(k + b * n * n, n, n), formed,
                                                                  ConstVectorMap(y + b * n, n));
        scale[static_cast<std::size_t>(b)] = out;
        if (out && r.scale_test) c = 0;
    }
};

// The refusals that come before any other, in this order (whichever problem has another): data out of
// the safe range of a model that is not homogeneous, a given step that leaves float64's range on the
// rescaled copy, then offsets of a start defined by them (from_offsets) that are not usable.
static constexpr StartCheck first_refusals[] = {StartCheck::scale_not_free, StartCheck::eta_out_of_range,
                                                StartCheck::eps_invalid};

// Raises ValueError with the message of docs/errors.md for the first problem prepare_start refused
// (first_refusals first), in the units it was prepared in (a rescaled problem's copy).
static void raise_first_refusal(const PrepareArrays& a, const PrepareRequest& req, const std::string& init) {
    // eps_invalid of the all-positive mode is one of its checks, in the order of the others.
    const StartCheck* end = std::end(first_refusals) - (a.from_offsets ? 0 : 1);
    auto refused = [&](Index b, StartCheck only) {
        const auto check = static_cast<StartCheck>(a.check[static_cast<std::size_t>(b)]);
        const bool first = std::find(std::begin(first_refusals), end, check) != end;
        return check != StartCheck::ok && (only == StartCheck::ok ? !first : check == only);
    };
    for (const StartCheck only : {first_refusals[0], first_refusals[1], first_refusals[2], StartCheck::ok})
        for (Index b = 0; b < a.B; ++b) {
            if (!refused(b, only)) continue;
            const auto check = static_cast<StartCheck>(a.check[static_cast<std::size_t>(b)]);
            const Index n = a.n, m_ = a.m, d = a.d;
            const scaling::RescaledProblem* r = a.rescaled.empty() ? nullptr : &a.rescaled[static_cast<std::size_t>(b)];
            const bool copy = r != nullptr && r->y.size() > 0;  // prepared on its rescaled copy
            const ConstMatrixRef X =
                copy && a.x != nullptr
                    ? ConstMatrixRef(r->X)
                    : ConstMatrixRef(ConstMatrixMap(a.x != nullptr ? a.x + b * n * d : nullptr, n, a.x ? d : 0));
            const ConstVectorRef y = copy ? ConstVectorRef(r->y) : ConstVectorRef(ConstVectorMap(a.y + b * n, n));
            const ConstVectorRef outer = ConstVectorMap(a.outer + b * a.outer_step, m_);
            const ConstMatrixRef K = ConstMatrixMap(a.k + b * n * n, n, n);
            const ConstVectorRef mu = ConstVectorMap(a.mu.data() + b * n, n);
            const ConstMatrixRef beta0 = ConstMatrixMap(a.beta0 + b * m_ * n, m_, n);
            const ConstMatrixRef alpha0 = ConstMatrixMap(a.alpha0 + b * m_ * n, m_, n);
            const ConstMatrixRef W0 = ConstMatrixMap(a.w0 != nullptr ? a.w0 + b * m_ * d : nullptr, m_, a.w0 ? d : 0);
            RefusedProblem p;
            p.X = a.x != nullptr ? &X : nullptr;
            p.y = &y;
            p.outer = &outer;
            p.K = &K;
            p.mu = &mu;
            p.beta0 = &beta0;
            p.alpha0 = &alpha0;
            p.W0 = a.w0 != nullptr ? &W0 : nullptr;
            p.eta = a.eta[b];
            p.mu1 = a.mu1[b];
            p.init = init;
            if (r != nullptr) p.e = r->e;
            p.problem = a.B > 1 ? b : -1;
            throw py::value_error(refusal_message(check, p, req));
        }
}

// _core.prepare_batch: prepare_start() on B problems viewed in the caller's arrays (see its docstring).
static int prepare_batch(const std::optional<CArray<double>>& X, const CArray<double>& y, CArray<double> K,
                         const CArray<double>& outer, CArray<double> beta0, CArray<double> alpha0,
                         std::optional<CArray<double>> W0, CArray<double> mu1, CArray<double> eta, CArray<double> tol,
                         const PrepareRequest& settings, const std::string& init, int n_threads,
                         std::optional<CArray<std::int64_t>> exponents, bool from_offsets,
                         std::optional<CArray<double>> offsets, std::optional<CArray<std::int64_t>> assignment,
                         double C_g) {
    require_shape(K, "K", {-1, -1, -1});
    PrepareArrays a;
    if (outer.ndim() != 1 && outer.ndim() != 2) throw py::value_error("outer must have shape (m,) or (B, m)");
    const bool per_problem = outer.ndim() == 2;
    a.B = K.shape(0), a.n = K.shape(1), a.m = outer.shape(outer.ndim() - 1), a.d = X ? X->shape(2) : 0;
    const Index B = a.B, n = a.n, m_ = a.m, d = a.d;
    if (X) require_shape(*X, "X", {B, n, -1});
    if (!X &&
        (!settings.gram_given || settings.beta == StartBeta::from_weights || settings.beta == StartBeta::positive))
        throw py::value_error("prepare_batch: X is needed unless K is given and beta0 is not from X");
    if (X && !W0) throw py::value_error("prepare_batch: W0 is needed with X");
    require_shape(y, "y", {B, n});
    require_shape(K, "K", {B, n, n});
    if (per_problem)
        require_shape(outer, "outer", {B, m_});
    else
        require_shape(outer, "outer", {m_});
    require_shape(beta0, "beta0", {B, m_, n});
    require_shape(alpha0, "alpha0", {B, m_, n});
    if (W0) require_shape(*W0, "W0", {B, m_, d});
    for (const auto* v : {&mu1, &eta, &tol}) require_shape(*v, "mu1, eta and tol", {B});
    if (exponents.has_value() != settings.rescale)
        throw py::value_error("prepare_batch: exponents go with settings.rescale");
    if (exponents) require_shape(*exponents, "exponents", {2, B});
    if (from_offsets && settings.beta != StartBeta::given)
        throw py::value_error("prepare_batch: from_offsets defines beta0 of StartBeta.given");
    if (offsets) require_shape(*offsets, "offsets", {B, m_, n});
    if (assignment) require_shape(*assignment, "assignment", {B, n});
    a.from_offsets = from_offsets, a.C_g = C_g;
    a.offsets = from_offsets && offsets ? offsets->data() : nullptr;
    a.assignment = from_offsets && assignment ? assignment->data() : nullptr;
    a.x = X ? X->data() : nullptr;
    a.y = y.data();
    a.outer = outer.data(), a.outer_step = per_problem ? m_ : 0;
    a.k = K.mutable_data(), a.beta0 = beta0.mutable_data(), a.alpha0 = alpha0.mutable_data();
    a.w0 = W0 ? W0->mutable_data() : nullptr;
    a.mu1 = mu1.mutable_data(), a.eta = eta.mutable_data(), a.tol = tol.mutable_data();
    a.mu.assign(static_cast<std::size_t>(B * n), std::numeric_limits<double>::quiet_NaN());
    a.check.assign(static_cast<std::size_t>(B), 0);
    a.scale.assign(static_cast<std::size_t>(B), 0);
    if (settings.rescale) a.rescaled.resize(static_cast<std::size_t>(B));
    const blas::SingleThreaded blas_threads = blas_for_call();
    run_without_gil(
        [&](const std::atomic<bool>*) { parallel_for(B, n_threads, [&](Index b) { a.prepare(b, settings); }); },
        static_cast<double>(B) * n * n * std::max<Index>(d, n) > 5e8);
    raise_first_refusal(a, settings, init);
    for (Index b = 0; exponents && b < B; ++b) {
        exponents->mutable_data()[b] = a.rescaled[static_cast<std::size_t>(b)].e.ex;
        exponents->mutable_data()[B + b] = a.rescaled[static_cast<std::size_t>(b)].e.ey;
    }
    return static_cast<int>(std::count(a.scale.begin(), a.scale.end(), std::uint8_t(1)));
}

static void bind_prepare(py::module_& m) {
    py::native_enum<StartSolve>(m, "StartSolve", "enum.IntEnum",
                                "How prepare_batch obtains alpha0 from beta0 (relucore/gd/prepare.hpp).")
        .value("none", StartSolve::none)
        .value("inverse", StartSolve::inverse)
        .value("least_squares", StartSolve::least_squares)
        .finalize();
    py::native_enum<StartBeta>(m, "StartBeta", "enum.IntEnum",
                               "Where prepare_batch takes beta0 from (relucore/gd/prepare.hpp).")
        .value("given", StartBeta::given)
        .value("from_weights", StartBeta::from_weights)
        .value("gaussian_gram", StartBeta::gaussian_gram)
        .value("positive", StartBeta::positive)
        .finalize();
    py::class_<PrepareRequest>(m, "PrepareSettings",
                               "What prepare_batch computes (relucore/gd/prepare.hpp, PrepareRequest): shared by the "
                               "problems of a batch.")
        .def(py::init<>())
        .def_readwrite("gram_given", &PrepareRequest::gram_given)
        .def_readwrite("complete", &PrepareRequest::complete)
        .def_readwrite("lazy_gram", &PrepareRequest::lazy_gram)
        .def_readwrite("solve", &PrepareRequest::solve)
        .def_readwrite("beta", &PrepareRequest::beta)
        .def_readwrite("loss", &PrepareRequest::loss)
        .def_readwrite("max_condition", &PrepareRequest::max_condition)
        .def_readwrite("rcond_min", &PrepareRequest::rcond_min)
        .def_readwrite("eps", &PrepareRequest::eps)
        .def_readwrite("C_alpha", &PrepareRequest::C_alpha)
        .def_readwrite("tol", &PrepareRequest::tol)
        .def_readwrite("tol_factor", &PrepareRequest::tol_factor)
        .def_readwrite("activation", &PrepareRequest::activation)
        .def_readwrite("leaky_slope", &PrepareRequest::leaky_slope)
        .def_readwrite("scale_test", &PrepareRequest::scale_test)
        .def_readwrite("rescale", &PrepareRequest::rescale,
                       "Where the O(n) scale test flags a problem, decide its exact exponents and prepare its exactly "
                       "rescaled copy where they leave the safe range (prepare_batch's ex and ey).")
        .def_readwrite("not_scale_free", &PrepareRequest::not_scale_free,
                       "With rescale: what makes the model not homogeneous (\"\" when nothing does); data out of the "
                       "safe range are then refused.");
    m.def("prepare_batch", &prepare_batch, py::arg("X").none(true), py::arg("y").noconvert(), py::arg("K").noconvert(),
          py::arg("outer").noconvert(), py::arg("beta0").noconvert(), py::arg("alpha0").noconvert(),
          py::arg("W0").none(true), py::arg("mu1").noconvert(), py::arg("eta").noconvert(), py::arg("tol").noconvert(),
          py::arg("settings"), py::arg("init"), py::arg("n_threads") = 0,
          py::arg("exponents").noconvert().none(true) = py::none(), py::arg("from_offsets") = false,
          py::arg("offsets").noconvert().none(true) = py::none(),
          py::arg("assignment").noconvert().none(true) = py::none(), py::arg("C_g") = 1.0,
          "Prepares B problems for any init (relucore/gd/prepare.hpp, prepare_start(); settings.beta) with outer "
          "weights (m,) or (B, m): K, mu_1, alpha0, W0, every numerical check, eta[b] <= 0 replaced by the default "
          "step, and tol. A refused problem raises ValueError with the message of docs/errors.md (relucore/gd/"
          "refusal.hpp; init names the init in it). Returns how many scale_may_be_out_of_range(); with "
          "settings.scale_test those stop at that test (nothing written for them: prepare the rescaled copy). With "
          "settings.rescale (and exponents, (2, B) int64) a flagged problem out of the safe range is prepared on its "
          "exactly "
          "rescaled copy (prepare_start() of gd/prepare.hpp: its given eta, tol, offsets and start mapped into the "
          "copy's units, every output in them) and exponents[:, b] receives its ex, ey (0, 0: unscaled); data out of "
          "range of a model named by settings.not_scale_free are refused, then a given eta out of range on the copy, "
          "before any other refusal. With from_offsets (settings.beta given) beta0 is computed here, in the units each "
          "problem is prepared in: the offsets (B, m, n) given in the caller's units, or the default offset of the "
          "labels (offsets None), with assignment (B, n) the disjoint start of constant C_g (else beta0 = the "
          "offsets); offsets that are not usable are refused (eps_invalid) after those two and before the others.");
}

static void bind_weights_and_dense_runs(py::module_& m) {
    m.def(
        "weights_from_dual_batch",
        [](const CArray<double>& X, const CArray<double>& W0, const CArray<double>& alpha0, const CArray<double>& alpha,
           CArray<double> W, int n_threads) {
            require_shape(X, "X", {-1, -1, -1});
            const Index B = X.shape(0), n = X.shape(1), d = X.shape(2);
            require_shape(alpha, "alpha", {B, -1, n});
            const Index m_ = alpha.shape(1);
            require_shape(alpha0, "alpha0", {B, m_, n});
            require_shape(W0, "W0", {B, m_, d});
            require_shape(W, "W", {B, m_, d});
            const double *xp = X.data(), *w0p = W0.data(), *a0p = alpha0.data(), *ap = alpha.data();
            double* wp = W.mutable_data();
            const blas::SingleThreaded blas_threads = blas_for_call();
            run_without_gil(
                [&](const std::atomic<bool>*) {
                    parallel_for(B, n_threads, [&](Index b) {
                        RowMatrix scratch(m_, n);
                        weights_from_dual(ConstMatrixMap(xp + b * n * d, n, d), ConstMatrixMap(w0p + b * m_ * d, m_, d),
                                          ConstMatrixMap(a0p + b * m_ * n, m_, n),
                                          ConstMatrixMap(ap + b * m_ * n, m_, n), MatrixMap(wp + b * m_ * d, m_, d),
                                          scratch);
                    });
                },
                static_cast<double>(B) * m_ * n * d > 5e8);
        },
        py::arg("X").noconvert(), py::arg("W0").noconvert(), py::arg("alpha0").noconvert(),
        py::arg("alpha").noconvert(), py::arg("W").noconvert(), py::arg("n_threads") = 0,
        "W[b] = W0[b] + (alpha[b] - alpha0[b]) X[b] (relucore/linalg/span.hpp), written into W (B, m, d).");

    m.def(
        "run_dense_batch",
        [](const CArray<double>& X, const CArray<double>& y, CArray<double> outer, CArray<double> W,
           CArray<double> alpha, CArray<double> beta, const CArray<double>& eta, const CArray<double>& tol,
           const GDSettings& settings, const py::dict& history, int n_threads,
           std::optional<CArray<double>> output_bias, std::optional<CArray<double>> loss_weights,
           const py::object& progress) {
            require_shape(X, "X", {-1, -1, -1});
            const Index B = X.shape(0), n = X.shape(1), d = X.shape(2), m_ = outer.shape(outer.ndim() - 1);
            BatchExtras extras{std::move(output_bias), std::move(loss_weights), progress};
            require_shape(W, "W", {B, m_, d});
            const double* xp = X.data();
            double* wp = W.mutable_data();
            return run_engine_batch(
                B, n, y, outer, alpha, beta, eta, tol, settings, history, n_threads, static_cast<double>(n) * d, 0.0,
                extras, [&](Index b, ProblemViews& v, const GDSettings& s, History* h, Outcomes& out) {
                    MatrixMap W_b(wp + b * m_ * d, m_, d);
                    DenseGD::Start start;
                    start.outer = v.outer;
                    start.W = W_b;
                    start.alpha = v.alpha;
                    DenseGD engine(borrow, ConstMatrixMap(xp + b * n * d, n, d), v.y, std::move(start), s);
                    v.configure(engine);
                    out.store(b, v.run(engine, h), engine);
                    W_b = engine.W();
                    v.store(engine, outer.ndim() == 2);
                    if (!all_finite(W_b)) out.finite.mutable_data()[b] = 0;
                });
        },
        py::arg("X").noconvert(), py::arg("y").noconvert(), py::arg("outer").noconvert(), py::arg("W").noconvert(),
        py::arg("alpha").noconvert(), py::arg("beta").noconvert(), py::arg("eta").noconvert(),
        py::arg("tol").noconvert(), py::arg("settings"), py::arg("history"), py::arg("n_threads") = 0,
        py::arg("output_bias").noconvert().none(true) = py::none(),
        py::arg("loss_weights").noconvert().none(true) = py::none(), py::arg("progress").none(true) = py::none(),
        "Runs the weight-space engine on B problems; W (B, m, d) and alpha are updated in place, beta written, and "
        "outer when it is (B, m) (a trained outer layer); output_bias, loss_weights, progress and the returned "
        "BatchOutput as in run_dual_batch (its \"finite\" includes W).");
}

void bind_train(py::module_& m) {
    bind_model_settings(m);
    bind_batch_output(m);
    bind_dual_runs(m);
    bind_default_offset(m);
    bind_prepare(m);
    bind_weights_and_dense_runs(m);
}
