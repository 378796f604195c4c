/// @file gd/positive_start.hpp
/// The all-positive starting point of Theorems 1 and 3 (Lai et al. 2026),
/// built and checked in one pass: K = X X^T, its eigenvalues, the default
/// offset eps, alpha0 = K^{-1} eps (Cholesky), W0 = alpha0 X, the default step
/// 1 / (L ||s||^2 mu_1(K)) and the default gradient tolerance.
///
/// This is the hot path of a single `relucore.train` call on a small problem,
/// where a chain of separate numpy calls would cost more than thousands of GD
/// steps, and the StartBeta::positive mode of the one prepare entry
/// (prepare_start() of gd/prepare.hpp). A problem that fails a check gets a
/// non-zero StartCheck and no further work; refusal_message() of
/// gd/refusal.hpp names the reason in the words of docs/errors.md.
///
/// The rules of that start live here once: default_offset() (the default eps)
/// and factor_gram() (Cholesky and the conditioning rule, then K^{-1} eps), also
/// used by DualGD::positive_start and the Gram sweep trial (sweep/sweep_gram.hpp).
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/types.hpp"
#include "relucore/defaults.hpp"
#include "relucore/gd/model.hpp"
#include "relucore/linalg/gram.hpp"
#include "relucore/linalg/lapack.hpp"
#include "relucore/linalg/span.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

/// First check a problem failed in positive_start() (ok = 0: none did).
enum class StartCheck : int {
    ok = 0,
    labels_invalid = 1,    ///< a label is not finite, or 1/2 ||y||^2 over/underflows
    outer_invalid = 2,     ///< an outer weight is zero or not finite
    gram_not_finite = 3,   ///< sum |K_ij| overflows (X too large or not finite)
    gram_degenerate = 4,   ///< mu_1(K) is below the smallest normal double (X ~ 0)
    ill_conditioned = 5,   ///< mu_1 / mu_n above max_condition (K^{-1} is needed)
    eps_invalid = 6,       ///< the offset is not positive and finite
    not_definite = 7,      ///< the Cholesky factorisation of K failed
    start_not_finite = 8,  ///< alpha0, W0 or the starting loss overflow
    step_invalid = 9,      ///< the default step over/underflows, or eta < machine eps x default
    /// Only with StartOptions::scale_test: the scale of the data may lie outside the range that runs
    /// unscaled (scale_may_be_out_of_range()), and nothing past that test was computed: the caller
    /// rescales the problem exactly and prepares the rescaled copy instead (not a refusal).
    scale_out_of_range = 10,
    /// Only with PrepareRequest::rescale: the data lie outside the safe range and the model is not
    /// homogeneous (PrepareRequest::not_scale_free), so no exact rescaling maps it onto itself.
    scale_not_free = 11,
    /// Only with PrepareRequest::rescale: the given step leaves float64's range on the exactly rescaled
    /// copy (eta scales as 4^-ex); eta keeps the given value.
    eta_out_of_range = 12,
};

/// Options of positive_start() (the defaults of relucore.train).
struct StartOptions {
    /// > 0: the offset of every beta_{k,i}; 0: the default y_min / (C_alpha m);
    /// < 0: beta0 holds the offsets already (positive, one per neuron and example).
    Scalar eps = 0;
    Scalar C_alpha = defaults::C_alpha;              ///< constant of the default offset
    Scalar tol = -1;                                 ///< >= 0: the gradient tolerance; otherwise the default
    Scalar tol_factor = defaults::tol_factor;        ///< default tol = tol_factor sqrt(mu_1) ||y|| (logistic: 0)
    Scalar max_condition = defaults::max_condition;  ///< largest mu_1 / mu_n accepted
    Loss loss = Loss::square;
    Activation activation = Activation::relu;    ///< phi of the starting predictions (the start's checks)
    Scalar leaky_slope = defaults::leaky_slope;  ///< gamma of the leaky ReLU
    /// Stop with StartCheck::scale_out_of_range, before any work past K, where the data's scale may lie
    /// outside the range that runs unscaled (relucore.train's first preparation: the rescaled problem is
    /// then prepared once, not twice).
    bool scale_test = false;
};

namespace detail {

/// Whether the binary exponent of max |y_i| may lie outside +-defaults::scale_exponent (O(n)).
inline bool labels_out_of_scale(const ConstVectorRef& y) {
    const int e = defaults::scale_exponent;
    Scalar ymax = 0;
    for (Index i = 0; i < y.size(); ++i) ymax = std::max(ymax, std::abs(y[i]));
    int ey = 0;
    if (ymax > 0 && std::isfinite(ymax)) std::frexp(ymax, &ey);
    return ey > e || ey < -e;
}

/// Whether the binary exponent of max |x_ij| (half that of max |K_ij| without X) may lie outside
/// +-defaults::scale_exponent: O(n) on max_i K_ii, or max_i ||x_i||^2 from the rows of X where K was not
/// formed; max |x|^2 <= max_i K_ii <= d max |x|^2, with a factor 2 of room for rounding.
inline bool gram_out_of_scale(const ConstMatrixRef* X, const ConstMatrixRef& K, bool gram_formed) {
    const int e = defaults::scale_exponent;
    Scalar kmax = 0;
    for (Index i = 0; i < K.rows(); ++i)
        kmax = std::max(kmax, gram_formed ? K(i, i) : static_cast<Scalar>(X->row(i).squaredNorm()));
    const Scalar d = X != nullptr ? static_cast<Scalar>(X->cols()) : Scalar(1);
    return !(kmax < std::ldexp(Scalar(1), 2 * e)) || kmax < std::ldexp(d, -2 * e - 1);
}

}  // namespace detail

/// Whether a problem's scale may lie outside the range that runs unscaled (defaults::scale_exponent:
/// the binary exponents of max |x_ij| and max |y_i|, or half that of max |K_ij| in Gram-only mode):
/// an O(n) test on max_i K_ii (max_i ||x_i||^2 from the rows of X where K was not formed) and on y
/// that never misses such a problem, since max |x|^2 <= max_i K_ii <= d max |x|^2 (with a factor 2
/// of room for rounding). The Python layer decides exactly where it holds (relucore._scaling).
inline bool scale_may_be_out_of_range(const ConstMatrixRef* X, const ConstMatrixRef& K, bool gram_formed,
                                      const ConstVectorRef& y) {
    return detail::labels_out_of_scale(y) || detail::gram_out_of_scale(X, K, gram_formed);
}

/// sum_i v_i^2 in the order numpy sums a contiguous row (pairwise, eight accumulators per
/// block of at most 128), so that a default computed here has the bits numpy gives it
/// (np.sum(np.square(v)), np.linalg.norm(v)**2).
inline Scalar sum_of_squares(const Scalar* a, Index n) {
    if (n < 8) {
        Scalar r = 0;
        for (Index i = 0; i < n; ++i) r += a[i] * a[i];
        return r;
    }
    if (n <= 128) {
        Scalar r[8];
        for (int j = 0; j < 8; ++j) r[j] = a[j] * a[j];
        Index i = 8;
        for (; i < n - n % 8; i += 8)
            for (int j = 0; j < 8; ++j) r[j] += a[i + j] * a[i + j];
        Scalar res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; ++i) res += a[i] * a[i];
        return res;
    }
    Index n2 = n / 2;
    n2 -= n2 % 8;
    return sum_of_squares(a, n2) + sum_of_squares(a + n2, n - n2);
}

inline Scalar sum_of_squares(const ConstVectorRef& v) {
    return sum_of_squares(v.data(), v.size());
}

/// The labels every start accepts: finite, with 1/2 n max_i y_i^2 neither overflowing nor,
/// for non-zero labels, below the smallest normal number.
inline bool labels_usable(const ConstVectorRef& y) {
    Scalar y_max = 0;
    for (Index i = 0; i < y.size(); ++i) {
        const Scalar a = std::abs(y[i]);
        if (!std::isfinite(a)) return false;
        y_max = std::max(y_max, a);
    }
    if (!std::isfinite(Scalar(0.5) * static_cast<Scalar>(y.size()) * y_max * y_max)) return false;
    return !(y_max > 0 && Scalar(0.5) * y_max * y_max < std::numeric_limits<Scalar>::min());
}

/// The starting predictions h0_i = sum_k s_k phi(beta0_ki) (written to h0) and the starting
/// residual ||h0 - y||^2 (its finiteness is the start's last check).
inline Scalar start_residual(const ConstVectorRef& outer, const ConstMatrixRef& beta0, const ConstVectorRef& y,
                             const StartOptions& opt, VectorRef h0) {
    const ModelSpec spec{opt.activation, opt.leaky_slope, opt.loss};
    Scalar r = 0;
    for (Index i = 0; i < y.size(); ++i) {
        Scalar h = 0;
        for (Index k = 0; k < outer.size(); ++k) h += outer[k] * activate(beta0(k, i), spec);
        h0[i] = h;
        r += (h - y[i]) * (h - y[i]);
    }
    return r;
}

/// The default step 1 / (L ||s||^2 mu_1(K)) with s2 = ||s||^2 and L the loss's curvature
/// bound for n examples (docs/math.md, step size).
inline Scalar default_step(Loss loss, Index n, Scalar s2, Scalar mu1) {
    return Scalar(1) / (loss_curvature(loss, n) * s2 * mu1);
}

/// The default step, checked: it must be a finite normal number, and a given step (eta > 0 on
/// entry) at least machine epsilon times it. Writes the default into eta where none is given.
inline bool start_step(Loss loss, Index n, Scalar s2, Scalar mu1, Scalar& eta) {
    const Scalar eta_default = default_step(loss, n, s2, mu1);
    if (!std::isfinite(eta_default) || !(eta_default >= std::numeric_limits<Scalar>::min())) return false;
    if (eta > 0) return std::isfinite(eta) && !(eta < std::numeric_limits<Scalar>::epsilon() * eta_default);
    eta = eta_default;
    return true;
}

/// The default offset of the all-positive start, eps = y_min / (C_alpha m) with
/// y_min = min_i |y_i|: it satisfies Theorem 1 (eps <= y_min / C_alpha),
/// Theorem 3 (<= y_min / (2 C_alpha)) and Theorem 5 (<= y_min / (C_alpha m))
/// of Lai et al. 2026 (docs/math.md). Labels with a 0 use max_i |y_i| instead
/// and all-zero labels use 1; as with numpy's min and max, a NaN label makes
/// both references NaN, so the offset is then 1 / (C_alpha m).
inline Scalar default_offset(const ConstVectorRef& y, Index m, Scalar C_alpha) {
    Scalar y_min = std::numeric_limits<Scalar>::infinity(), y_max = 0;
    bool nan = false;
    for (Index i = 0; i < y.size(); ++i) {
        const Scalar a = std::abs(y[i]);
        nan = nan || std::isnan(a);
        y_min = std::min(y_min, a);
        y_max = std::max(y_max, a);
    }
    const Scalar ref = nan ? Scalar(1) : (y_min > 0 ? y_min : (y_max > 0 ? y_max : Scalar(1)));
    return ref / (C_alpha * static_cast<Scalar>(m));
}

/// The first half of conditioning_rule(): the factorisation succeeded with a reciprocal
/// condition estimate above rcond_min.
/// (Factor: Eigen::LLT<RowMatrix>, or the prepare step's Cholesky of linalg/lapack.hpp.)
template <class Factor>
bool cholesky_estimate_passes(const Factor& llt, Scalar rcond_min) {
    return llt.info() == Eigen::Success && llt.rcond() > rcond_min;
}

namespace detail {
/// The spectrum's half of the conditioning rule: mu = {mu_1, mu_n} refuses K when mu_n <= 0 or
/// mu_1 / mu_n > max_condition.
inline bool spectrum_refuses(std::pair<Scalar, Scalar> mu, Scalar max_condition) {
    return !(mu.second > 0) || mu.first / mu.second > max_condition;
}
}  // namespace detail

/// conditioning_rule() where the estimate has failed: the spectrum decides.
template <class Factor, class Spectrum>
StartCheck spectrum_rule(const Factor& llt, Scalar max_condition, Spectrum&& spectrum) {
    const std::pair<Scalar, Scalar> mu = spectrum();
    if (detail::spectrum_refuses(mu, max_condition)) return StartCheck::ill_conditioned;
    if (llt.info() != Eigen::Success) return StartCheck::not_definite;
    return StartCheck::ok;
}

/// The conditioning rule of every start that needs K^{-1} (docs/errors.md, "K is badly
/// conditioned"): K is accepted when its Cholesky factorisation llt succeeded with a
/// reciprocal condition estimate above rcond_min, the cheap test that decides almost every
/// K; otherwise its spectrum decides: ill_conditioned when mu_n <= 0 or mu_1 / mu_n >
/// max_condition, not_definite when the factorisation failed although the spectrum
/// passed, ok otherwise. spectrum() returns {mu_1, mu_n}; it is called only when the
/// estimate fails, so a caller that has no eigenvalues yet computes them only then.
/// Its two halves are callable alone (prepare's other solves need the first by itself).
template <class Spectrum>
StartCheck conditioning_rule(const Eigen::LLT<RowMatrix>& llt, Scalar rcond_min, Scalar max_condition,
                             Spectrum&& spectrum) {
    if (cholesky_estimate_passes(llt, rcond_min)) return StartCheck::ok;
    return spectrum_rule(llt, max_condition, std::forward<Spectrum>(spectrum));
}

/// conditioning_rule() for a caller that already has mu = {mu_1, mu_n} (a sweep trial reports
/// them): the same verdict. Where the spectrum passes and the factorisation succeeded, both
/// halves of the rule say ok, so the rcond estimate (triangular solves, about a microsecond at
/// n = 10) is computed only where the spectrum alone would refuse K.
inline StartCheck conditioning_rule(const Eigen::LLT<RowMatrix>& llt, Scalar rcond_min, Scalar max_condition,
                                    std::pair<Scalar, Scalar> mu) {
    if (!detail::spectrum_refuses(mu, max_condition) && llt.info() == Eigen::Success) return StartCheck::ok;
    return conditioning_rule(llt, rcond_min, max_condition, [mu] { return mu; });
}

/// {mu_1, mu_n} of K by symmetric_eigenvalues() (NaN when it fails), for conditioning_rule().
/// A template (Matrix is always RowMatrix) so that the eigen-solver is compiled only where used.
template <class Matrix = RowMatrix>
std::pair<Scalar, Scalar> extreme_spectrum(const ConstMatrixRef& K) {
    const Index n = K.rows();
    Vector mu(n);
    if (!symmetric_eigenvalues<Matrix>(K, mu)) mu.setConstant(std::numeric_limits<Scalar>::quiet_NaN());
    return {mu[n - 1], mu[0]};
}

/// The Cholesky factorisation of K into llt and conditioning_rule() on it, with the
/// default rcond_min (defaults::cholesky_rcond_min) and opt.max_condition.
template <class Spectrum>
StartCheck factor_gram(const ConstMatrixRef& K, Scalar max_condition, Spectrum&& spectrum, Eigen::LLT<RowMatrix>& llt) {
    llt.compute(K);
    return conditioning_rule(llt, defaults::cholesky_rcond_min, max_condition, std::forward<Spectrum>(spectrum));
}

/// The default gradient tolerance of the square loss: tol_factor sqrt(mu_1) ||y||,
/// with ||h0||, the norm of the starting predictions, in place of ||y|| when
/// y = 0 (the gradient at the start is about sqrt(mu_1) ||h0 - y|| either way,
/// and a tolerance proportional to ||y|| = 0 is met only by an exactly
/// stationary point); at least the smallest normal number, so that an exactly
/// stationary point counts as converged.
inline Scalar default_tolerance(Scalar tol_factor, Scalar mu1, Scalar y_norm, Scalar h0_norm) {
    const Scalar scale = y_norm > 0 ? y_norm : h0_norm;
    return std::max(tol_factor * std::sqrt(mu1) * scale, std::numeric_limits<Scalar>::min());
}

/// The gradient tolerance of a start: opt.tol when given (>= 0), else default_tolerance() for a
/// loss with a relative tolerance and 0 for the others.
inline Scalar start_tolerance(const StartOptions& opt, Scalar mu1, Scalar y_norm, Scalar h0_norm) {
    if (opt.tol >= 0) return opt.tol;
    return loss_traits(opt.loss).relative_tol ? default_tolerance(opt.tol_factor, mu1, y_norm, h0_norm) : Scalar(0);
}

/// Builds the all-positive start w_k = X^T K^{-1} eps for one problem.
///
/// @param X      n x d inputs
/// @param y      n labels
/// @param outer  m outer weights
/// @param[out] K      n x n Gram matrix X X^T
/// @param[out] mu     n eigenvalues of K, ascending
/// @param[in,out] beta0  m x n starting predictions: the offsets eps (read when opt.eps < 0)
/// @param[out] alpha0 m x n starting dual coordinates K^{-1} eps
/// @param[out] W0     m x d starting weights alpha0 X
/// @param[in,out] eta the step size: > 0 on entry keeps it (checked), otherwise the default is written
/// @param[out] tol    the gradient tolerance (given or default)
/// @return StartCheck::ok, or the first check that failed (outputs are then partial)
///
/// A template (Matrix is always RowMatrix) so that its eigen-solver is
/// compiled only in the translation units that call it: the engines include
/// this header for factor_gram() (docs/embedding.md, compile cost).
template <class Matrix = RowMatrix>
StartCheck positive_start(const ConstMatrixRef& X, const ConstVectorRef& y, const ConstVectorRef& outer,
                          const StartOptions& opt, MatrixRef K, VectorRef mu, MatrixRef beta0, MatrixRef alpha0,
                          MatrixRef W0, Scalar& eta, Scalar& tol) {
    constexpr Scalar tiny = std::numeric_limits<Scalar>::min();
    const Index n = X.rows();
    const Index m = outer.size();

    if (opt.scale_test && detail::labels_out_of_scale(y)) return StartCheck::scale_out_of_range;
    if (!labels_usable(y)) return StartCheck::labels_invalid;
    Scalar y_sq = 0;
    for (Index i = 0; i < n; ++i) y_sq += y[i] * y[i];
    Scalar s2 = 0;
    for (Index k = 0; k < m; ++k) {
        if (outer[k] == 0 || !std::isfinite(outer[k])) return StartCheck::outer_invalid;
        s2 += outer[k] * outer[k];
    }

    gram_matrix(X, K);
    if (opt.scale_test && detail::gram_out_of_scale(&X, K, true)) return StartCheck::scale_out_of_range;
    if (!std::isfinite(K.cwiseAbs().sum())) return StartCheck::gram_not_finite;
    if (!symmetric_eigenvalues<Matrix>(K, mu)) return StartCheck::gram_not_finite;
    const Scalar mu1 = mu[n - 1], mun = mu[0];
    if (!(mu1 > 0) || mu1 < tiny) return StartCheck::gram_degenerate;
    Eigen::LLT<Matrix> llt(n);
    const StartCheck conditioned = factor_gram(K, opt.max_condition, [&] { return std::pair(mu1, mun); }, llt);
    if (conditioned != StartCheck::ok) return conditioned;

    if (opt.eps >= 0) beta0.setConstant(opt.eps == 0 ? default_offset(y, m, opt.C_alpha) : opt.eps);
    if (!(beta0.array() > 0).all() || !beta0.allFinite()) return StartCheck::eps_invalid;
    alpha0 = llt.solve(beta0.transpose()).transpose();
    W0.setZero();
    add_row_combination(alpha0, X, W0);
    if (!all_finite(alpha0) || !all_finite(W0)) return StartCheck::start_not_finite;
    // Starting loss 1/2 ||h0 - y||^2 with h0 = sum_k s_k phi(eps_k) = sum_k s_k eps_k (eps > 0).
    Vector h0(n);
    const Scalar loss0 = start_residual(outer, beta0, y, opt, h0);
    if (!std::isfinite(Scalar(0.5) * loss0)) return StartCheck::start_not_finite;
    if (!start_step(opt.loss, n, s2, mu1, eta)) return StartCheck::step_invalid;
    // loss0 = ||h0 - y||^2 is ||h0||^2 when y = 0.
    tol = start_tolerance(opt, mu1, std::sqrt(y_sq), y_sq > 0 ? Scalar(0) : std::sqrt(loss0));
    return StartCheck::ok;
}

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
