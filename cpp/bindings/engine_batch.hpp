// The batched runs' shared machinery (bind_train.cpp): per-problem views of the arrays, the
// growing histories, the outcome arrays, and run_engine_batch(), which runs one engine per
// problem with the GIL released and OpenMP across problems. Nothing numerical happens here.
#pragma once

#include "common.hpp"

#include "relucore/core/parallel.hpp"
#include "relucore/gd/run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <vector>

namespace relucore::bindings {

namespace py = pybind11;
// The recorded states of a batch (bound as _core.BatchHistory, read-only): arrays (B, R_max, ...)
// padded with steps -1, loss, states and outer weights NaN, mask 0. outer, beta, alpha and mask
// are None when they were not kept.
struct BatchHistory {
    CArray<std::int64_t> steps;
    CArray<double> loss;
    std::optional<CArray<double>> outer, beta, alpha;
    std::optional<CArray<std::uint8_t>> mask;
};

// Per-problem histories that grow with the run (GrowingHistory): memory
// follows the steps actually run, not the step budget. history = {"limit": R,
// "states": bool, "outer": m (keep the outer weights; 0 or absent: not)} with R
// the most slots a run can fill (0 or absent: none);
// "initial" (optional) the first chunk. After the runs, collect() copies them
// into a BatchHistory.
struct HistoryStores {
    std::vector<std::unique_ptr<GrowingHistory>> stores;
    std::int64_t limit = 0, initial = 64;
    bool states = true;
    Index mn = 0, m_outer = 0;

    HistoryStores(const py::dict& hist, Index B, Index mn_) : mn(mn_) {
        if (hist.contains("limit")) limit = hist["limit"].cast<std::int64_t>();
        if (hist.contains("states")) states = hist["states"].cast<bool>();
        if (hist.contains("initial")) initial = hist["initial"].cast<std::int64_t>();
        if (hist.contains("outer")) m_outer = hist["outer"].cast<Index>();
        if (limit < 0 || initial < 1 || m_outer < 0)
            throw py::value_error("history: limit and outer must be >= 0 and initial >= 1");
        if (limit > 0) stores.resize(static_cast<std::size_t>(B));
    }
    // Problem b's history (created on the problem's thread), or null.
    History* view(Index b) {
        if (limit == 0) return nullptr;
        auto& slot = stores[static_cast<std::size_t>(b)];
        slot = std::make_unique<GrowingHistory>(mn, limit, std::min(limit, initial), states, m_outer);
        return &slot->history();
    }
    bool failed() const {
        for (const auto& g : stores)
            if (g && g->failed()) return true;
        return false;
    }
    BatchHistory collect(Index m, Index n) const {
        const auto B = static_cast<py::ssize_t>(stores.size());
        std::int64_t R = 0;
        for (const auto& g : stores) R = std::max(R, g->count());
        CArray<std::int64_t> steps({B, static_cast<py::ssize_t>(R)});
        CArray<double> loss({B, static_cast<py::ssize_t>(R)});
        std::fill_n(steps.mutable_data(), steps.size(), -1);
        std::fill_n(loss.mutable_data(), loss.size(), std::numeric_limits<double>::quiet_NaN());
        for (py::ssize_t b = 0; b < B; ++b) {
            const GrowingHistory& g = *stores[static_cast<std::size_t>(b)];
            std::copy_n(g.steps().data(), g.count(), steps.mutable_data() + b * R);
            std::copy_n(g.loss().data(), g.count(), loss.mutable_data() + b * R);
        }
        BatchHistory d{steps, loss};
        if (m_outer > 0) {
            CArray<double> outer({B, static_cast<py::ssize_t>(R), static_cast<py::ssize_t>(m_outer)});
            std::fill_n(outer.mutable_data(), outer.size(), std::numeric_limits<double>::quiet_NaN());
            for (py::ssize_t b = 0; b < B; ++b) {
                const GrowingHistory& g = *stores[static_cast<std::size_t>(b)];
                std::copy_n(g.outer().data(), g.count() * m_outer, outer.mutable_data() + b * R * m_outer);
            }
            d.outer = outer;
        }
        if (!states) return d;
        const std::vector<py::ssize_t> shape{B, static_cast<py::ssize_t>(R), m, n};
        CArray<double> beta(shape), alpha(shape);
        CArray<std::uint8_t> mask(shape);
        std::fill_n(beta.mutable_data(), beta.size(), std::numeric_limits<double>::quiet_NaN());
        std::fill_n(alpha.mutable_data(), alpha.size(), std::numeric_limits<double>::quiet_NaN());
        std::fill_n(mask.mutable_data(), mask.size(), std::uint8_t(0));
        for (py::ssize_t b = 0; b < B; ++b) {
            const GrowingHistory& g = *stores[static_cast<std::size_t>(b)];
            const std::size_t used = static_cast<std::size_t>(g.count()) * static_cast<std::size_t>(mn);
            const std::size_t at =
                static_cast<std::size_t>(b) * static_cast<std::size_t>(R) * static_cast<std::size_t>(mn);
            std::copy_n(g.beta().data(), used, beta.mutable_data() + at);
            std::copy_n(g.alpha().data(), used, alpha.mutable_data() + at);
            std::copy_n(g.mask().data(), used, mask.mutable_data() + at);
        }
        d.beta = beta;
        d.alpha = alpha;
        d.mask = mask;
        return d;
    }
};

// Per-problem outcome arrays returned to Python (bound as _core.BatchOutput, read-only).
struct Outcomes {
    CArray<std::int32_t> status;
    CArray<std::int64_t> nit, pattern_stable_step, n_records;
    CArray<double> loss, grad_norm;
    CArray<double> unresolved_bound;  // (B): RunSummary::unresolved_bound
    CArray<std::uint8_t> unfit;       // (B, n): 1 where example_unfit() holds in a stalled run
    // (B, n): 1 where out_of_reach() holds: no neuron can output the label's sign
    CArray<std::uint8_t> out_of_reach;
    // (B): 1 where the final loss, gradient norm, alpha and beta (and W where the run formed it)
    // are all finite; a run_one that forms W clears it where W is not.
    CArray<std::uint8_t> finite;
    // (B): 1 where settle() turned the status to diverged: the engine stopped otherwise, but the
    // final state was not finite.
    CArray<std::uint8_t> overflowed;
    std::optional<BatchHistory> history;  // when one was kept
    Outcomes(Index B, Index n)
        : status(B),
          nit(B),
          pattern_stable_step(B),
          n_records(B),
          loss(B),
          grad_norm(B),
          unresolved_bound(B),
          unfit({B, n}),
          out_of_reach({B, n}),
          finite(B),
          overflowed(B) {
        std::fill_n(unfit.mutable_data(), unfit.size(), std::uint8_t(0));
        std::fill_n(unresolved_bound.mutable_data(), B, std::numeric_limits<double>::quiet_NaN());
        std::fill_n(finite.mutable_data(), finite.size(), std::uint8_t(1));
        std::fill_n(overflowed.mutable_data(), overflowed.size(), std::uint8_t(0));
    }
    // Stores problem b's summary and, when it stalled, its unfit examples.
    template <class Engine>
    void store(Index b, const RunSummary& s, const Engine& e) {
        const Index n = e.n_samples();
        if (s.status == Status::stalled) {
            for (Index i = 0; i < n; ++i) unfit.mutable_data()[b * n + i] = example_unfit(e, i) ? 1 : 0;
        }
        const auto& o = e.outer();
        for (Index i = 0; i < n; ++i)
            out_of_reach.mutable_data()[b * n + i] =
                !e.has_output_bias() && relucore::out_of_reach(o.data(), o.size(), e.settings().model, e.labels()[i])
                    ? 1
                    : 0;
        status.mutable_data()[b] = static_cast<std::int32_t>(s.status);
        nit.mutable_data()[b] = s.nit;
        pattern_stable_step.mutable_data()[b] = s.pattern_stable_step;
        n_records.mutable_data()[b] = s.n_records;
        loss.mutable_data()[b] = s.loss;
        grad_norm.mutable_data()[b] = s.grad_norm;
        unresolved_bound.mutable_data()[b] = s.unresolved_bound;
    }
    // After problem b's run and finite check: no non-finite number may leave in a result that is
    // not diverged. The engines watch the loss, but a state can overflow where the loss does not
    // see it (an inactive unit, or W rebuilt from alpha); such a run ends diverged, with no unfit
    // examples (they belonged to the status it no longer has).
    void settle(Index b, Index n) {
        if (finite.data()[b] != 0 || status.data()[b] == static_cast<std::int32_t>(Status::diverged)) return;
        status.mutable_data()[b] = static_cast<std::int32_t>(Status::diverged);
        overflowed.mutable_data()[b] = 1;
        std::fill_n(unfit.mutable_data() + b * n, n, std::uint8_t(0));
    }
};

// Problem b's slices of the arrays both engines share; outer is problem b's
// row of a (B, m) outer array (written back after the run: a trained outer
// layer moves) or the shared (m) one.
struct ProblemViews {
    ConstVectorMap y;
    VectorMap outer;
    MatrixMap alpha, beta;
    double* output_bias = nullptr;                    // problem b's output bias (updated in place), or null: none
    const double* loss_weights = nullptr;             // problem b's n loss weights, or null: every weight 1
    std::atomic<std::int64_t>* steps_done = nullptr;  // the batch's steps so far (a progress bar), or null
    // Steps between two counts of steps_done: often enough for a bar, rare enough to cost nothing.
    static constexpr std::int64_t kCountEvery = 1024;
    // Runs the engine by its settings; with steps_done, counts its steps there (a callback that only
    // reads, so the run is the same as without it).
    template <class Engine>
    RunSummary run(Engine& e, History* h) const {
        if (steps_done == nullptr) return e.run(h);
        std::atomic<std::int64_t>* done = steps_done;
        RunSummary r = e.run(h, kCountEvery, [done](const Engine&) { done->fetch_add(kCountEvery); });
        done->fetch_add(r.nit % kCountEvery);
        return r;
    }
    // Gives a new engine the problem's output bias and loss weights (before its run).
    template <class Engine>
    void configure(Engine& e) const {
        if (loss_weights != nullptr) e.set_loss_weights(ConstVectorMap(loss_weights, y.size()));
        if (output_bias != nullptr) e.set_output_bias(*output_bias);
    }
    // Whether the final state written back is finite (with the run's loss and gradient norm).
    bool finite(const Outcomes& out, Index b) const {
        return std::isfinite(out.loss.data()[b]) && std::isfinite(out.grad_norm.data()[b]) && all_finite(alpha) &&
               all_finite(beta);
    }
    // Copies the engine's final state into the problem's arrays.
    template <class Engine>
    void store(const Engine& e, bool per_problem_outer) {
        alpha = e.alpha();
        beta = e.beta();
        if (per_problem_outer) outer = e.outer();
        if (output_bias != nullptr) *output_bias = e.output_bias();
    }
};

// Runs one engine per problem with its own eta[b] and tol[b], the GIL released
// and OpenMP across problems, after checking the shared arrays: y (B, n),
// outer (m) shared or (B, m) per problem (required, and updated in place, with
// settings.train_outer), alpha and beta (B, m, n), eta and tol (B). run_one(b, views,
// settings, history, outcomes) builds problem b's engine, runs it, writes its
// state back and stores its summary (outcomes.store); cost is the work of one
// step of one neuron, extra_work the flops of the rest of the call. Returns the
// per-problem outcomes (with their history when one was kept), each problem settled (Outcomes::settle).
// extras: the optional output biases (B), updated in place, and loss weights (B, n).
struct BatchExtras {
    std::optional<CArray<double>> output_bias, loss_weights;
    // progress(steps): called with the batch's steps so far while it runs (None: not called).
    py::object progress = py::none();
};

template <class RunOne>
Outcomes run_engine_batch(Index B, Index n, const CArray<double>& y, CArray<double>& outer, CArray<double>& alpha,
                          CArray<double>& beta, const CArray<double>& eta, const CArray<double>& tol,
                          const GDSettings& settings, const py::dict& history, int n_threads, double cost,
                          double extra_work, BatchExtras& extras, RunOne&& run_one) {
    const bool per_problem = outer.ndim() == 2;
    const Index m = outer.shape(per_problem ? 1 : 0);
    require_shape(y, "y", {B, n});
    if (per_problem)
        require_shape(outer, "outer", {B, m});
    else
        require_shape(outer, "outer", {m});
    if (settings.train_outer && !per_problem)
        throw py::value_error("outer: a trained outer layer needs outer of shape (B, m), updated in place");
    require_shape(alpha, "alpha", {B, m, n});
    require_shape(beta, "beta", {B, m, n});
    require_shape(eta, "eta", {B});
    require_shape(tol, "tol", {B});
    settings.validate();
    if (extras.output_bias) require_shape(*extras.output_bias, "output_bias", {B});
    if (extras.loss_weights) require_shape(*extras.loss_weights, "loss_weights", {B, n});
    double* obp = extras.output_bias ? extras.output_bias->mutable_data() : nullptr;
    const double* lwp = extras.loss_weights ? extras.loss_weights->data() : nullptr;
    HistoryStores hist(history, B, m * n);
    std::atomic<std::int64_t> steps_done{0};
    const bool counted = !extras.progress.is_none();
    std::function<void()> tick;
    if (counted) tick = [&] { extras.progress(steps_done.load()); };
    Outcomes out(B, n);
    const double *yp = y.data(), *ep = eta.data(), *tp = tol.data();
    double *ap = alpha.mutable_data(), *bp = beta.mutable_data();
    // A shared (m) outer array is only read (it may be read-only): the views are never written back to it.
    double* op = per_problem ? outer.mutable_data() : const_cast<double*>(outer.data());
    const Index outer_stride = per_problem ? m : 0;
    run_without_gil(
        [&](const std::atomic<bool>* cancel) {
            parallel_for(B, n_threads, [&](Index b) {
                GDSettings s = settings;
                s.eta = ep[b];
                s.tol = tp[b];
                s.cancel = cancel;
                History* h = hist.view(b);
                ProblemViews v{ConstVectorMap(yp + b * n, n), VectorMap(op + b * outer_stride, m),
                               MatrixMap(ap + b * m * n, m, n), MatrixMap(bp + b * m * n, m, n)};
                if (obp != nullptr) v.output_bias = obp + b;
                if (lwp != nullptr) v.loss_weights = lwp + b * n;
                if (counted) v.steps_done = &steps_done;
                run_one(b, v, s, h, out);
                if (!v.finite(out, b)) out.finite.mutable_data()[b] = 0;
                out.settle(b, n);
            });
        },
        counted || is_long(static_cast<double>(B) * settings.max_steps * m * cost + extra_work), tick);
    if (hist.failed()) throw std::bad_alloc();
    if (hist.limit > 0) out.history = hist.collect(m, n);
    return out;
}

}  // namespace relucore::bindings
