// relucore._core.defaults: the default values of relucore/defaults.hpp, read
// only, so that the Python layer uses the same numbers as the C++ core.
//
// It is the one instance of the class Defaults (read-only properties) rather
// than a submodule: pybind11-stubgen writes a submodule as a package of stub
// files, and the committed stub is the single file _core.pyi.
#include "common.hpp"

#include "relucore/defaults.hpp"
#include "relucore/simd.hpp"

#include <stdexcept>

namespace py = pybind11;

namespace {
struct Defaults {};

template <class T>
void constant(py::class_<Defaults>& cls, const char* name, T value, const char* doc) {
    cls.def_property_readonly(name, [value](const Defaults&) { return value; }, doc);
}
}  // namespace

void bind_defaults(py::module_& m) {
    namespace d = relucore::defaults;
    py::class_<Defaults> cls(m, "Defaults", "The defaults of relucore's rules (relucore/defaults.hpp); read-only.");
    constant(cls, "C_alpha", d::C_alpha, "Offset of the all-positive start: eps = y_min / (C_alpha m).");
    constant(cls, "C_g", d::C_g, "Step of the disjoint start: eta = 1 / (C_g ||lambda||_1).");
    constant(cls, "tol_factor", d::tol_factor, "Default gradient tolerance tol_factor * sqrt(mu_1(K)) * ||y||.");
    constant(cls, "max_condition", d::max_condition, "Largest mu_1 / mu_n accepted by the starts that need K^-1.");
    constant(cls, "cholesky_rcond_min", d::cholesky_rcond_min,
             "Smallest reciprocal condition estimate of the Cholesky factor of K accepted.");
    constant(cls, "divergence_factor", d::divergence_factor,
             "A GD run diverges when its loss exceeds divergence_factor * max(start loss, 1).");
    constant(cls, "steps", d::steps, "GD step budget.");
    constant(cls, "unfit_rtol", d::unfit_rtol,
             "An example with no active neuron is unfit when |h_i - y_i| > unfit_rtol |y_i| (square loss).");
    constant(cls, "limit_max_steps", d::limit_max_steps,
             "GD step budget of train(steps=inf) while certifying the limit.");
    constant(cls, "limit_noncontracting_steps", d::limit_noncontracting_steps,
             "train(steps=inf) stops this many steps after a try of the proof first found its final phase not "
             "strictly contracting.");
    constant(cls, "scale_exponent", d::scale_exponent,
             "Binary exponents of max |x_ij| and max |y_i| within +-scale_exponent run unscaled (gd/scaling.hpp).");
    constant(cls, "resync_every", d::resync_every,
             "The dual engine recomputes beta from alpha every resync_every steps (0: never).");
    constant(cls, "flow_max_events", d::flow_max_events, "Events relucore.flow follows at most.");
    constant(cls, "flow_rest_rtol", d::flow_rest_rtol,
             "relucore.flow ends at an event once the proved remaining motion of beta is below this, relative.");
    constant(cls, "record", d::record, "Keep every record-th state in the history (0: none).");
    constant(cls, "leaky_slope", d::leaky_slope, "gamma of the leaky ReLU max(u, gamma u).");
    constant(cls, "init_scale", d::init_scale, "Standard deviation of Gaussian initial weights, sqrt(2e-6).");
    constant(cls, "meanfield_divergence_bound", d::meanfield_divergence_bound,
             "A mean-field run diverges when some |h(x_j)| of a step exceeds this.");
    constant(cls, "minnorm_tol", d::minnorm_tol, "Relative tolerance of the minimum-norm QP's sign tests.");
    constant(cls, "minnorm_pivot_rtol", d::minnorm_pivot_rtol,
             "K is numerically singular for the minimum-norm problems when min pivot^2 < this * max K_ii.");
    constant(cls, "minnorm_max_block_iter", d::minnorm_max_block_iter,
             "Block principal pivoting iterations of the minimum-norm QP before its fallback.");
    constant(cls, "minnorm_stall_limit", d::minnorm_stall_limit,
             "Block iterations without progress of the minimum-norm QP before its fallback.");
    constant(cls, "blas_syrk_min_rows", d::blas_syrk_min_rows,
             "K = X X^T goes to the registered BLAS from this many rows of X on (relucore/linalg/blas.hpp).");
    constant(cls, "blas_gemm_min_rows", d::blas_gemm_min_rows,
             "W += C X goes to the registered BLAS from this many rows of W on, or ...");
    constant(cls, "blas_gemm_min_data", d::blas_gemm_min_data, "... from this many entries of X on.");
    constant(cls, "blas_product_min_work", d::blas_product_min_work,
             "The weight engine's products W X^T and C X go to the registered BLAS from blas_gemm_min_rows neurons "
             "and this many multiply-adds (m n d) on.");
    constant(cls, "packed_products_max_data", d::packed_products_max_data,
             "The weight engine packs X once per run for its AVX-512 products up to this many entries of X "
             "(relucore/linalg/blas.hpp, PackedX); larger X go to the registered BLAS.");
    constant(cls, "generator_version", d::generator_version,
             "Version of the random streams of sample and the sweeps' data, recorded in a sweep store.");
    constant(cls, "lapack_eigen_min_rows", d::lapack_eigen_min_rows,
             "The eigenvalues of K come from the registered LAPACK from this many rows on, else from Eigen "
             "(relucore/linalg/lapack.hpp).");
    constant(cls, "lapack_cholesky_min_rows", d::lapack_cholesky_min_rows,
             "The prepare step's Cholesky factorisation for the start's solve comes from the registered LAPACK "
             "from this many rows on, else from Eigen (relucore/linalg/lapack.hpp, Cholesky).");
    cls.def("__repr__", [](const Defaults&) { return std::string("relucore._core.defaults"); });
    m.attr("defaults") = Defaults{};
    py::class_<d::AutoStepNs>(m, "AutoStepNs",
                              "engine='auto': nanoseconds of a GD step of each engine per unit of work, for one SIMD "
                              "level (relucore/defaults.hpp, auto_step_ns_table; bench/bench_auto.py).")
        .def_readonly("dual", &d::AutoStepNs::dual, "Primal-dual engine, per n^2 m.")
        .def_readonly("weights", &d::AutoStepNs::weights, "Weight-space engine on its built-in products, per n d m.")
        .def_readonly("weights_blas", &d::AutoStepNs::weights_blas,
                      "Weight-space engine where its products go to a BLAS, per n d m.")
        .def("__repr__", [](const d::AutoStepNs& c) {
            return py::str("AutoStepNs(dual={}, weights={}, weights_blas={})")
                .format(c.dual, c.weights, c.weights_blas);
        });
    m.def(
        "auto_step_ns",
        [](int level) {
            if (level < relucore::simd::kScalar || level > relucore::simd::kAvx512)
                throw std::invalid_argument("level must be a SIMD level: 0 scalar, 1 sse2, 2 avx, 3 avx512");
            return d::auto_step_ns(level);
        },
        py::arg("level"),
        "engine='auto': the row of auto_step_ns_table for a SIMD level (0 scalar, 1 sse2, 2 avx, 3 avx512; "
        "ValueError otherwise).");
    m.def(
        "simd_level", [] { return relucore::simd::level(); },
        "This process's SIMD level: 0 scalar, 1 sse2 (neon on aarch64), 2 avx, 3 avx512 (the CPU's widest, capped by "
        "RELUCORE_SIMD, read on every call; ValueError on another value of RELUCORE_SIMD).");
}
