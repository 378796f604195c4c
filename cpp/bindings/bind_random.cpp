// Private bindings of the counter-based generator (random/counter.hpp) and the
// fused draw-and-Gram kernel (random/fused_gram.hpp), for tests and benchmarks.
#include "blas_registry.hpp"
#include "common.hpp"

#include <pybind11/stl.h>

#include "relucore/core/parallel.hpp"
#include "relucore/random/counter.hpp"
#include "relucore/random/fused_gram.hpp"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

namespace py = pybind11;
using namespace relucore;
using namespace relucore::bindings;

namespace {

CArray<double>& writable_vector(CArray<double>& out) {
    require_shape(out, "out", {-1});
    if (!out.writeable()) throw py::value_error("out: the array is read-only");
    return out;
}

template <class Fill>
void fill_vector(std::uint64_t key, std::uint64_t stream, std::uint64_t start, CArray<double>& out, Fill fill) {
    writable_vector(out);
    const std::int64_t count = static_cast<std::int64_t>(out.shape(0));
    if (count > 0 && start > UINT64_MAX - static_cast<std::uint64_t>(count - 1))
        throw py::value_error("start + len(out) exceeds the 2^64 variates of a stream");
    double* p = out.mutable_data();
    const CounterStream s(key, stream);
    run_without_gil([&](const std::atomic<bool>*) { fill(s, start, count, p); }, false);
}

// name(key, stream, start, out): out[k] = variate start + k of (key, stream) drawn by Draw.
template <void (CounterStream::*Draw)(std::uint64_t, std::int64_t, double*) const>
void def_counter_fill(py::module_& m, const char* name, const char* doc) {
    m.def(
        name,
        [](std::uint64_t key, std::uint64_t stream, std::uint64_t start, CArray<double> out) {
            fill_vector(key, stream, start, out,
                        [](const CounterStream& s, std::uint64_t i, std::int64_t c, double* p) { (s.*Draw)(i, c, p); });
        },
        py::arg("key"), py::arg("stream"), py::arg("start"), py::arg("out").noconvert(), doc);
}

ZLaw z_law(const std::string& z) {
    if (z == "gaussian") return ZLaw::gaussian;
    if (z == "rademacher") return ZLaw::rademacher;
    if (z == "uniform") return ZLaw::uniform;
    throw py::value_error("z must be 'gaussian', 'rademacher' or 'uniform'; got '" + z + "'");
}

// The column scales of a fused draw (null: all 1), checked; n and d checked against the law's range.
const double* fused_scale(Index n, Index d, ZLaw law, const std::optional<CArray<double>>& scale) {
    if (n < 1 || d < 1) throw py::value_error("n and d must be positive");
    if (law == ZLaw::gaussian &&
        static_cast<std::uint64_t>(n) > CounterStream::kMaxNormals / static_cast<std::uint64_t>(d))
        throw py::value_error("n * d exceeds the 2^47 normals of a stream");
    if (!scale) return nullptr;
    require_shape(*scale, "scale", {d});
    const double* sp = scale->data();
    for (Index t = 0; t < d; ++t)
        if (!(std::isfinite(sp[t]) && sp[t] >= 0)) throw py::value_error("scale must hold finite non-negative numbers");
    return sp;
}

// The counter-based generator: its path, raw words and variates.
void bind_counter(py::module_& m) {
    m.def(
        "counter_path", [] { return std::string(counter_path_name(counter_path())); },
        "The path the counter-based generator takes here: 'scalar', 'avx2' or 'avx512' (capped by RELUCORE_SIMD).");

    m.def(
        "counter_words",
        [](std::uint64_t key, std::uint64_t stream, std::uint64_t block0, CArray<std::uint32_t> out) {
            require_shape(out, "out", {-1, 4});
            const std::int64_t count = static_cast<std::int64_t>(out.shape(0));
            std::uint32_t* p = out.mutable_data();
            const CounterStream s(key, stream);
            py::gil_scoped_release release;
            std::uint64_t a[256], b[256];
            for (std::int64_t k = 0; k < count; k += 256) {
                const std::int64_t nb = std::min<std::int64_t>(256, count - k);
                s.words(block0 + static_cast<std::uint64_t>(k), nb, a, b);
                for (std::int64_t j = 0; j < nb; ++j) {
                    std::uint32_t* w = p + 4 * (k + j);
                    w[0] = static_cast<std::uint32_t>(a[j]);
                    w[1] = static_cast<std::uint32_t>(a[j] >> 32);
                    w[2] = static_cast<std::uint32_t>(b[j]);
                    w[3] = static_cast<std::uint32_t>(b[j] >> 32);
                }
            }
        },
        py::arg("key"), py::arg("stream"), py::arg("block0"), py::arg("out").noconvert(),
        "out[j] = Philox4x32-10 of counter (block0 + j, stream) under key: the raw words (count, 4) uint32.");

    m.def(
        "counter_normals",
        [](std::uint64_t key, std::uint64_t stream, std::uint64_t start, CArray<double> out) {
            writable_vector(out);
            if (start > CounterStream::kMaxNormals ||
                static_cast<std::uint64_t>(out.shape(0)) > CounterStream::kMaxNormals - start)
                throw py::value_error("start + len(out) exceeds the 2^47 normals of a stream");
            fill_vector(key, stream, start, out,
                        [](const CounterStream& s, std::uint64_t i, std::int64_t c, double* p) { s.normals(i, c, p); });
        },
        py::arg("key"), py::arg("stream"), py::arg("start"), py::arg("out").noconvert(),
        "out[k] = standard normal start + k of (key, stream) (the ziggurat normal of word start + k; start + k < "
        "2^47).");

    def_counter_fill<&CounterStream::uniforms>(
        m, "counter_uniforms", "out[k] = uniform start + k in [0, 1) of (key, stream) (53 bits of a 64-bit word).");
    def_counter_fill<&CounterStream::rademacher>(
        m, "counter_rademacher", "out[k] = Rademacher variate start + k (+1 or -1) of (key, stream) (one bit each).");
}

// The variates under a law of z, and the fused draw-and-Gram kernel (one trial or a batch).
void bind_fused(py::module_& m) {
    m.def(
        "fused_gram",
        [](std::uint64_t key, std::uint64_t stream, Index n, Index d, const std::string& z,
           std::optional<CArray<double>> scale, bool keep_x, Index block_columns) -> py::object {
            if (block_columns < 0) throw py::value_error("block_columns must be >= 0");
            const ZLaw law = z_law(z);
            const double* sp = fused_scale(n, d, law, scale);
            CArray<double> K({n, n});
            std::optional<CArray<double>> X;
            if (keep_x) X.emplace(std::vector<py::ssize_t>{n, d});
            double* kp = K.mutable_data();
            double* xp = X ? X->mutable_data() : nullptr;
            const CounterStream s(key, stream);
            const blas::SingleThreaded blas_threads = blas_for_call();
            run_without_gil([&](const std::atomic<bool>*) { fused_draw_gram(s, law, n, d, sp, kp, xp, block_columns); },
                            false);
            if (X) return py::make_tuple(K, *X);
            return K;
        },
        py::arg("key"), py::arg("stream"), py::arg("n"), py::arg("d"), py::arg("z") = "gaussian",
        py::arg("scale") = py::none(), py::arg("keep_x") = false, py::arg("block_columns") = 0,
        "K = X X^T for x_it = scale[t] z_it, z_it = variate i*d + t of (key, stream), drawn in column blocks; "
        "(K, X) if keep_x.");

    m.def(
        "counter_variates",
        [](std::uint64_t key, std::uint64_t stream, std::uint64_t start, const std::string& z, CArray<double> out) {
            const ZLaw law = z_law(z);
            writable_vector(out);
            if (law == ZLaw::gaussian &&
                (start > CounterStream::kMaxNormals ||
                 static_cast<std::uint64_t>(out.shape(0)) > CounterStream::kMaxNormals - start))
                throw py::value_error("start + len(out) exceeds the 2^47 normals of a stream");
            fill_vector(key, stream, start, out,
                        [law](const CounterStream& s, std::uint64_t i, std::int64_t c, double* p) {
                            draw_variates(s, law, i, c, p);
                        });
        },
        py::arg("key"), py::arg("stream"), py::arg("start"), py::arg("z"), py::arg("out").noconvert(),
        "out[k] = variate start + k of (key, stream) under the law z ('gaussian', 'rademacher' or 'uniform' on "
        "[-sqrt 3, sqrt 3]): the entries fused_gram draws.");

    m.def(
        "fused_gram_batch",
        [](const CArray<std::uint64_t>& keys, std::uint64_t stream, Index n, Index d, const std::string& z,
           std::optional<CArray<double>> scale, CArray<double> K, std::optional<CArray<double>> X, int n_threads) {
            require_shape(keys, "keys", {-1});
            const Index B = keys.shape(0);
            const ZLaw law = z_law(z);
            const double* sp = fused_scale(n, d, law, scale);
            require_shape(K, "K", {B, n, n});
            if (X) require_shape(*X, "X", {B, n, d});
            const std::uint64_t* kp = keys.data();
            double* out = K.mutable_data();
            double* xp = X ? X->mutable_data() : nullptr;
            const blas::SingleThreaded blas_threads = blas_for_call();
            run_without_gil(
                [&](const std::atomic<bool>*) {
                    parallel_for(B, n_threads, [&](Index b) {
                        const CounterStream s(kp[b], stream);
                        fused_draw_gram(s, law, n, d, sp, out + b * n * n, xp != nullptr ? xp + b * n * d : nullptr);
                    });
                },
                false);
        },
        py::arg("keys").noconvert(), py::arg("stream"), py::arg("n"), py::arg("d"), py::arg("z"), py::arg("scale"),
        py::arg("K").noconvert(), py::arg("X").noconvert() = py::none(), py::arg("n_threads") = 1,
        "fused_gram for a batch: K[b] (and X[b] when X is given) from (keys[b], stream), problems spread over "
        "n_threads; each problem's numbers do not depend on the batch or the threads.");
}

}  // namespace

void bind_random(py::module_& m) {
    bind_counter(m);
    bind_fused(m);
}
