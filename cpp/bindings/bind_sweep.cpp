// Batched kernels of relucore.sweep's Gram-mode fast path: per-trial seeds,
// the Bartlett sampler, the one-neuron minimum-norm QP and whole trials.
// Arrays are validated and allocated by the Python layer (relucore._sweep_fast).
#include "common.hpp"

#include "relucore/core/parallel.hpp"
#include "relucore/minnorm/minnorm_qp.hpp"
#include "relucore/random/gram_sample.hpp"
#include "relucore/random/rng.hpp"
#include "relucore/sweep/sweep_gram.hpp"

#include <cstdint>
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

Key2 key_of(const CArray<std::uint64_t>& keys, Index b) { return Key2{keys.data()[2 * b], keys.data()[2 * b + 1]}; }

// Work above which a call polls for Ctrl-C (see run_without_gil).
bool is_long(double flops) { return flops > 2e7; }

}  // namespace

void bind_sweep(py::module_& m) {
    m.def(
        "seed_keys",
        [](const CArray<std::uint32_t>& entropy, const CArray<std::uint32_t>& prefix, const CArray<std::int64_t>& trials,
           CArray<std::uint64_t> keys) {
            require_shape(entropy, "entropy", {-1});
            require_shape(prefix, "prefix", {-1});
            require_shape(trials, "trials", {-1});
            const Index B = trials.shape(0);
            require_shape(keys, "keys", {B, 2});
            const int ne = static_cast<int>(entropy.shape(0)), np_ = static_cast<int>(prefix.shape(0));
            std::vector<std::uint32_t> spawn(prefix.data(), prefix.data() + np_);
            for (Index b = 0; b < B; ++b) {
                const std::int64_t t = trials.data()[b];
                if (t < 0) throw py::value_error("trial indices must be non-negative");
                spawn.resize(static_cast<size_t>(np_));
                const auto u = static_cast<std::uint64_t>(t);
                spawn.push_back(static_cast<std::uint32_t>(u & 0xffffffffu));
                if (u >> 32) spawn.push_back(static_cast<std::uint32_t>(u >> 32));
                const Key2 k = seed_sequence_philox_key(entropy.data(), ne, spawn.data(), static_cast<int>(spawn.size()));
                keys.mutable_data()[2 * b] = k[0];
                keys.mutable_data()[2 * b + 1] = k[1];
            }
        },
        py::arg("entropy"), py::arg("prefix"), py::arg("trials"), py::arg("keys").noconvert(),
        "keys[b] = SeedSequence(entropy, spawn_key=(*prefix, trials[b])).generate_state(2, uint64); entropy and "
        "prefix as little-endian uint32 words.");

    m.def(
        "sample_gram_batch",
        [](const CArray<std::uint64_t>& keys, Index n, const CArray<double>& values, const CArray<std::int64_t>& counts,
           int labels, double lo, double hi, CArray<double> K, CArray<double> y, int n_threads) {
            require_shape(keys, "keys", {-1, 2});
            const Index B = keys.shape(0);
            require_shape(K, "K", {B, n, n});
            require_shape(y, "y", {B, n});
            const GramSampleSpec spec = make_spec(n, values, counts, labels, lo, hi);
            double *kp = K.mutable_data(), *yp = y.mutable_data();
            run_without_gil(
                [&](const std::atomic<bool>*) {
                    parallel_for(B, n_threads, [&](Index b) {
                        GramSampleWork work;
                        PhiloxStream s(key_of(keys, b));
                        sample_gram_bartlett(spec, s, kp + b * n * n, yp + b * n, work);
                    });
                },
                is_long(static_cast<double>(B) * n * n * n * spec.values.size()));
        },
        py::arg("keys").noconvert(), py::arg("n"), py::arg("values"), py::arg("counts"), py::arg("labels"),
        py::arg("lo"), py::arg("hi"), py::arg("K").noconvert(), py::arg("y").noconvert(), py::arg("n_threads") = 1,
        "K[b], y[b]: the Bartlett construction of sum_g values[g] Wishart(counts[g], I_n) and labels, from the "
        "raw words of np.random.Philox(key=keys[b]) (relucore/random/gram_sample.hpp).");

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
            run_without_gil(
                [&](const std::atomic<bool>*) {
                    parallel_for(B, n_threads, [&](Index b) {
                        const MinNorm1Result r =
                            minnorm_single_gram(ConstMatrixMap(kp + b * n * n, n, n), ConstVectorMap(yp + b * n, n), sign);
                        VectorMap(zp + b * n, n) = r.z;
                        double* fb = fp + 5 * b;
                        fb[0] = r.objective;
                        fb[1] = r.stationarity;
                        fb[2] = r.primal_feasibility;
                        fb[3] = r.dual_feasibility;
                        fb[4] = r.complementarity;
                        std::int32_t* ib = ip + 4 * b;
                        ib[0] = r.status;
                        ib[1] = r.block_iterations;
                        ib[2] = r.primal_iterations;
                        ib[3] = r.used_fallback ? 1 : 0;
                    });
                },
                is_long(static_cast<double>(B) * n * n * n));
        },
        py::arg("K"), py::arg("y"), py::arg("sign"), py::arg("z").noconvert(), py::arg("f").noconvert(),
        py::arg("info").noconvert(), py::arg("n_threads") = 1,
        "One-neuron minimum-norm duals of B problems: z (B, n); f = objective and the four KKT residuals; "
        "info = status, block pivots, primal steps, fallback used.");

    m.def(
        "sweep_gram_batch",
        [](const CArray<std::uint64_t>& keys, Index n, const CArray<double>& values, const CArray<std::int64_t>& counts,
           int labels, double lo, double hi, double sign, double eps, double eta, double tol, std::int64_t max_steps,
           bool minnorm, double norm1, CArray<double> K, CArray<double> y, CArray<double> f,
           CArray<std::int64_t> iout, int n_threads) {
            require_shape(keys, "keys", {-1, 2});
            const Index B = keys.shape(0);
            require_shape(K, "K", {B, n, n});
            require_shape(y, "y", {B, n});
            require_shape(f, "f", {B, 8});
            require_shape(iout, "iout", {B, 6});
            const GramSampleSpec spec = make_spec(n, values, counts, labels, lo, hi);
            GramTrialSettings st;
            st.sign = sign;
            st.eps = eps;
            st.eta = eta;
            st.tol = tol;
            st.max_steps = max_steps;
            st.minnorm = minnorm;
            st.norm1 = norm1;
            double *kp = K.mutable_data(), *yp = y.mutable_data(), *fp = f.mutable_data();
            std::int64_t* ip = iout.mutable_data();
            run_without_gil(
                [&](const std::atomic<bool>*) {
                    parallel_for(B, n_threads, [&](Index b) {
                        GramSampleWork work;
                        PhiloxStream s(key_of(keys, b));
                        double* Kb = kp + b * n * n;
                        double* yb = yp + b * n;
                        sample_gram_bartlett(spec, s, Kb, yb, work);
                        const GramTrialResult r = gram_trial(ConstMatrixMap(Kb, n, n), ConstVectorMap(yb, n), st);
                        double* fb = fp + 8 * b;
                        fb[0] = r.run.loss;
                        fb[1] = r.run.grad_norm;
                        fb[2] = r.eta;
                        fb[3] = r.gap;
                        fb[4] = r.gap_normalised;
                        fb[5] = r.certificate;
                        fb[6] = r.mu1;
                        fb[7] = r.cond;
                        std::int64_t* ib = ip + 6 * b;
                        ib[0] = r.run.nit;
                        ib[1] = r.run.pattern_stable_step;
                        ib[2] = static_cast<std::int64_t>(r.run.status);
                        ib[3] = r.n_pos;
                        ib[4] = r.n_neg;
                        ib[5] = static_cast<std::int64_t>(r.error);
                    });
                },
                is_long(static_cast<double>(B) * (n * n * n + static_cast<double>(max_steps) * n * n)));
        },
        py::arg("keys").noconvert(), py::arg("n"), py::arg("values"), py::arg("counts"), py::arg("labels"),
        py::arg("lo"), py::arg("hi"), py::arg("sign"), py::arg("eps"), py::arg("eta"), py::arg("tol"),
        py::arg("max_steps"), py::arg("minnorm"), py::arg("norm1"), py::arg("K").noconvert(), py::arg("y").noconvert(),
        py::arg("f").noconvert(), py::arg("iout").noconvert(), py::arg("n_threads") = 1,
        "Whole Gram-mode trials (relucore/sweep/sweep_gram.hpp): f = loss, grad_norm, eta, gap, gap_normalised, KKT "
        "residual, mu_1, cond; iout = nit, pattern_stable_step, status, n_pos, n_neg, error code.");
}
