// The private extension module relucore._core.
#include <pybind11/pybind11.h>

#include <string>

#include "relucore/core/parallel.hpp"
#include "relucore/version.hpp"

namespace py = pybind11;

void bind_gram(py::module_& m);
void bind_train(py::module_& m);
void bind_minnorm(py::module_& m);
void bind_trainer(py::module_& m);
void bind_meanfield(py::module_& m);
void bind_sweep(py::module_& m);
void bind_defaults(py::module_& m);
void bind_random(py::module_& m);
void bind_flow(py::module_& m);
void bind_blas(py::module_& m);
void bind_scaling(py::module_& m);
void bind_starts(py::module_& m);

PYBIND11_MODULE(_core, m) {
    m.doc() = "relucore's compiled core (private: use the relucore package)";
    m.attr("__version__") = RELUCORE_VERSION_STRING;
    m.attr("has_openmp") = relucore::has_openmp();
    m.attr("_pybind11_version") = std::to_string(PYBIND11_VERSION_MAJOR) + "." +
                                  std::to_string(PYBIND11_VERSION_MINOR) + "." + std::to_string(PYBIND11_VERSION_PATCH);
    m.def("default_threads", &relucore::default_threads,
          "Threads used when n_threads is not given (OpenMP's default, 1 without OpenMP).");
    bind_gram(m);
    bind_train(m);
    bind_minnorm(m);
    bind_trainer(m);
    bind_meanfield(m);
    bind_sweep(m);
    bind_defaults(m);
    bind_random(m);
    bind_flow(m);
    bind_blas(m);
    bind_scaling(m);
    bind_starts(m);
}
