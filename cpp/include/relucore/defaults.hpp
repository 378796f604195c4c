// The default values of relucore's rules, in one place (exposed to Python as
// relucore._core.defaults). The constants C_alpha and C_g are the unspecified
// universal constants of Lai et al. 2026 (Theorems 2 and 6; docs/math.md),
// fixed here to the values relucore.train uses.
#pragma once

#include "relucore/core/abi.hpp"

#include <cstdint>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {
namespace defaults {

/// Offset of the all-positive start: eps = y_min / (C_alpha m).
constexpr double C_alpha = 10.0;
/// Step of the disjoint start and of the theorems' window: eta = 1 / (C_g ||lambda||_1).
constexpr double C_g = 2.0;
/// Default gradient tolerance: tol = tol_factor * sqrt(mu_1(K)) * ||y|| (square loss).
constexpr double tol_factor = 1e-12;
/// An example on which no neuron is active counts as unfit at the end of a
/// converged run when its residual exceeds unfit_rtol * |y_i| (square loss;
/// gd/run.hpp, example_unfit()). With the ReLU such an example has h_i = 0 and
/// residual exactly |y_i|, so any value below 1 separates the two cases; 1e-3
/// leaves room for the leaky ReLU, whose residual at a stationary point is
/// bounded by the gradient norm.
constexpr double unfit_rtol = 1e-3;
/// Largest condition number mu_1 / mu_n accepted by the starts that need K^{-1}.
constexpr double max_condition = 1e12;
/// Smallest reciprocal condition estimate of a Cholesky factor of K accepted
/// as non-singular (DualGD::positive_start).
constexpr double cholesky_rcond_min = 1e-12;
/// A GD run diverges when its loss exceeds divergence_factor * max(start loss, 1).
constexpr double divergence_factor = 1e12;
/// engine="auto": the measured cost of one GD step of each engine, in nanoseconds
/// per unit of work: the primal-dual engine's step costs dual * n^2 m (K alpha for
/// every neuron), the weight-space engine's weights * n d m (W X^T and the
/// gradient's product with X) on its built-in products and weights_blas * n d m
/// where they go to a BLAS (blas::products_use_blas_by_size). K = X X^T is formed
/// by the prepare step for either engine, so it does not enter the rule.
struct AutoStepNs {
    double dual;
    double weights;
    double weights_blas;
};
/// One row per SIMD path (simd::level(), narrowest first: scalar, sse2, avx,
/// avx512), measured by bench/bench_auto.py at that level (docs/math.md gives the
/// machine). The paths differ in speed, not only in width: at avx512 and avx the weight
/// engine's products run on its packed kernels (linalg/packed.hpp), below them on the BLAS.
constexpr AutoStepNs auto_step_ns_table[] = {
    {0.17, 0.39, 0.24},   // scalar
    {0.17, 0.39, 0.24},   // sse2
    {0.12, 0.39, 0.24},   // avx
    {0.12, 0.37, 0.095},  // avx512
};
/// The row of auto_step_ns_table for a SIMD level (clamped to the table).
constexpr AutoStepNs auto_step_ns(int level) {
    constexpr int last = int(sizeof(auto_step_ns_table) / sizeof(auto_step_ns_table[0])) - 1;
    return auto_step_ns_table[level < 0 ? 0 : (level > last ? last : level)];
}
/// GD step budget.
constexpr std::int64_t steps = 10000;
/// Step budget of train(steps=inf) / Trainer.run_to_limit(): GD steps taken at most while trying to
/// certify that the activation pattern is frozen (docs/math.md, certified limits).
constexpr std::int64_t limit_max_steps = 10000000;
/// train(steps=inf) stops this many GD steps after a try of the frozen-pattern proof first found the
/// final phase not strictly contracting (M singular to its error bound: collinear or duplicate
/// examples, n > d), where no number of steps can make it hold.
constexpr std::int64_t limit_noncontracting_steps = 100000;
/// A problem whose binary exponents of max |x_ij| (sqrt max |K_ij| in Gram-only mode) and max |y_i|
/// lie within +-scale_exponent runs unscaled; farther from unit scale it runs on an exactly rescaled
/// copy (gd/scaling.hpp, docs/errors.md "Scale of the data").
constexpr int scale_exponent = 64;
/// The dual engine (DualGD) recomputes beta = beta_start + K (alpha - alpha_start) from
/// alpha every resync_every steps, so that beta and K alpha do not drift apart by rounding
/// over long runs (docs/math.md, resynchronisation); 0 never.
constexpr std::int64_t resync_every = 1024;
/// Events relucore.flow follows at most before it stops with status "max_events".
constexpr std::int64_t flow_max_events = 10000;
/// relucore.flow ends at an event once every entry of beta provably moves by at most
/// flow_rest_rtol max(|beta|, |y|) along any continuation (docs/math.md, "remaining motion"):
/// the events left are rounding-level chatter. The event loop's state carries errors of
/// 3e-15 - 2e-14 relative at such points (Figure 4 and step-size problems).
constexpr double flow_rest_rtol = 1e-13;
/// Keep every record-th state in the history (0: none).
constexpr std::int64_t record = 0;
/// gamma of the leaky ReLU max(u, gamma u).
constexpr double leaky_slope = 0.01;
/// Standard deviation of the Gaussian initial weights: sqrt(2e-6) (the double
/// nearest to it, bitwise numpy's np.sqrt(2e-6)).
constexpr double init_scale = 0.0014142135623730951;
/// A mean-field run diverges when some |h(x_j)| of a step exceeds this.
constexpr double meanfield_divergence_bound = 1e100;
/// Minimum-norm QP solver (minnorm/minnorm_qp.hpp): relative tolerance of the
/// sign tests, block principal pivoting iterations before the fallback, and
/// block iterations without progress before the fallback.
constexpr double minnorm_tol = 1e-13;
/// The minimum-norm problems refuse K as numerically singular when the smallest squared
/// pivot of its Cholesky factor is below minnorm_pivot_rtol * max_i K_ii (relucore.minnorm
/// and the sweep trial's gap).
constexpr double minnorm_pivot_rtol = 1e-13;
constexpr int minnorm_max_block_iter = 60;
constexpr int minnorm_stall_limit = 6;
/// Sizes from which linalg/blas.hpp hands a product to a registered BLAS
/// (below them relucore's own kernels are faster; bench/HISTORY.md, "K and W
/// through a BLAS"): K = X X^T of at least blas_syrk_min_rows rows, and
/// W += C X with at least blas_gemm_min_rows rows of W or at least
/// blas_gemm_min_data entries of X.
constexpr std::int64_t blas_syrk_min_rows = 32;
constexpr std::int64_t blas_gemm_min_rows = 4;
constexpr std::int64_t blas_gemm_min_data = 1 << 20;
/// The weight-space engine's products beta = W X^T and G = C X (blas::gemm_nt,
/// blas::gemm) go to the BLAS from blas_gemm_min_rows neurons and
/// blas_product_min_work multiply-adds (m n d) on; below, Eigen's per-neuron
/// products, bitwise as before (bench/HISTORY.md, "The weight engine through
/// the BLAS").
constexpr std::int64_t blas_product_min_work = 2000;
/// Largest X (n d entries) the weight engine packs once per run for its AVX-512
/// products (linalg/blas.hpp, PackedX: a copy of X); larger ones go to the BLAS.
constexpr std::int64_t packed_products_max_data = std::int64_t(1) << 23;
/// Version of the random streams a sweep row's data come from (relucore.sample
/// and the explicit-X sweep trials draw z from the counter-based generator of
/// random/counter.hpp). A sweep store records it and is not resumed under
/// another version; a store written before it was recorded has none. Change it
/// with any change of a stream. 1: z from Philox4x32-10 (counter.hpp), keyed by
/// one 64-bit draw of the trial's numpy Generator. 2: also the Gram-space
/// sampler (relucore.sample_gram, sample_gram_batch, Gram-mode sweep trials)
/// draws from it (stream layout in random/gram_sample.hpp), keyed by the trial's
/// SeedSequence.generate_state(1, uint64) in a sweep (numpy's Philox before).
constexpr std::int64_t generator_version = 2;

/// Size from which linalg/lapack.hpp takes the eigenvalues of a symmetric
/// matrix from a registered LAPACK (dsyevd) instead of Eigen's solver: below
/// it the call costs more than it saves (bench/HISTORY.md, "Eigenvalues of K
/// by LAPACK again"), and small problems keep Eigen's rounding.
constexpr std::int64_t lapack_eigen_min_rows = 32;

/// Size from which the prepare step's Cholesky factorisation of K for the
/// start's solve comes from a registered LAPACK (dpotrf, dpocon, dpotrs: linalg/lapack.hpp,
/// Cholesky) instead of Eigen's LLT: small problems keep Eigen's rounding.
constexpr std::int64_t lapack_cholesky_min_rows = 32;

}  // namespace defaults
}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
