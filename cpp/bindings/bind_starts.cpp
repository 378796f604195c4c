// relucore._core's start definitions (relucore/gd/starts.hpp) for relucore.gd.inits: the default
// assignment and beta0 of the disjoint init, per problem of a batch.
#include "common.hpp"

#include "relucore/gd/starts.hpp"

#include <cstdint>
#include <string>

namespace py = pybind11;

namespace {

using relucore::Index;
using relucore::bindings::CArray;
using DataArray = py::array_t<double, py::array::c_style | py::array::forcecast>;
using IntArray = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;

IntArray assignment_batch(const DataArray& y, const DataArray& signs) {
    if (y.ndim() != 2 || signs.ndim() != 1) throw py::value_error("default_assignment: y (B, n) and signs (m,)");
    const py::ssize_t B = y.shape(0), n = y.shape(1);
    const Index m = static_cast<Index>(signs.shape(0));
    IntArray a({B, n});
    for (py::ssize_t b = 0; b < B; ++b) {
        const relucore::AssignmentCheck check = relucore::default_assignment(y.data() + b * n, static_cast<Index>(n),
                                                                             signs.data(), m, a.mutable_data() + b * n);
        if (check != relucore::AssignmentCheck::ok) throw py::value_error(relucore::assignment_message(check));
    }
    return a;
}

CArray<double> disjoint_batch(const DataArray& y, const DataArray& signs, const DataArray& eps,
                              const IntArray& assignment, double C_g) {
    if (y.ndim() != 2 || signs.ndim() != 1) throw py::value_error("disjoint_start: y (B, n) and signs (m,)");
    const py::ssize_t B = y.shape(0), n = y.shape(1), m = signs.shape(0);
    if (eps.ndim() != 3 || eps.shape(0) != B || eps.shape(1) != m || eps.shape(2) != n)
        throw py::value_error("disjoint_start: eps must be (B, m, n)");
    if (assignment.ndim() != 2 || assignment.shape(0) != B || assignment.shape(1) != n)
        throw py::value_error("disjoint_start: assignment must be (B, n)");
    CArray<double> beta0({B, m, n});
    for (py::ssize_t b = 0; b < B; ++b)
        relucore::disjoint_start(y.data() + b * n, static_cast<Index>(n), signs.data(), static_cast<Index>(m),
                                 eps.data() + b * m * n, assignment.data() + b * n, C_g,
                                 beta0.mutable_data() + b * m * n);
    return beta0;
}

}  // namespace

void bind_starts(py::module_& m) {
    m.def("default_assignment", &assignment_batch, py::arg("y"), py::arg("signs"),
          "The round-robin assignment of the disjoint init (gd/starts.hpp): (B, n) neuron indices, each example to "
          "the next neuron whose sign matches its label; ValueError where a label has none or is 0.");
    m.def("disjoint_start", &disjoint_batch, py::arg("y"), py::arg("signs"), py::arg("eps"), py::arg("assignment"),
          py::arg("C_g"),
          "beta0 (B, m, n) of the disjoint init (gd/starts.hpp): beta_k = (1/C_g) A_k y + eps_k, (A_k)_ii = 0 where "
          "a_i = k or s_k y_i < 0, else -sign(y_i).");
}
