#include "common.hpp"
#include "blas_registry.hpp"

#include "relucore/core/parallel.hpp"
#include "relucore/linalg/gram.hpp"
#include "relucore/stats/gram_stats.hpp"

#include <algorithm>

namespace py = pybind11;
using namespace relucore;
using namespace relucore::bindings;

void bind_gram(py::module_& m) {
    m.def(
        "gram_batch",
        [](const CArray<double>& X, CArray<double> K, int n_threads) {
            require_shape(X, "X", {-1, -1, -1});
            const Index B = X.shape(0), n = X.shape(1), d = X.shape(2);
            require_shape(K, "K", {B, n, n});
            const double* xp = X.data();
            double* kp = K.mutable_data();
            const blas::SingleThreaded blas_threads = blas_for_call();
            batch_without_gil(B, n_threads, static_cast<double>(B) * n * n * d > 5e8, [&](Index b) {
                gram_matrix(ConstMatrixMap(xp + b * n * d, n, d), MatrixMap(kp + b * n * n, n, n));
            });
        },
        py::arg("X").noconvert(), py::arg("K").noconvert(), py::arg("n_threads") = 0,
        "K[b] = X[b] X[b]^T for a (B, n, d) batch, written into K (B, n, n).");

    m.def(
        "gram_stats_batch",
        [](const CArray<double>& K, const CArray<double>& norm1, CArray<double> out, int n_threads) {
            require_shape(K, "K", {-1, -1, -1});
            const Index B = K.shape(0), n = K.shape(1);
            require_shape(K, "K", {B, n, n});
            require_shape(norm1, "norm1", {B});
            require_shape(out, "out", {B, 6});
            const double* kp = K.data();
            const double* sp = norm1.data();
            double* op = out.mutable_data();
            batch_without_gil(B, n_threads, static_cast<double>(B) * n * n * n > 5e8, [&](Index b) {
                const GramStatistics g = gram_statistics(ConstMatrixMap(kp + b * n * n, n, n), sp[b]);
                const double row[6] = {g.mu_max, g.mu_min, g.deviation, g.offdiag_ratio, g.max_offdiag, g.min_diag};
                std::copy(row, row + 6, op + 6 * b);
            });
        },
        py::arg("K"), py::arg("norm1"), py::arg("out").noconvert(), py::arg("n_threads") = 0,
        "Per problem: mu_1, mu_n, ||K/norm1 - I||_2, max offdiag/min diag, max offdiag, min diag -> out (B, 6).");
}
