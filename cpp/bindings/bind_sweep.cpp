// Batched kernels of relucore.sweep's Gram-mode fast path: per-trial seeds,
// the Bartlett sampler, the one-neuron minimum-norm QP and whole trials.
// Settings cross as the bound struct GramTrialSettings; outputs come back as the bound GramTrialOutput
// (relucore.sweeps.gram_trial reads its fields; the names are listed in relucore.sweeps.columns).
#include "common.hpp"

#include <pybind11/stl.h>

#include "relucore/core/parallel.hpp"
#include "relucore/minnorm/minnorm_qp.hpp"
#include "relucore/random/gram_sample.hpp"
#include "relucore/random/rng.hpp"
#include "relucore/stats/gram_stats.hpp"
#include "relucore/sweep/sweep_gram.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
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

// What sweep_gram_batch returns (bound read-only as _core.GramTrialOutput): one numpy array per
// output, None for the outputs not asked for, and the error text of each trial.
struct GramTrialOutput {
    std::optional<CArray<double>> K, y;
    CArray<double> loss, grad_norm, eta, gap, gap_normalized, certificate, mu1, cond;
    CArray<std::int64_t> nit, pattern_stable_step, status, n_pos, n_neg, error;
    std::optional<CArray<double>> gram_mu_max, gram_mu_min, gram_deviation, gram_offdiag_ratio, gram_max_offdiag,
        gram_min_diag, label_ratio;
    py::list error_text;
};

// Fills a GramTrialOutput trial by trial (the arrays are allocated with the GIL held, then written
// without it; the error texts wait in C++ strings until the GIL is back).
struct GramTrialOutputs {
    GramTrialOutput result;
    double *K, *y, *loss, *grad_norm, *eta, *gap, *gap_normalized, *certificate, *mu1, *cond;
    std::int64_t *nit, *pattern_stable_step, *status, *n_pos, *n_neg, *error;
    // with gram_stats: gram_statistics (stats/gram_stats.hpp) of each K and max|y| / min|y| (inf when min is 0)
    double *g_mu_max = nullptr, *g_mu_min = nullptr, *g_deviation = nullptr, *g_offdiag_ratio = nullptr,
           *g_max_offdiag = nullptr, *g_min_diag = nullptr, *label_ratio = nullptr;
    std::vector<std::string> texts;

    // keep_data: also K (B, n, n) and y (B, n); otherwise each trial's K and y live in
    // per-thread scratch and only the per-trial fields come back.
    GramTrialOutputs(Index B, Index n, bool keep_data, bool gram_stats) : texts(static_cast<size_t>(B)) {
        GramTrialOutput& r = result;
        K = keep_data ? add<double>(r.K, {B, n, n}) : nullptr;
        y = keep_data ? add<double>(r.y, {B, n}) : nullptr;
        loss = add<double>(r.loss, {B});
        grad_norm = add<double>(r.grad_norm, {B});
        eta = add<double>(r.eta, {B});
        gap = add<double>(r.gap, {B});
        gap_normalized = add<double>(r.gap_normalized, {B});
        certificate = add<double>(r.certificate, {B});
        mu1 = add<double>(r.mu1, {B});
        cond = add<double>(r.cond, {B});
        nit = add<std::int64_t>(r.nit, {B});
        pattern_stable_step = add<std::int64_t>(r.pattern_stable_step, {B});
        status = add<std::int64_t>(r.status, {B});
        n_pos = add<std::int64_t>(r.n_pos, {B});
        n_neg = add<std::int64_t>(r.n_neg, {B});
        error = add<std::int64_t>(r.error, {B});
        if (gram_stats) {
            g_mu_max = add<double>(r.gram_mu_max, {B});
            g_mu_min = add<double>(r.gram_mu_min, {B});
            g_deviation = add<double>(r.gram_deviation, {B});
            g_offdiag_ratio = add<double>(r.gram_offdiag_ratio, {B});
            g_max_offdiag = add<double>(r.gram_max_offdiag, {B});
            g_min_diag = add<double>(r.gram_min_diag, {B});
            label_ratio = add<double>(r.label_ratio, {B});
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

    void store(Index b, const GramTrialResult& r) {
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
        if (r.error != GramTrialError::none) texts[static_cast<size_t>(b)] = gram_trial_error_text(r);
    }

    // The result, with the error texts as Python strings (the GIL held).
    GramTrialOutput finish() {
        const py::str empty("");
        py::list texts_py(texts.size());
        for (size_t b = 0; b < texts.size(); ++b)
            texts_py[b] = texts[b].empty() ? py::object(empty) : py::object(py::str(texts[b]));
        result.error_text = std::move(texts_py);
        return std::move(result);
    }

private:
    template <class T>
    static T* add(CArray<T>& field, std::vector<py::ssize_t> shape) {
        field = CArray<T>(shape);
        return field.mutable_data();
    }
    template <class T>
    static T* add(std::optional<CArray<T>>& field, std::vector<py::ssize_t> shape) {
        field.emplace(shape);
        return field->mutable_data();
    }
};

void bind_gram_trial_output(py::module_& m) {
    using O = GramTrialOutput;
    py::class_<O>(m, "GramTrialOutput",
                  "What _core.sweep_gram_batch returns: per trial (length B) arrays, read-only attributes; None "
                  "for the outputs not asked for (K and y without keep_data, the gram_* fields and label_ratio "
                  "without gram_stats).")
        .def_readonly("K", &O::K, "float64 (B, n, n): each trial's K (keep_data), else None")
        .def_readonly("y", &O::y, "float64 (B, n): each trial's labels (keep_data), else None")
        .def_readonly("loss", &O::loss, "float64: final loss of the run")
        .def_readonly("grad_norm", &O::grad_norm, "float64: final gradient norm")
        .def_readonly("eta", &O::eta, "float64: the step used")
        .def_readonly("gap", &O::gap, "float64: ||w_inf - w*|| (NaN without minnorm)")
        .def_readonly("gap_normalized", &O::gap_normalized, "float64: the gap normalised as in Theorem 2 (or NaN)")
        .def_readonly("certificate", &O::certificate, "float64: largest KKT residual of w* (NaN without minnorm)")
        .def_readonly("mu1", &O::mu1, "float64: mu_1(K), the largest eigenvalue")
        .def_readonly("cond", &O::cond, "float64: cond(K) = mu_1 / mu_n")
        .def_readonly("nit", &O::nit, "int64: GD steps taken")
        .def_readonly("pattern_stable_step", &O::pattern_stable_step, "int64: step after which the pattern held")
        .def_readonly("status", &O::status, "int64: a relucore.Status value of the run")
        .def_readonly("n_pos", &O::n_pos, "int64: labels > 0")
        .def_readonly("n_neg", &O::n_neg, "int64: labels <= 0")
        .def_readonly("error", &O::error, "int64: a GramTrialError code (0: none)")
        .def_readonly("gram_mu_max", &O::gram_mu_max, "float64 (gram_stats): mu_1(K)")
        .def_readonly("gram_mu_min", &O::gram_mu_min, "float64 (gram_stats): mu_n(K)")
        .def_readonly("gram_deviation", &O::gram_deviation, "float64 (gram_stats): ||K / norm1 - I||_2")
        .def_readonly("gram_offdiag_ratio", &O::gram_offdiag_ratio, "float64 (gram_stats): max offdiag / min diag")
        .def_readonly("gram_max_offdiag", &O::gram_max_offdiag, "float64 (gram_stats): max |K_ij|, i != j")
        .def_readonly("gram_min_diag", &O::gram_min_diag, "float64 (gram_stats): min K_ii")
        .def_readonly("label_ratio", &O::label_ratio, "float64 (gram_stats): max|y| / min|y| (inf when min is 0)")
        .def_readonly("error_text", &O::error_text,
                      "list of B str: the sweep's error column of each trial, '<exception>: <text>' in the words "
                      "of the general path for the same trial (GramTrialResult::message), '' without an error");
}

void bind_gram_trial_error(py::module_& m) {
    py::native_enum<GramTrialError> e(m, "GramTrialError", "enum.IntEnum",
                                      "Why a Gram-mode sweep trial returned early (relucore/sweep/sweep_gram.hpp), "
                                      "with the Python exception the general path raises for it and its meaning.");
    for (const GramTrialErrorInfo& row : gram_trial_error_table) e.value(row.name, row.error);
    e.finalize();
    py::object cls = m.attr("GramTrialError");
    py::object property = py::module_::import("builtins").attr("property");
    cls.attr("exception") =
        property(py::cpp_function([](GramTrialError c) { return gram_trial_error_info(c).exception; }), py::none(),
                 py::none(), "The name of the exception the general path raises ('' for none).");
    cls.attr("meaning") = property(py::cpp_function([](GramTrialError c) { return gram_trial_error_info(c).meaning; }),
                                   py::none(), py::none(), "What the code means, in words.");
}

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
    bind_gram_trial_output(m);
    bind_gram_trial_error(m);

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
            return out.finish();
        },
        py::arg("keys").noconvert(), py::kw_only(), py::arg("n"), py::arg("values"), py::arg("counts"),
        py::arg("labels"), py::arg("lo"), py::arg("hi"), py::arg("settings"), py::arg("n_threads") = 1,
        py::arg("keep_data") = true, py::arg("gram_stats") = false,
        "Whole Gram-mode trials (relucore/sweep/sweep_gram.hpp) on the Bartlett sample of each key (values, counts, "
        "labels, lo, hi as for sample_gram_batch). Returns a GramTrialOutput: K (B, n, n) and y (B, n) when "
        "keep_data, the per-trial outputs, with gram_stats also the gram_* statistics (gram_stats_batch's, with "
        "the trial's extreme eigenvalues mu1 and mu_n and norm1 of the settings) and label_ratio, and the error "
        "text of each trial.");
}

void bind_sweep(py::module_& m) {
    m.attr("gram_small_groups_stream") = py::int_(gram_streams::small_groups);
    bind_seeds_and_sampler(m);
    bind_minnorm_and_gram_trials(m);
}
