// Batched kernels of relucore.sweep's Gram-mode fast path: per-trial seeds,
// the Bartlett sampler, the one-neuron minimum-norm QP and whole trials.
// Settings cross as the bound struct GramTrialSettings; outputs come back as a dict of named arrays
// (relucore.sweeps.gram_trial reads them by name; the names are listed in relucore.sweeps.columns).
#include "common.hpp"

#include "relucore/core/parallel.hpp"
#include "relucore/gd/refusal.hpp"
#include "relucore/minnorm/minnorm_qp.hpp"
#include "relucore/random/gram_sample.hpp"
#include "relucore/random/rng.hpp"
#include "relucore/stats/gram_stats.hpp"
#include "relucore/sweep/sweep_gram.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace py = pybind11;
using namespace relucore;
using namespace relucore::bindings;

namespace {

GramSampleSpec make_spec(Index n, const CArray<double>& values, const CArray<std::int64_t>& counts, int labels,
                         double lo, double hi) {
    require_shape(values, "values", {-1});
    require_shape(counts, "counts", {values.shape(0)});
    GramSampleSpec spec;
    spec.n = n;
    spec.values.assign(values.data(), values.data() + values.shape(0));
    spec.counts.assign(counts.data(), counts.data() + counts.shape(0));
    if (labels < 0 || labels > 2) throw py::value_error("labels must be 0 (uniform), 1 (positive) or 2 (normal)");
    spec.labels = static_cast<LabelKind>(labels);
    spec.lo = lo;
    spec.hi = hi;
    spec.validate();
    return spec;
}

// The outputs of sweep_gram_batch: one numpy array per named field, filled trial by trial.
struct GramTrialOutputs {
    py::dict arrays;
    double *K, *y, *loss, *grad_norm, *eta, *gap, *gap_normalized, *certificate, *mu1, *cond;
    std::int64_t *nit, *pattern_stable_step, *status, *n_pos, *n_neg, *error;
    // with gram_stats: gram_statistics (stats/gram_stats.hpp) of each K and max|y| / min|y| (inf when min is 0)
    double *g_mu_max = nullptr, *g_mu_min = nullptr, *g_deviation = nullptr, *g_offdiag_ratio = nullptr,
           *g_max_offdiag = nullptr, *g_min_diag = nullptr, *label_ratio = nullptr;

    // keep_data: also K (B, n, n) and y (B, n); otherwise each trial's K and y live in
    // per-thread scratch and only the per-trial fields come back.
    GramTrialOutputs(Index B, Index n, bool keep_data, bool gram_stats) {
        K = keep_data ? add<double>("K", {B, n, n}) : nullptr;
        y = keep_data ? add<double>("y", {B, n}) : nullptr;
        loss = add<double>("loss", {B});
        grad_norm = add<double>("grad_norm", {B});
        eta = add<double>("eta", {B});
        gap = add<double>("gap", {B});
        gap_normalized = add<double>("gap_normalized", {B});
        certificate = add<double>("certificate", {B});
        mu1 = add<double>("mu1", {B});
        cond = add<double>("cond", {B});
        nit = add<std::int64_t>("nit", {B});
        pattern_stable_step = add<std::int64_t>("pattern_stable_step", {B});
        status = add<std::int64_t>("status", {B});
        n_pos = add<std::int64_t>("n_pos", {B});
        n_neg = add<std::int64_t>("n_neg", {B});
        error = add<std::int64_t>("error", {B});
        if (gram_stats) {
            g_mu_max = add<double>("gram_mu_max", {B});
            g_mu_min = add<double>("gram_mu_min", {B});
            g_deviation = add<double>("gram_deviation", {B});
            g_offdiag_ratio = add<double>("gram_offdiag_ratio", {B});
            g_max_offdiag = add<double>("gram_max_offdiag", {B});
            g_min_diag = add<double>("gram_min_diag", {B});
            label_ratio = add<double>("label_ratio", {B});
        }
    }

    // The statistics with the trial's extreme eigenvalues (extreme_eigenvalues of sweep_gram.hpp:
    // no second eigensolver per trial).
    void store_gram(Index b, const ConstMatrixRef& K, const ConstVectorRef& y, double norm1,
                    const GramTrialResult& r) const {
        if (g_mu_max == nullptr) return;
        const GramStatistics g = gram_statistics(K, norm1, r.mu1, r.mun);
        g_mu_max[b] = g.mu_max;
        g_mu_min[b] = g.mu_min;
        g_deviation[b] = g.deviation;
        g_offdiag_ratio[b] = g.offdiag_ratio;
        g_max_offdiag[b] = g.max_offdiag;
        g_min_diag[b] = g.min_diag;
        const double ymin = y.cwiseAbs().minCoeff(), ymax = y.cwiseAbs().maxCoeff();
        label_ratio[b] = ymin > 0 ? ymax / ymin : std::numeric_limits<double>::infinity();
    }

    void store(Index b, const GramTrialResult& r) const {
        loss[b] = r.run.loss;
        grad_norm[b] = r.run.grad_norm;
        eta[b] = r.eta;
        gap[b] = r.gap;
        gap_normalized[b] = r.gap_normalized;
        certificate[b] = r.certificate;
        mu1[b] = r.mu1;
        cond[b] = r.cond;
        nit[b] = r.run.nit;
        pattern_stable_step[b] = r.run.pattern_stable_step;
        status[b] = static_cast<std::int64_t>(r.run.status);
        n_pos[b] = r.n_pos;
        n_neg[b] = r.n_neg;
        error[b] = static_cast<std::int64_t>(r.error);
    }

private:
    template <class T>
    T* add(const char* name, std::vector<py::ssize_t> shape) {
        CArray<T> a(shape);
        arrays[name] = a;
        return a.mutable_data();
    }
};

void bind_gram_trial_settings(py::module_& m) {
    const GramTrialSettings d;
    py::class_<GramTrialSettings>(m, "GramTrialSettings",
                                  "Settings of one Gram-mode sweep trial (relucore/sweep/sweep_gram.hpp); zero or a "
                                  "negative value asks for the default rule named on the field.")
        .def(py::init([](double sign, double eps, double C_alpha, double eta, double tol, std::int64_t max_steps,
                         double max_condition, bool minnorm, double norm1) {
                 GramTrialSettings st;
                 st.sign = sign;
                 st.eps = eps;
                 st.C_alpha = C_alpha;
                 st.eta = eta;
                 st.tol = tol;
                 st.max_steps = max_steps;
                 st.max_condition = max_condition;
                 st.minnorm = minnorm;
                 st.norm1 = norm1;
                 return st;
             }),
             py::kw_only(), py::arg("sign") = d.sign, py::arg("eps") = d.eps, py::arg("C_alpha") = d.C_alpha,
             py::arg("eta") = d.eta, py::arg("tol") = d.tol, py::arg("max_steps") = d.max_steps,
             py::arg("max_condition") = d.max_condition, py::arg("minnorm") = d.minnorm, py::arg("norm1") = d.norm1)
        .def_readwrite("sign", &GramTrialSettings::sign, "outer weight s of the neuron")
        .def_readwrite("eps", &GramTrialSettings::eps, "positive-init offset; 0: y_min / (C_alpha m)")
        .def_readwrite("C_alpha", &GramTrialSettings::C_alpha, "C_alpha of the default eps")
        .def_readwrite("eta", &GramTrialSettings::eta, "step; 0: the default 1 / (s^2 mu_1(K))")
        .def_readwrite("tol", &GramTrialSettings::tol, "gradient tolerance; < 0: 1e-12 sqrt(mu_1) ||y||")
        .def_readwrite("max_steps", &GramTrialSettings::max_steps, "GD step limit")
        .def_readwrite("max_condition", &GramTrialSettings::max_condition, "largest cond(K) accepted")
        .def_readwrite("minnorm", &GramTrialSettings::minnorm, "solve for w* and the gap")
        .def_readwrite("norm1", &GramTrialSettings::norm1, "||lambda||_1, for the normalised gap")
        .def("__repr__", [](const GramTrialSettings& st) {
            return "GramTrialSettings(sign=" + py::repr(py::float_(st.sign)).cast<std::string>() +
                   ", eps=" + py::repr(py::float_(st.eps)).cast<std::string>() +
                   ", eta=" + py::repr(py::float_(st.eta)).cast<std::string>() +
                   ", tol=" + py::repr(py::float_(st.tol)).cast<std::string>() +
                   ", max_steps=" + std::to_string(st.max_steps) + ", minnorm=" + (st.minnorm ? "True" : "False") +
                   ", norm1=" + py::repr(py::float_(st.norm1)).cast<std::string>() + ")";
        });
}

}  // namespace

static void bind_seeds_and_sampler(py::module_& m) {
    m.def(
        "seed_keys",
        [](const CArray<std::uint32_t>& entropy, const CArray<std::uint32_t>& prefix,
           const CArray<std::int64_t>& trials, CArray<std::uint64_t> keys) {
            require_shape(entropy, "entropy", {-1});
            require_shape(prefix, "prefix", {-1});
            require_shape(trials, "trials", {-1});
            const Index B = trials.shape(0);
            require_shape(keys, "keys", {B});
            const int ne = static_cast<int>(entropy.shape(0)), np_ = static_cast<int>(prefix.shape(0));
            std::vector<std::uint32_t> spawn(prefix.data(), prefix.data() + np_);
            for (Index b = 0; b < B; ++b) {
                const std::int64_t t = trials.data()[b];
                if (t < 0) throw py::value_error("trial indices must be non-negative");
                spawn.resize(static_cast<size_t>(np_));
                const auto u = static_cast<std::uint64_t>(t);
                spawn.push_back(static_cast<std::uint32_t>(u & 0xffffffffu));
                if (u >> 32) spawn.push_back(static_cast<std::uint32_t>(u >> 32));
                keys.mutable_data()[b] =
                    seed_sequence_philox_key(entropy.data(), ne, spawn.data(), static_cast<int>(spawn.size()))[0];
            }
        },
        py::arg("entropy"), py::arg("prefix"), py::arg("trials"), py::arg("keys").noconvert(),
        "keys[b] = SeedSequence(entropy, spawn_key=(*prefix, trials[b])).generate_state(1, uint64)[0] (the "
        "counter-generator key of a Gram-mode trial); entropy and prefix as little-endian uint32 words.");

    m.def(
        "sample_gram_batch",
        [](const CArray<std::uint64_t>& keys, Index n, const CArray<double>& values, const CArray<std::int64_t>& counts,
           int labels, double lo, double hi, CArray<double> K, CArray<double> y, int n_threads) {
            require_shape(keys, "keys", {-1});
            const Index B = keys.shape(0);
            require_shape(K, "K", {B, n, n});
            require_shape(y, "y", {B, n});
            const GramSampleSpec spec = make_spec(n, values, counts, labels, lo, hi);
            double *kp = K.mutable_data(), *yp = y.mutable_data();
            const std::uint64_t* key = keys.data();
            const CounterPath path = counter_path();
            batch_without_gil(
                B, n_threads, is_long(static_cast<double>(B) * n * n * n * spec.values.size()), [&](Index b) {
                    GramSampleWork work;
                    sample_gram_bartlett(spec, key[b], {kp + b * n * n, n * n}, {yp + b * n, n}, work, path);
                });
        },
        py::arg("keys").noconvert(), py::arg("n"), py::arg("values"), py::arg("counts"), py::arg("labels"),
        py::arg("lo"), py::arg("hi"), py::arg("K").noconvert(), py::arg("y").noconvert(), py::arg("n_threads") = 1,
        "K[b], y[b]: the Bartlett construction of sum_g values[g] Wishart(counts[g], I_n) and labels, from the "
        "counter-generator streams of key keys[b] (uint64; layout in relucore/random/gram_sample.hpp).");
}

static void bind_minnorm_and_gram_trials(py::module_& m) {
    m.def(
        "minnorm1_batch",
        [](const CArray<double>& K, const CArray<double>& y, double sign, CArray<double> z, CArray<double> f,
           CArray<std::int32_t> info, int n_threads) {
            require_shape(K, "K", {-1, -1, -1});
            const Index B = K.shape(0), n = K.shape(1);
            require_shape(K, "K", {B, n, n});
            require_shape(y, "y", {B, n});
            require_shape(z, "z", {B, n});
            require_shape(f, "f", {B, 5});
            require_shape(info, "info", {B, 4});
            const double *kp = K.data(), *yp = y.data();
            double *zp = z.mutable_data(), *fp = f.mutable_data();
            std::int32_t* ip = info.mutable_data();
            batch_without_gil(B, n_threads, is_long(static_cast<double>(B) * n * n * n), [&](Index b) {
                const MinNorm1Result r =
                    minnorm_single_gram(ConstMatrixMap(kp + b * n * n, n, n), ConstVectorMap(yp + b * n, n), sign);
                VectorMap(zp + b * n, n) = r.z;
                const double fields[5] = {r.objective, r.stationarity, r.primal_feasibility, r.dual_feasibility,
                                          r.complementarity};
                std::copy(fields, fields + 5, fp + 5 * b);
                const std::int32_t counts[4] = {static_cast<std::int32_t>(r.status), r.block_iterations,
                                                r.primal_iterations, r.used_fallback ? 1 : 0};
                std::copy(counts, counts + 4, ip + 4 * b);
            });
        },
        py::arg("K"), py::arg("y"), py::arg("sign"), py::arg("z").noconvert(), py::arg("f").noconvert(),
        py::arg("info").noconvert(), py::arg("n_threads") = 1,
        "One-neuron minimum-norm duals of B problems: z (B, n); f = objective and the four KKT residuals; "
        "info = status, block pivots, primal steps, fallback used.");

    bind_gram_trial_settings(m);

    m.def(
        "sweep_gram_batch",
        [](const CArray<std::uint64_t>& keys, Index n, const CArray<double>& values, const CArray<std::int64_t>& counts,
           int labels, double lo, double hi, const GramTrialSettings& settings, int n_threads, bool keep_data,
           bool gram_stats) {
            require_shape(keys, "keys", {-1});
            const Index B = keys.shape(0);
            const GramSampleSpec spec = make_spec(n, values, counts, labels, lo, hi);
            GramTrialOutputs out(B, n, keep_data, gram_stats);
            const std::uint64_t* key = keys.data();
            // The trial's SIMD cap for the sampler too (GramTrialSettings::simd_level).
            const CounterPath path = counter_path_for(std::min(simd::level(), settings.simd_level));
            run_without_gil(
                [&](const std::atomic<bool>*) {
                    parallel_for(B, n_threads, [&](Index b) {
                        thread_local GramSampleWork work;
                        thread_local std::vector<double> scratch;
                        double *Kb = out.K, *yb = out.y;
                        if (keep_data) {
                            Kb += b * n * n;
                            yb += b * n;
                        } else {
                            scratch.resize(static_cast<size_t>(n * n + n));
                            Kb = scratch.data();
                            yb = Kb + n * n;
                        }
                        sample_gram_bartlett(spec, key[b], {Kb, n * n}, {yb, n}, work, path);
                        const ConstMatrixMap Km(Kb, n, n);
                        const ConstVectorMap ym(yb, n);
                        const GramTrialResult r = gram_trial(Km, ym, settings);
                        out.store(b, r);
                        out.store_gram(b, Km, ym, settings.norm1, r);
                    });
                },
                is_long(static_cast<double>(B) * (n * n * n + static_cast<double>(settings.max_steps) * n * n)));
            return out.arrays;
        },
        py::arg("keys").noconvert(), py::kw_only(), py::arg("n"), py::arg("values"), py::arg("counts"),
        py::arg("labels"), py::arg("lo"), py::arg("hi"), py::arg("settings"), py::arg("n_threads") = 1,
        py::arg("keep_data") = true, py::arg("gram_stats") = false,
        "Whole Gram-mode trials (relucore/sweep/sweep_gram.hpp) on the Bartlett sample of each key (values, counts, "
        "labels, lo, hi as for sample_gram_batch). Returns a dict of numpy arrays: K (B, n, n) and y (B, n) when "
        "keep_data, then "
        "per trial (B,) the float64 fields loss, grad_norm, eta, gap, gap_normalized, certificate (largest KKT "
        "residual of w*), mu1, cond and the int64 fields nit, pattern_stable_step, status, n_pos, n_neg, error "
        "(a GramTrialError code, 0: none); with gram_stats also gram_mu_max, gram_mu_min, gram_deviation, "
        "gram_offdiag_ratio, gram_max_offdiag, gram_min_diag (gram_stats_batch's statistics with the trial's extreme "
        "eigenvalues mu1 and mu_n, norm1 of the settings) and "
        "label_ratio = max|y| / min|y|.");
}

static void bind_gram_trial_refusal(py::module_& m) {
    m.def(
        "gram_trial_step_refusal",
        [](double eta, double sign, double mu1, Index n) {
            // The step refusal reads only n, the outer weights, mu_1 and the given eta.
            const Vector y = Vector::Zero(n), outer = Vector::Constant(1, sign);
            const ConstVectorRef yr(y), outer_r(outer);
            RefusedProblem p;
            p.y = &yr;
            p.outer = &outer_r;
            p.eta = eta;
            p.mu1 = mu1;
            PrepareRequest req;
            req.gram_given = true;
            return refusal_message(StartCheck::step_invalid, p, req);
        },
        py::kw_only(), py::arg("eta"), py::arg("sign"), py::arg("mu1"), py::arg("n"),
        "train's error text (relucore/gd/refusal.hpp) for a Gram-mode trial that start_step() refused "
        "(GramTrialError.step_invalid): eta the given step, sign the outer weight, mu1 = mu_1(K), n examples.");
}

void bind_sweep(py::module_& m) {
    m.attr("gram_small_groups_stream") = py::int_(gram_streams::small_groups);
    bind_seeds_and_sampler(m);
    bind_minnorm_and_gram_trials(m);
    bind_gram_trial_refusal(m);
}
