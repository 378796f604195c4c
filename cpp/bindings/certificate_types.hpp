// The bound result types of one linear phase and of one try of the frozen-pattern proof
// (relucore/gd/linear_phase.hpp, relucore/gd/certify.hpp): _core.LinearPhaseOutput,
// _core.CertificateStatus and _core.CertificateOutput. bind_trainer.cpp registers them; _core.linear_phase,
// _core.certify_gd and DualTrainer.run_to_certificate (bind_trainer.cpp) return them.
#pragma once

#include <pybind11/native_enum.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "relucore/gd/certify.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace relucore::bindings {

/// A copy of a matrix of any storage order as a C-ordered (rows, cols) array of its scalar.
template <class M>
pybind11::array_t<typename M::Scalar> dense_array(const M& x) {
    pybind11::array_t<typename M::Scalar> a(
        {static_cast<pybind11::ssize_t>(x.rows()), static_cast<pybind11::ssize_t>(x.cols())});
    auto v = a.template mutable_unchecked<2>();
    for (Index i = 0; i < x.rows(); ++i)
        for (Index j = 0; j < x.cols(); ++j) v(i, j) = x(i, j);
    return a;
}

/// A copy of a vector as a 1-d array.
inline pybind11::array_t<double> vector_array(const flow::Vec& x) {
    pybind11::array_t<double> a(static_cast<pybind11::ssize_t>(x.size()));
    std::copy(x.data(), x.data() + x.size(), a.mutable_data());
    return a;
}

/// A stack of equal-shape matrices as a (len(xs), rows, cols) array of their scalar.
template <class M>
pybind11::array_t<typename M::Scalar> stack_array(const std::vector<M>& xs, Index rows, Index cols) {
    pybind11::array_t<typename M::Scalar> a({static_cast<pybind11::ssize_t>(xs.size()),
                                             static_cast<pybind11::ssize_t>(rows),
                                             static_cast<pybind11::ssize_t>(cols)});
    auto v = a.template mutable_unchecked<3>();
    for (size_t k = 0; k < xs.size(); ++k)
        for (Index i = 0; i < rows; ++i)
            for (Index j = 0; j < cols; ++j) v(k, i, j) = xs[k](i, j);
    return a;
}

inline void bind_linear_phase_type(pybind11::module_& m) {
    namespace py = pybind11;
    using flow::Phase;
    py::class_<Phase>(m, "LinearPhaseOutput",
                      "The linear phase of an activation pattern in modal form (relucore/gd/linear_phase.hpp, "
                      "docs/math.md §13); every array is a copy.")
        .def_property_readonly(
            "A",
            [](const Phase& p) {
                std::vector<std::int64_t> a(p.A.begin(), p.A.end());
                return py::array_t<std::int64_t>(static_cast<py::ssize_t>(a.size()), a.data());
            },
            "Indices of the examples active in some neuron, (|A|,).")
        .def_property_readonly(
            "M", [](const Phase& p) { return dense_array(p.M); }, "M = sum_k s_k^2 (D_k K D_k)_AA, (|A|, |A|).")
        .def_property_readonly(
            "lam", [](const Phase& p) { return vector_array(p.lam); }, "Eigenvalues of M, ascending, (|A|,).")
        .def_property_readonly(
            "V", [](const Phase& p) { return dense_array(p.V); }, "Eigenvectors of M = V diag(lam) V^T, (|A|, |A|).")
        .def_property_readonly(
            "c", [](const Phase& p) { return vector_array(p.c); }, "c = V^T r_A, (|A|,).")
        .def_property_readonly(
            "z", [](const Phase& p) { return vector_array(p.z); }, "z = M^{-1} r_A, (|A|,).")
        .def_property_readonly(
            "rA", [](const Phase& p) { return vector_array(p.rA); }, "The residual on A, (|A|,).")
        .def_property_readonly(
            "r", [](const Phase& p) { return vector_array(p.r); }, "The full residual at the start of the phase, (n,).")
        .def_property_readonly(
            "B", [](const Phase& p) { return stack_array(p.B, p.beta_inf.cols(), static_cast<Index>(p.A.size())); },
            "beta_k(t) = beta_inf_k + B_k M^{-1} r_A(t), (m, n, |A|).")
        .def_property_readonly(
            "C", [](const Phase& p) { return stack_array(p.C, p.beta_inf.cols(), static_cast<Index>(p.A.size())); },
            "alpha_k(t) = alpha_inf_k + C_k M^{-1} r_A(t), (m, n, |A|).")
        .def_property_readonly(
            "beta_inf", [](const Phase& p) { return dense_array(p.beta_inf); }, "The limit of beta, (m, n).")
        .def_property_readonly(
            "alpha_inf", [](const Phase& p) { return dense_array(p.alpha_inf); }, "The limit of alpha, (m, n).");
}

/// Registers LinearPhaseOutput, CertificateStatus and CertificateOutput (once, from bind_trainer.cpp).
inline void bind_certificate_types(pybind11::module_& m) {
    namespace py = pybind11;
    using flow::GDCertificate;
    bind_linear_phase_type(m);
    py::native_enum<GDCertificate::Status>(m, "CertificateStatus", "enum.IntEnum",
                                           "The verdict of one try of the frozen-pattern proof (gd/certify.hpp).")
        .value("holds", GDCertificate::holds, "The pattern is proved frozen; alpha_inf, beta_inf are the limit.")
        .value("not_contracting", GDCertificate::not_contracting,
               "The final phase is not strictly contracting (mu_min(M) <= its error bound).")
        .value("diverges", GDCertificate::diverges, "eta mu_max(M) >= 2: the linear phase diverges.")
        .value("fails", GDCertificate::fails, "Entry (k, i) is not proved to keep its sign.")
        .value("unverified", GDCertificate::unverified, "The proof held but its limit failed the self-check.")
        .finalize();
    py::class_<GDCertificate>(m, "CertificateOutput",
                              "One try of the frozen-pattern proof at a GD state (relucore/gd/certify.hpp, "
                              "docs/math.md §13).")
        .def_readonly("status", &GDCertificate::status, "The verdict (CertificateStatus).")
        .def_readonly("margin", &GDCertificate::margin, "Smallest slack over the moving entries (> 0 iff it holds).")
        .def_readonly("contraction", &GDCertificate::contraction, "rho = ||I - eta M||_2, an upper bound.")
        .def_readonly("fp_error", &GDCertificate::fp_error, "Largest floating-point bound fp_ki of the moving entries.")
        .def_readonly("lam_max", &GDCertificate::lam_max, "The computed mu_max(M).")
        .def_readonly("k", &GDCertificate::k, "Neuron of the entry of least slack (fails), -1 otherwise.")
        .def_readonly("i", &GDCertificate::i, "Example of the entry of least slack (fails), -1 otherwise.")
        .def_readonly("limit", &GDCertificate::limit, "beta_inf of the entry of least slack.")
        .def_readonly("bound", &GDCertificate::bound, "The deviation bound of the entry of least slack.")
        .def_readonly("err", &GDCertificate::err, "The floating-point bound of the entry of least slack.")
        .def_property_readonly(
            "need",
            [](const GDCertificate& c) -> py::object {
                if (c.need == -1) return py::none();
                if (c.need == -2) return py::float_(std::numeric_limits<double>::infinity());
                return py::int_(c.need);
            },
            "GD steps after which the proof holds if the pattern stays: 0 when it holds, inf when no number of "
            "steps can make it hold, None when there is no estimate.")
        .def_readonly("reason", &GDCertificate::reason, "Why the self-check failed (status unverified), else empty.")
        .def_property_readonly(
            "phase", [](const GDCertificate& c) { return c.phase; },
            "The linear phase of the state's pattern the proof is about (a LinearPhaseOutput, a copy).")
        .def_property_readonly(
            "fp", [](const GDCertificate& c) { return dense_array(c.fp); },
            "fp_ki of every entry of a moving neuron, (m, n) (0 elsewhere; empty when the entry loop did not run).")
        .def_property_readonly(
            "alpha_inf", [](const GDCertificate& c) { return dense_array(c.phase.alpha_inf); },
            "The limit of alpha of the pattern's linear phase, (m, n).")
        .def_property_readonly(
            "beta_inf", [](const GDCertificate& c) { return dense_array(c.phase.beta_inf); },
            "The limit of beta of the pattern's linear phase, (m, n).");
}

}  // namespace relucore::bindings
