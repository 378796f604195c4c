// The mean-field weight-space engine (relucore/meanfield/weight_gd.hpp) and the
// counter-based generator behind it (relucore/random/rng.hpp). Arrays are allocated
// and validated by relucore.meanfield; here they are only viewed.
#include "blas_registry.hpp"
#include "common.hpp"

#include <pybind11/stl.h>

#include "relucore/meanfield/weight_gd.hpp"
#include "relucore/random/rng.hpp"

#include <optional>
#include <stdexcept>
#include <string>

namespace py = pybind11;
using namespace relucore;
using namespace relucore::bindings;

namespace {

template <class T>
T* optional_data(std::optional<CArray<T>>& a) {
    return a ? a->mutable_data() : nullptr;
}

RngStream to_stream(int s) {
    if (s < 0 || s > 2) throw py::value_error("stream must be 0 (noise), 1 (sample) or 2 (init)");
    return static_cast<RngStream>(s);
}

}  // namespace

static void bind_meanfield_settings(py::module_& m) {
    py::native_enum<OutputScale>(m, "OutputScale", "enum.IntEnum")
        .value("inv_n", OutputScale::inv_n)
        .value("inv_sqrt_n", OutputScale::inv_sqrt_n)
        .value("one", OutputScale::one)
        .value("given", OutputScale::given)
        .finalize();

    py::class_<WeightGDSettings>(m, "WeightGDSettings",
                                 "Settings of a mean-field SGD run (see relucore/meanfield/weight_gd.hpp).")
        .def(py::init<>())
        .def_readwrite("step", &WeightGDSettings::step)
        .def_readwrite("weight_decay", &WeightGDSettings::weight_decay)
        .def_readwrite("temperature", &WeightGDSettings::temperature)
        .def_readwrite("scale", &WeightGDSettings::scale)
        .def_readwrite("kappa", &WeightGDSettings::kappa)
        .def_readwrite("bias", &WeightGDSettings::bias)
        .def_readwrite("train_outer", &WeightGDSettings::train_outer)
        .def_readwrite("batch_size", &WeightGDSettings::batch_size)
        .def_readwrite("reduction", &WeightGDSettings::reduction)
        .def_readwrite("record_every", &WeightGDSettings::record_every)
        .def_readwrite("n_threads", &WeightGDSettings::n_threads)
        .def_readwrite("divergence_bound", &WeightGDSettings::divergence_bound)
        .def_property(
            "key", [](const WeightGDSettings& s) { return py::make_tuple(s.key[0], s.key[1]); },
            [](WeightGDSettings& s, std::pair<std::uint64_t, std::uint64_t> k) { s.key = Key2{k.first, k.second}; })
        .def("validate", &WeightGDSettings::validate);
}

// The neurons of a packed N x P theta (columns a, w_1..w_d[, b], d the columns of X) by name.
static WeightGDStart start_of(ConstMatrixRef theta, Index d, bool bias) {
    if (theta.cols() != d + (bias ? 2 : 1))
        throw std::invalid_argument("theta0 must have d + 2 columns (d + 1 without bias)");
    WeightGDStart start;
    start.a = theta.col(0);
    start.w = theta.middleCols(1, d);
    if (bias) start.b = theta.col(d + 1);
    return start;
}

// What a weight_gd_run call returns: the engine's run summary and the records it wrote.
struct WeightGDRunOutput : WeightGDSummary {
    std::int64_t n_records = 0;  // records written into the history arrays by this call
};

static void bind_meanfield_runs(py::module_& m) {
    py::class_<WeightGDRunOutput>(m, "WeightGDRunOutput",
                                  "How a weight_gd_run call ended (WeightGDSummary in relucore/meanfield/settings.hpp, "
                                  "plus the records written); read-only.")
        .def_readonly("status", &WeightGDSummary::status,
                      "A relucore.Status: completed (all requested steps ran), diverged or cancelled.")
        .def_readonly("nit", &WeightGDSummary::nit, "Global step count at the end.")
        .def_readonly("objective", &WeightGDSummary::objective, "The objective L at the final state.")
        .def_readonly("n_records", &WeightGDRunOutput::n_records,
                      "Records written into the history arrays by this call.");

    m.def(
        "weight_gd_run",
        [](const CArray<double>& X, const CArray<double>& y, CArray<double> theta, const WeightGDSettings& settings,
           std::int64_t start, std::int64_t iters, bool record_final, std::optional<CArray<std::int64_t>> steps,
           std::optional<CArray<double>> objective, std::optional<CArray<std::int64_t>> track,
           std::optional<CArray<double>> trajectories, std::optional<CArray<std::int64_t>> snapshot_steps,
           std::optional<CArray<double>> snapshots, std::optional<CArray<std::uint8_t>> snapshot_taken,
           std::optional<CArray<std::int64_t>> samples, std::optional<CArray<double>> output_bias,
           std::optional<CArray<double>> sample_weight) {
            require_shape(X, "X", {-1, -1});
            const Index M = X.shape(0), d = X.shape(1);
            require_shape(y, "y", {M});
            require_shape(theta, "theta", {-1, -1});
            const Index N = theta.shape(0), P = theta.shape(1);
            settings.validate();
            WeightGDRecord rec;
            py::ssize_t R = 0;
            if (steps) {
                require_shape(*steps, "steps", {-1});
                R = steps->shape(0);
            }
            if (objective) require_shape(*objective, "objective", {R});
            if (track) {
                require_shape(*track, "track", {-1});
                rec.n_track = track->shape(0);
                for (Index q = 0; q < rec.n_track; ++q)
                    if (track->data()[q] < 0 || track->data()[q] >= N)
                        throw py::value_error("track index out of range");
                rec.track = track->data();
            }
            if (trajectories) require_shape(*trajectories, "trajectories", {R, rec.n_track, P});
            if (snapshot_steps) {
                require_shape(*snapshot_steps, "snapshot_steps", {-1});
                rec.n_snapshots = snapshot_steps->shape(0);
                rec.snapshot_steps = snapshot_steps->data();
                if (snapshots) require_shape(*snapshots, "snapshots", {rec.n_snapshots, N, P});
                if (snapshot_taken) require_shape(*snapshot_taken, "snapshot_taken", {rec.n_snapshots});
            }
            if (samples) require_shape(*samples, "samples", {iters, settings.batch_size});
            if (output_bias) require_shape(*output_bias, "output_bias", {1});
            double* obp = output_bias ? output_bias->mutable_data() : nullptr;
            if (sample_weight) require_shape(*sample_weight, "sample_weight", {M});
            rec.capacity = R;
            rec.steps = optional_data(steps);
            rec.objective = optional_data(objective);
            rec.trajectories = optional_data(trajectories);
            rec.snapshots = optional_data(snapshots);
            rec.snapshot_taken = optional_data(snapshot_taken);
            const std::int64_t* fixed = samples ? samples->data() : nullptr;
            WeightGDSummary summary;
            double* tp = theta.mutable_data();
            const blas::SingleThreaded blas_threads = blas_for_call();  // the batch steps' products
            run_without_gil(
                [&](const std::atomic<bool>* cancel) {
                    WeightGDSettings s = settings;
                    s.cancel = cancel;
                    MatrixMap th(tp, N, P);
                    WeightGD engine(ConstMatrixMap(X.data(), M, d), ConstVectorMap(y.data(), M),
                                    start_of(th, d, s.bias), s);
                    if (obp != nullptr) engine.set_output_bias(*obp);
                    if (sample_weight) engine.set_sample_weights(ConstVectorMap(sample_weight->data(), M));
                    summary = engine.run(start, iters, record_final, &rec, fixed);
                    if (obp != nullptr) *obp = engine.output_bias();
                    engine.theta(th);
                },
                static_cast<double>(iters) * N * (d + 2) * settings.batch_size > 2e7);
            return WeightGDRunOutput{summary, rec.count};
        },
        py::arg("X").noconvert(), py::arg("y").noconvert(), py::arg("theta").noconvert(), py::arg("settings"),
        py::arg("start"), py::arg("iters"), py::arg("record_final"), py::arg("steps").noconvert() = py::none(),
        py::arg("objective").noconvert() = py::none(), py::arg("track").noconvert() = py::none(),
        py::arg("trajectories").noconvert() = py::none(), py::arg("snapshot_steps").noconvert() = py::none(),
        py::arg("snapshots").noconvert() = py::none(), py::arg("snapshot_taken").noconvert() = py::none(),
        py::arg("samples").noconvert() = py::none(), py::arg("output_bias").noconvert() = py::none(),
        py::arg("sample_weight").noconvert() = py::none(),
        "Runs steps start .. start+iters-1 of mean-field SGD; theta (N, P) is updated in place, and output_bias "
        "(1,) when given (the network's output bias, WeightGD::set_output_bias); sample_weight (M,) weighs the samples "
        "(WeightGD::set_sample_weights). Returns a WeightGDRunOutput.");

    m.def(
        "weight_gd_init",
        [](Index N, Index P, double scale, std::uint64_t key0, std::uint64_t key1, bool fixed_outer) {
            if (N < 1 || P < 2) throw py::value_error("N must be >= 1 and P >= 2");
            CArray<double> theta({static_cast<py::ssize_t>(N), static_cast<py::ssize_t>(P)});
            weight_gd_init(MatrixMap(theta.mutable_data(), N, P), scale, Key2{key0, key1}, fixed_outer);
            return theta;
        },
        py::arg("N"), py::arg("P"), py::arg("scale"), py::arg("key0"), py::arg("key1"), py::arg("fixed_outer"),
        "theta_i ~ N(0, scale^2 I) from the generator's init stream (outer weights +-1 when fixed_outer).");
}

static void bind_meanfield_random_streams(py::module_& m) {
    m.def(
        "philox4x64",
        [](std::array<std::uint64_t, 4> counter, std::array<std::uint64_t, 2> key) {
            const Counter4 c = philox4x64_10(counter, key);
            CArray<std::uint64_t> out(4);
            for (int q = 0; q < 4; ++q) out.mutable_data()[q] = c[static_cast<size_t>(q)];
            return out;
        },
        py::arg("counter"), py::arg("key"), "The Philox4x64-10 block of a counter under a key.");

    m.def(
        "rng_normals",
        [](std::uint64_t key0, std::uint64_t key1, std::uint64_t step, std::uint64_t neuron, int stream, int count) {
            if (count < 0) throw py::value_error("count must be >= 0");
            CArray<double> out(count);
            CounterRng(key0, key1).normals(step, neuron, to_stream(stream), out.mutable_data(), count);
            return out;
        },
        py::arg("key0"), py::arg("key1"), py::arg("step"), py::arg("neuron"), py::arg("stream"), py::arg("count"),
        "The first count standard normals of (step, neuron, stream) as the engine draws them.");

    m.def(
        "rng_uniforms",
        [](std::uint64_t key0, std::uint64_t key1, std::uint64_t step, std::uint64_t neuron, int stream, int count) {
            if (count < 0) throw py::value_error("count must be >= 0");
            CArray<double> out(count);
            const CounterRng rng(key0, key1);
            for (int q = 0; q < count; ++q)
                out.mutable_data()[q] = rng.uniform(step, neuron, to_stream(stream), static_cast<std::uint64_t>(q));
            return out;
        },
        py::arg("key0"), py::arg("key1"), py::arg("step"), py::arg("neuron"), py::arg("stream"), py::arg("count"),
        "The first count uniforms in [0, 1) of (step, neuron, stream) as the engine draws them.");
}

void bind_meanfield(py::module_& m) {
    bind_meanfield_settings(m);
    bind_meanfield_runs(m);
    bind_meanfield_random_streams(m);
}
