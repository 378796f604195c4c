#include "common.hpp"

#include "relucore/gram.hpp"
#include "relucore/parallel.hpp"

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
            run_without_gil(
                [&](const std::atomic<bool>*) {
                    parallel_for(B, n_threads, [&](Index b) {
                        gram_matrix(ConstMatrixMap(xp + b * n * d, n, d), MatrixMap(kp + b * n * n, n, n));
                    });
                },
                static_cast<double>(B) * n * n * d > 5e8);
        },
        py::arg("X").noconvert(), py::arg("K").noconvert(), py::arg("n_threads") = 0,
        "K[b] = X[b] X[b]^T for a (B, n, d) batch, written into K (B, n, n).");
}
