// relucore._core.DualTrainer: one DualGD engine kept alive between calls, for
// relucore.Trainer (python/relucore/_trainer.py). Validation, defaults and the
// starting point come from the Python layer; this file only owns the engine,
// releases the GIL around its steps and exposes its state as read-only numpy
// views (the trainer object is the views' base, so they stay valid).
#include "certificate_types.hpp"
#include "common.hpp"
#include "limit_run.hpp"

#include <pybind11/stl.h>

#include "relucore/gd/dual_gd.hpp"
#include "relucore/gd/run.hpp"

#include <atomic>
#include <cmath>
#include <optional>
#include <vector>
#include <memory>

namespace py = pybind11;
using namespace relucore;
using namespace relucore::bindings;

namespace {

class DualTrainer {
public:
    DualTrainer(const CArray<double>& K, const CArray<double>& y, const CArray<double>& outer,
                const CArray<double>& alpha0, const CArray<double>& beta0, const GDSettings& settings)
        : engine_(make_engine(K, y, outer, alpha0, beta0, settings)) {}

    DualGD& engine() { return engine_; }
    const DualGD& engine() const { return engine_; }

    // Marks the trainer busy for the lifetime of the guard: one call at a time,
    // since the GIL is released while it steps. run() lifts the mark while its
    // callback executes, so the callback may step or change the trainer.
    class Busy {
    public:
        explicit Busy(DualTrainer& t) : t_(t) {
            if (t_.busy_.exchange(true)) throw std::runtime_error("this Trainer is already stepping in another thread");
        }
        ~Busy() { t_.busy_.store(false); }
        Busy(const Busy&) = delete;
        Busy& operator=(const Busy&) = delete;

    private:
        DualTrainer& t_;
    };

    // Points the engine at a cancel flag that lives on the stack and restores
    // the previous one (an enclosing run's, when a callback steps) afterwards.
    struct CancelGuard {
        DualGD& e;
        const std::atomic<bool>* previous;
        CancelGuard(DualGD& engine, const std::atomic<bool>* flag)
            : e(engine), previous(static_cast<const DualGD&>(engine).settings().cancel) {
            e.set_cancel_flag(flag);
        }
        ~CancelGuard() { e.set_cancel_flag(previous); }
        CancelGuard(const CancelGuard&) = delete;
        CancelGuard& operator=(const CancelGuard&) = delete;
    };

    std::atomic<bool> busy_{false};
    bool in_run_ = false;  // guarded by busy_ (and the GIL when the callback runs)

private:
    static DualGD make_engine(const CArray<double>& K, const CArray<double>& y, const CArray<double>& outer,
                              const CArray<double>& alpha0, const CArray<double>& beta0, const GDSettings& s) {
        require_shape(K, "K", {-1, -1});
        const Index n = K.shape(0);
        require_shape(K, "K", {n, n});
        require_shape(y, "y", {n});
        require_shape(outer, "outer", {-1});
        const Index m = outer.shape(0);
        require_shape(alpha0, "alpha0", {m, n});
        require_shape(beta0, "beta0", {m, n});
        // The trainer owns its copy of K: the caller's array may change or go away.
        auto Kown = std::make_shared<const RowMatrix>(ConstMatrixMap(K.data(), n, n));
        DualGD::Start start;
        start.outer = ConstVectorMap(outer.data(), m);
        start.alpha = ConstMatrixMap(alpha0.data(), m, n);
        start.beta = ConstMatrixMap(beta0.data(), m, n);
        return DualGD(std::move(Kown), ConstVectorMap(y.data(), n), std::move(start), s);
    }

    DualGD engine_;
};

// A read-only numpy view of engine memory whose base is the trainer object.
template <class T>
py::array readonly_view(py::handle owner, const T* data, std::vector<py::ssize_t> shape, py::dtype dtype) {
    std::vector<py::ssize_t> strides(shape.size());
    py::ssize_t stride = dtype.itemsize();
    for (size_t i = shape.size(); i-- > 0;) {
        strides[i] = stride;
        stride *= shape[i];
    }
    py::array a(dtype, shape, strides, static_cast<const void*>(data), owner);
    a.attr("setflags")(py::arg("write") = false);
    return a;
}

// DualTrainer.run's result (_core.TrainerRunOutput): the engine's RunSummary, whether the state it
// stopped at is finite, and the examples example_unfit() reports when the run stalled (empty
// otherwise) and those out of reach of every neuron.
struct TrainerRunOutput {
    RunSummary summary;
    bool finite = true;
    py::array_t<std::int64_t> unfit, out_of_reach;
};

py::array_t<std::int64_t> index_array(const std::vector<std::int64_t>& v) {
    return py::array_t<std::int64_t>(static_cast<py::ssize_t>(v.size()), v.data());
}

TrainerRunOutput run_output(const RunSummary& s, const DualGD& e) {
    TrainerRunOutput out;
    out.summary = s;
    out.finite = e.alpha().allFinite() && e.beta().allFinite() && std::isfinite(s.loss) && std::isfinite(s.grad_norm);
    std::vector<std::int64_t> unfit;
    if (s.status == Status::stalled)
        for (Index i = 0; i < e.n_samples(); ++i)
            if (example_unfit(e, i)) unfit.push_back(i);
    out.unfit = index_array(unfit);
    std::vector<std::int64_t> reach;
    for (Index i = 0; i < e.n_samples(); ++i)
        if (out_of_reach(e.outer().data(), e.outer().size(), e.settings().model, e.labels()[i])) reach.push_back(i);
    out.out_of_reach = index_array(reach);
    return out;
}

void bind_run_outputs(py::module_& m) {
    py::class_<TrainerRunOutput>(m, "TrainerRunOutput", "The result of DualTrainer.run (private: relucore.Trainer).")
        .def_property_readonly(
            "status", [](const TrainerRunOutput& o) { return o.summary.status; }, "How the run ended (Status).")
        .def_property_readonly(
            "nit", [](const TrainerRunOutput& o) { return o.summary.nit; }, "The engine's step count at the end.")
        .def_property_readonly(
            "loss", [](const TrainerRunOutput& o) { return o.summary.loss; }, "Loss of the final state.")
        .def_property_readonly(
            "grad_norm", [](const TrainerRunOutput& o) { return o.summary.grad_norm; },
            "||grad_W R||_F at the final state.")
        .def_property_readonly(
            "pattern_stable_step", [](const TrainerRunOutput& o) { return o.summary.pattern_stable_step; },
            "First step after which no mask changed.")
        .def_property_readonly(
            "unresolved_bound", [](const TrainerRunOutput& o) { return o.summary.unresolved_bound; },
            "NaN, unless the final gradient norm is below tol in dual form but not provably so (K singular): then "
            "the bound on the rounding of grad_norm, and the run did not converge.")
        .def_readonly("finite", &TrainerRunOutput::finite,
                      "Whether alpha, beta, the loss and its gradient norm are finite.")
        .def_readonly("unfit", &TrainerRunOutput::unfit, "The examples the state leaves unfit when it stalled, int64.")
        .def_readonly("out_of_reach", &TrainerRunOutput::out_of_reach,
                      "The examples no neuron can fit (their label's sign is out of reach), int64.");
    bind_limit_run_output(m);
}

}  // namespace

static void bind_trainer_construction_and_step(py::class_<DualTrainer>& cls) {
    cls.def(py::init<const CArray<double>&, const CArray<double>&, const CArray<double>&, const CArray<double>&,
                     const CArray<double>&, const GDSettings&>(),
            py::arg("K").noconvert(), py::arg("y").noconvert(), py::arg("outer").noconvert(),
            py::arg("alpha0").noconvert(), py::arg("beta0").noconvert(), py::arg("settings"),
            "Copies K (n, n), y (n), outer (m), alpha0 and beta0 (m, n); evaluates the starting state.")
        .def(
            "restore",
            [](DualTrainer& t, std::int64_t steps_taken, const CArray<std::uint8_t>& mask, std::int64_t stable_step) {
                const DualGD& e = t.engine();
                require_shape(mask, "mask", {e.n_neurons(), e.n_samples()});
                Mask mk = Eigen::Map<const Mask>(mask.data(), e.n_neurons(), e.n_samples());
                t.engine().restore(steps_taken, mk, stable_step);
            },
            py::arg("steps_taken"), py::arg("mask").noconvert(), py::arg("stable_step"),
            "Restores the step count and the activation-pattern tracker of a checkpoint.")
        .def(
            "set_reference",
            [](DualTrainer& t, const CArray<double>& alpha_ref, const CArray<double>& beta_ref) {
                const DualGD& e = t.engine();
                require_shape(alpha_ref, "alpha_ref", {e.n_neurons(), e.n_samples()});
                require_shape(beta_ref, "beta_ref", {e.n_neurons(), e.n_samples()});
                t.engine().set_reference(ConstMatrixMap(alpha_ref.data(), e.n_neurons(), e.n_samples()),
                                         ConstMatrixMap(beta_ref.data(), e.n_neurons(), e.n_samples()));
            },
            py::arg("alpha_ref").noconvert(), py::arg("beta_ref").noconvert(),
            "Sets the state beta is resynchronised from, beta = beta_ref + K (alpha - alpha_ref) (m, n each): "
            "the original start when resuming a checkpoint.")
        .def(
            "step",
            [](DualTrainer& t, std::int64_t k) {
                if (k < 0) throw py::value_error("k must be >= 0");
                DualTrainer::Busy busy(t);
                DualGD& e = t.engine();
                std::int64_t taken = 0;
                run_without_gil(
                    [&](const std::atomic<bool>* cancel) {
                        DualTrainer::CancelGuard guard(e, cancel);
                        taken = e.step(k);
                    },
                    is_long(static_cast<double>(k) * e.n_neurons() * e.n_samples() * e.n_samples()));
                return taken;
            },
            py::arg("k") = 1, "Takes k GD steps with the GIL released (Ctrl-C stops after the current step).");
}

// train(steps=np.inf)'s loop (relucore.gd.limit.run_engine_to_limit; docs/math.md §13, "The run"):
// GD in doubling chunks, the proof tried after each chunk over which the pattern held (and at the
// end), the next try at the step a failed one names. Returns the last run's status and stable step,
// and the last try (None when the run diverged: Python names the reason).
static LimitRunOutput run_to_certificate(DualTrainer& t, const CArray<double>& K, const CArray<double>& y,
                                         const CArray<double>& signs, double tol, std::int64_t max_steps) {
    DualTrainer::Busy busy(t);
    DualGD& e = t.engine();
    const Index n = K.shape(0);
    const flow::Mat Km = Eigen::Map<const RowMatrix>(K.data(), n, n);
    const flow::Vec yv = Eigen::Map<const flow::Vec>(y.data(), y.shape(0));
    const flow::Vec sv = Eigen::Map<const flow::Vec>(signs.data(), signs.shape(0));
    std::int64_t chunk = 1, target = -1, hopeless = -1;
    std::int64_t noncontracting_since = -1, forced = -1;
    bool tried = false, diverged = false, noncontracting = false;
    flow::GDCertificate cert;
    RunSummary summary;
    while (true) {
        const std::int64_t before = e.steps_taken();
        const std::int64_t stop = (target < 0 || target <= before) ? before + chunk : target;
        GDSettings s = e.settings();
        s.max_steps = std::min(stop, max_steps);
        s.tol = tol;
        s.converge_on_running_norm = true;  // finish_limit_run() checks the returned point
        s.validate();
        e.settings() = s;
        const double remaining = static_cast<double>(std::max<std::int64_t>(s.max_steps - e.steps_taken(), 0));
        run_without_gil(
            [&](const std::atomic<bool>* cancel) {
                DualTrainer::CancelGuard guard(e, cancel);
                summary = e.run(nullptr);
            },
            is_long(remaining * e.n_neurons() * e.n_samples() * e.n_samples()));
        if (summary.status == Status::diverged) {
            diverged = true;
            break;
        }
        // Every status but "max_steps of this chunk" ends the run (see run_engine_to_limit).
        const bool last = summary.status != Status::max_steps || e.steps_taken() >= max_steps;
        const std::int64_t stable = summary.pattern_stable_step;
        const bool due = forced >= 0 && e.steps_taken() >= forced;
        if (!((stable <= before && stable > hopeless) || last || !tried || due)) {
            chunk *= 2;
            continue;
        }
        if (!e.alpha().allFinite() || !e.beta().allFinite()) {
            diverged = true;
            break;
        }
        const std::int64_t step = e.steps_taken();
        cert = flow::certify_gd(Km, yv, sv, e.alpha(), e.beta(), e.eta());
        tried = true;
        if (cert.status == flow::GDCertificate::holds) break;
        hopeless = cert.need == -2 ? step : -1;
        target = cert.need >= 0 ? step + cert.need : -1;
        if (last) break;
        if (cert.status == flow::GDCertificate::not_contracting) {
            // No number of steps makes the proof hold on a pattern whose final phase is not strictly
            // contracting, and where K is singular (collinear or duplicate examples, n > d) GD may chatter
            // between such patterns for ever: stop defaults::limit_noncontracting_steps steps after a try
            // first found one, trying again there whether or not the pattern moved.
            if (noncontracting_since < 0) noncontracting_since = step;
            if (step - noncontracting_since >= defaults::limit_noncontracting_steps) {
                noncontracting = true;
                break;
            }
            target = forced = noncontracting_since + defaults::limit_noncontracting_steps;
        } else {
            noncontracting_since = forced = -1;
        }
        chunk *= 2;
    }
    LimitRunOutput out;
    out.run_status = out.status = summary.status;
    out.pattern_stable_step = summary.pattern_stable_step;
    out.diverged = diverged;
    out.noncontracting_stop = noncontracting;
    out.noncontracting_since = noncontracting_since;
    if (diverged) {
        out.diverged_mu_max = diverged_mu_max(Km, yv, sv, e.alpha(), e.beta());
        return out;
    }
    out.certificate = std::move(cert);
    run_without_gil([&](const std::atomic<bool>*) { finish_limit_run(Km, yv, sv, e.alpha(), e.beta(), tol, out); },
                    false);
    return out;
}

static void bind_trainer_run_and_setters(py::class_<DualTrainer>& cls) {
    cls.def("run_to_certificate", &run_to_certificate, py::arg("K"), py::arg("y"), py::arg("signs"), py::arg("tol"),
            py::arg("max_steps"),
            "train(steps=np.inf)'s loop (docs/math.md §13): GD in doubling chunks until the frozen-pattern proof "
            "holds, the run stops or max_steps; a LimitRunOutput.");
    cls.def(
           "run",
           [](DualTrainer& t, std::int64_t max_steps, double tol, std::int64_t every, py::object callback) {
               DualTrainer::Busy busy(t);
               if (t.in_run_) throw std::runtime_error("run() cannot be called from its own callback");
               DualGD& e = t.engine();
               GDSettings s = e.settings();
               s.max_steps = max_steps;
               s.tol = tol;
               s.validate();
               e.settings() = s;
               const double remaining = static_cast<double>(std::max<std::int64_t>(max_steps - e.steps_taken(), 0));
               RunSummary summary;
               std::exception_ptr callback_error;
               // Runs the Python callback with the GIL and without the busy mark,
               // then takes the mark back (failing if another thread took it).
               auto call = [&](DualGD&) -> bool {
                   py::gil_scoped_acquire acquire;
                   bool stop = true;
                   t.busy_.store(false);
                   try {
                       stop = py::bool_(callback());
                   } catch (...) {
                       callback_error = std::current_exception();
                   }
                   if (t.busy_.exchange(true) && !callback_error)
                       callback_error = std::make_exception_ptr(
                           std::runtime_error("another thread used this Trainer during the run's callback"));
                   return stop || static_cast<bool>(callback_error);
               };
               t.in_run_ = true;
               try {
                   run_without_gil(
                       [&](const std::atomic<bool>* cancel) {
                           DualTrainer::CancelGuard guard(e, cancel);
                           if (callback.is_none() || every <= 0)
                               summary = e.run(nullptr);
                           else
                               summary = e.run(nullptr, every, call);
                       },
                       is_long(remaining * e.n_neurons() * e.n_samples() * e.n_samples()));
               } catch (...) {
                   t.in_run_ = false;
                   throw;
               }
               t.in_run_ = false;
               if (callback_error) std::rethrow_exception(callback_error);
               return run_output(summary, e);
           },
           py::arg("max_steps"), py::arg("tol"), py::arg("every") = 0, py::arg("callback") = py::none(),
           "Runs to a stopping rule (max_steps counts from step 0, tol on the gradient norm); "
           "callback() is called with the GIL every `every` steps (it may step or change the trainer) "
           "and stops the run by returning True; a TrainerRunOutput.")
        .def(
            "set_labels",
            [](DualTrainer& t, const CArray<double>& y) {
                DualTrainer::Busy busy(t);
                require_shape(y, "y", {t.engine().n_samples()});
                t.engine().set_labels(ConstVectorMap(y.data(), y.shape(0)));
            },
            py::arg("y").noconvert(), "Replaces the labels (n,) and re-evaluates the state.")
        .def(
            "set_eta",
            [](DualTrainer& t, double eta) {
                DualTrainer::Busy busy(t);
                t.engine().set_eta(eta);
            },
            py::arg("eta"), "Changes the step size and re-evaluates the state.")

        .def_property_readonly(
            "alpha",
            [](py::object self) {
                const DualGD& e = self.cast<DualTrainer&>().engine();
                return readonly_view(self, e.alpha().data(), {e.n_neurons(), e.n_samples()}, py::dtype::of<double>());
            },
            "Dual coordinates (m, n): a read-only view of the engine's memory, updated in place by every step.");
}

// The loss options of relucore.gd.loss_options: an output bias and loss weights (gd/engine_base.hpp).
static void bind_trainer_loss_options(py::class_<DualTrainer>& cls) {
    cls.def(
           "set_output_bias",
           [](DualTrainer& t, double b) {
               DualTrainer::Busy busy(t);
               t.engine().set_output_bias(b);
           },
           py::arg("b"), "Gives the network an output bias b (trained with train_outer) and re-evaluates.")
        .def(
            "set_loss_weights",
            [](DualTrainer& t, const CArray<double>& w) {
                DualTrainer::Busy busy(t);
                require_shape(w, "loss_weights", {t.engine().n_samples()});
                t.engine().set_loss_weights(ConstVectorMap(w.data(), w.shape(0)));
            },
            py::arg("w").noconvert(), "Weighs the examples' losses by w (n,) and re-evaluates.")
        .def_property_readonly(
            "output_bias",
            [](const DualTrainer& t) -> py::object {
                const DualGD& e = t.engine();
                return e.has_output_bias() ? py::object(py::float_(e.output_bias())) : py::object(py::none());
            },
            "The output bias b_out of the current state, or None without one.");
}

static void bind_trainer_state(py::class_<DualTrainer>& cls) {
    cls.def_property_readonly(
           "beta",
           [](py::object self) {
               const DualGD& e = self.cast<DualTrainer&>().engine();
               return readonly_view(self, e.beta().data(), {e.n_neurons(), e.n_samples()}, py::dtype::of<double>());
           },
           "Primal coordinates beta_k = X w_k (m, n): a read-only view, updated in place by every step.")
        .def_property_readonly(
            "mask",
            [](py::object self) {
                const DualGD& e = self.cast<DualTrainer&>().engine();
                return readonly_view(self, e.mask().data(), {e.n_neurons(), e.n_samples()}, py::dtype("bool"));
            },
            "Activation masks beta > 0 (m, n) as a read-only bool view, updated in place by every step.")
        .def_property_readonly(
            "predictions",
            [](py::object self) {
                const DualGD& e = self.cast<DualTrainer&>().engine();
                return readonly_view(self, e.predictions().data(), {e.n_samples()}, py::dtype::of<double>());
            },
            "Network outputs h(X) (n,) of the current state: a read-only view.")
        .def_property_readonly(
            "labels",
            [](py::object self) {
                const DualGD& e = self.cast<DualTrainer&>().engine();
                return readonly_view(self, e.labels().data(), {e.n_samples()}, py::dtype::of<double>());
            },
            "Current labels (n,): a read-only view.")
        .def_property_readonly(
            "outer",
            [](py::object self) {
                const DualGD& e = self.cast<DualTrainer&>().engine();
                return readonly_view(self, e.outer().data(), {e.n_neurons()}, py::dtype::of<double>());
            },
            "Outer-layer weights (m,): a read-only view.")
        .def_property_readonly(
            "K",
            [](py::object self) {
                const DualGD& e = self.cast<DualTrainer&>().engine();
                return readonly_view(self, e.gram().data(), {e.n_samples(), e.n_samples()}, py::dtype::of<double>());
            },
            "The trainer's own copy of the Gram matrix (n, n): a read-only view.")
        .def_property_readonly(
            "loss", [](const DualTrainer& t) { return t.engine().loss(); }, "Loss of the current state.")
        .def_property_readonly(
            "grad_norm", [](const DualTrainer& t) { return t.engine().grad_norm(); },
            "||grad_W R||_F of the current state.")
        .def_property_readonly(
            "steps_taken", [](const DualTrainer& t) { return t.engine().steps_taken(); },
            "GD steps taken since the starting point.")
        .def_property_readonly(
            "stable_step", [](const DualTrainer& t) { return t.engine().pattern().stable_step(); },
            "Last step at which an activation mask changed.")
        .def_property_readonly(
            "eta", [](const DualTrainer& t) { return t.engine().eta(); }, "Current step size.")
        .def_property_readonly(
            "settings", [](const DualTrainer& t) { return t.engine().settings(); },
            "A copy of the engine's GDSettings.");
}

void bind_trainer(py::module_& m) {
    bind_certificate_types(m);  // before the first signature that names them (bind_flow.cpp's too)
    bind_run_outputs(m);
    py::class_<DualTrainer> cls(m, "DualTrainer",
                                "One primal-dual GD engine kept between calls (private: use relucore.Trainer).");
    bind_trainer_construction_and_step(cls);
    bind_trainer_loss_options(cls);
    bind_trainer_run_and_setters(cls);
    bind_trainer_state(cls);
}
