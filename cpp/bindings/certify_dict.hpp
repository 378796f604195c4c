// The Python dict of one try of the frozen-pattern proof (relucore/gd/certify.hpp), shared by
// _core.certify_gd (bind_flow.cpp) and DualTrainer.run_to_certificate (bind_trainer.cpp).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "relucore/gd/certify.hpp"

#include <algorithm>

namespace relucore::bindings {

inline pybind11::array_t<double> row_matrix_array(const RowMatrix& x) {
    pybind11::array_t<double> a({static_cast<pybind11::ssize_t>(x.rows()), static_cast<pybind11::ssize_t>(x.cols())});
    std::copy(x.data(), x.data() + x.size(), a.mutable_data());
    return a;
}

/// status (0 holds, 1 not strictly contracting, 2 diverges, 3 fails, 4 the limit failed its self-check), margin, contraction, fp_error,
/// lam_max, the entry (k, i) of least slack with its limit, bound and err, need, reason (of status 4),
/// alpha_inf, beta_inf.
inline pybind11::dict certificate_dict(const flow::GDCertificate& c) {
    pybind11::dict d;
    d["status"] = static_cast<int>(c.status);
    d["margin"] = c.margin;
    d["contraction"] = c.contraction;
    d["fp_error"] = c.fp_error;
    d["lam_max"] = c.lam_max;
    d["k"] = c.k;
    d["i"] = c.i;
    d["limit"] = c.limit;
    d["bound"] = c.bound;
    d["err"] = c.err;
    d["need"] = c.need;
    d["reason"] = c.reason;
    d["alpha_inf"] = row_matrix_array(c.phase.alpha_inf);
    d["beta_inf"] = row_matrix_array(c.phase.beta_inf);
    return d;
}

}  // namespace relucore::bindings
