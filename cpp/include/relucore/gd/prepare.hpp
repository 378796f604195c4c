/// @file gd/prepare.hpp
/// The numerical part of preparing a run, one entry for every init
/// (relucore.train, Trainer, the sweeps' general path): prepare_start().
/// K = X X^T, mu_1(K) when a default needs it, the dual coordinates alpha0
/// with K alpha0 = beta0, and W0 = alpha0 X, doing only the work the call needs.
///
/// - Every mode runs every numerical check and writes the defaults: the scale
///   of the labels, K, the finiteness of the start and of its loss, the
///   default step 1 / (L ||s||^2 mu_1(K)) or the check of a given one, and the
///   tolerance (the rules start_step(), start_tolerance(), start_residual() of
///   gd/positive_start.hpp). The caller checks types, shapes and finiteness of
///   its arguments only.
/// - The all-positive start from X (StartBeta::positive) is the mode that does
///   everything in one pass, the checks of the outer weights, the conditioning
///   of K and the default offset too (positive_start() of gd/positive_start.hpp).
/// - mu_1 is computed only when a rule needs it (the default step or tolerance) or when
///   a given step cannot be checked against the default step from the bounds
///   tr(K) / n <= mu_1 <= tr(K) alone. With X of n > d rows it is mu_1 of the
///   smaller d x d matrix X^T X, which has the same non-zero eigenvalues.
///   Eigenvalues come from symmetric_eigenvalues() (linalg/lapack.hpp: LAPACK
///   when one is registered, else Eigen).
/// - alpha0 comes from a Cholesky factorisation (of K, or of X^T X when n > d
///   so that K is singular), with the least-squares (minimum-norm) solution by
///   a symmetric eigendecomposition when the factor is singular or badly
///   conditioned and the init allows a singular K. The factorisation of K is
///   Cholesky of linalg/lapack.hpp (LAPACK when one is registered and K is
///   large enough, else Eigen's LLT), except for StartBeta::gaussian_gram,
///   which reads Eigen's factor itself; that of X^T X is Eigen's. beta0 =
///   W0 X^T of StartBeta::from_weights goes to the registered BLAS where the
///   weight engine's products do.
/// - A problem it cannot prepare gets a non-zero StartCheck (and, for the
///   checks of K, the spectrum of K in mu); refusal_message() of
///   gd/refusal.hpp turns it into the error text of docs/errors.md.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/types.hpp"
#include "relucore/defaults.hpp"
#include "relucore/gd/model.hpp"
#include "relucore/gd/positive_start.hpp"
#include "relucore/gd/scaling.hpp"
#include "relucore/gd/starts.hpp"
#include "relucore/linalg/blas.hpp"
#include "relucore/linalg/gram.hpp"
#include "relucore/linalg/lapack.hpp"
#include "relucore/linalg/span.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

/// How alpha0 is obtained from beta0.
enum class StartSolve : int {
    none = 0,           ///< not at all (alpha0 is left as it is)
    inverse = 1,        ///< K^{-1} beta0: K must be positive definite with mu_1 / mu_n <= max_condition
    least_squares = 2,  ///< the minimum-norm solution of K alpha0 = beta0 (beta0 in the range of K)
};

/// Where beta0 comes from.
enum class StartBeta : int {
    given = 0,          ///< beta0 holds the starting predictions (positive, disjoint inits)
    from_weights = 1,   ///< beta0 = W0 X^T with W0 given (gaussian with X, array inits)
    gaussian_gram = 2,  ///< beta0 holds z^T on entry; beta0 = (L z)^T, alpha0 = (L^{-T} z)^T with K = L L^T
    positive = 3,       ///< the all-positive start from X: positive_start() (every check, eta and tol too)
};

/// What prepare_start() computes for one problem: the options of the start (StartOptions:
/// tol, tol_factor, loss, activation, leaky_slope, max_condition; eps and C_alpha fill the
/// offsets of StartBeta::positive, and in the other modes eps == 0 only tells the messages
/// that the offsets are the default ones) and how this mode builds it.
struct PrepareRequest : StartOptions {
    bool gram_given = false;  ///< K holds the Gram matrix on entry (else K = X X^T is written)
    /// The start's checks, step and tolerance too (false: K, alpha0 and W0 only, for a caller that
    /// replaces the start of a problem prepared already); read when beta is not StartBeta::positive.
    bool complete = true;
    /// K = X X^T is formed only where this step reads it (else K is left untouched, the caller
    /// forms it on demand); read when !gram_given and beta is not StartBeta::positive.
    bool lazy_gram = false;
    StartSolve solve = StartSolve::inverse;
    StartBeta beta = StartBeta::given;
    Scalar rcond_min = defaults::cholesky_rcond_min;
    /// Read by the prepare_start() that returns a scaling::RescaledProblem: where the O(n) scale test
    /// flags a problem, decide its exact exponents and, where they leave the safe range, prepare its
    /// exactly rescaled copy (the given step, tolerance, offsets and start mapped into its units).
    bool rescale = false;
    /// With rescale: what makes the model not homogeneous ("" when nothing does); a problem out of
    /// the safe range is then refused (StartCheck::scale_not_free) instead of rescaled.
    std::string not_scale_free;
};

/// What defines beta0 of the positive and disjoint starts (StartBeta::given), for the prepare_start() that
/// takes it: beta0 is computed from the labels in the units the problem is prepared in.
struct StartOffsets {
    /// m x n offsets (row-major) given in the caller's units, or nullptr: the default offset of the
    /// labels, default_offset(y, m, req.C_alpha).
    const Scalar* eps = nullptr;
    /// n entries: beta0 is the disjoint start of the offsets with this assignment (disjoint_start() of
    /// gd/starts.hpp, constant C_g); nullptr: beta0 is the offsets (the all-positive init).
    const std::int64_t* assignment = nullptr;
    Scalar C_g = 1;
};

namespace detail {

/// beta0 of a StartOffsets in the units of the labels y: the given offsets times 2^p (exact), or the
/// default offset of y. False where the default is not finite or an offset is not positive (eps_invalid).
inline bool offsets_start(const StartOffsets& s, const ConstVectorRef& y, const ConstVectorRef& outer, Scalar C_alpha,
                          int p, MatrixRef beta0) {
    const Index m = beta0.rows(), n = beta0.cols();
    RowMatrix eps(m, n);
    if (s.eps != nullptr) {
        eps = ConstMatrixMap(s.eps, m, n);
        scaling::scale(eps.data(), eps.size(), p);
    } else {
        eps.setConstant(default_offset(y, m, C_alpha));
        if (!eps.allFinite()) return false;
    }
    if (!(eps.array() > 0).all()) return false;
    if (s.assignment != nullptr)
        disjoint_start(y.data(), n, outer.data(), m, eps.data(), s.assignment, s.C_g, eps.data());
    beta0 = eps;
    return true;
}

/// alpha0 = the minimum-norm solution of S a = rhs (rows of rhs_t) for symmetric
/// positive semidefinite S, with eigenvalues below S.rows() * eps * mu_max cut
/// off (the cut-off of numpy's lstsq, rcond=None). Returns (S^+ rhs)^T.
inline RowMatrix pinv_solve(const ConstMatrixRef& S, const ConstMatrixRef& rhs_t) {
    Eigen::SelfAdjointEigenSolver<RowMatrix> eig(S);
    const Vector& ev = eig.eigenvalues();
    const Scalar cut = static_cast<Scalar>(S.rows()) * std::numeric_limits<Scalar>::epsilon() *
                       std::max(std::abs(ev[0]), std::abs(ev[ev.size() - 1]));
    Vector inv(ev.size());
    for (Index i = 0; i < ev.size(); ++i) inv[i] = std::abs(ev[i]) > cut ? Scalar(1) / ev[i] : Scalar(0);
    const RowMatrix& V = eig.eigenvectors();
    RowMatrix t = rhs_t * V;  // m x n
    t = t * inv.asDiagonal();
    return t * V.transpose();
}

/// The spectrum of K, ascending, for the Python layer's error messages.
inline void write_spectrum(const ConstMatrixRef& K, VectorRef mu) {
    if (!symmetric_eigenvalues(K, mu)) mu.setConstant(std::numeric_limits<Scalar>::quiet_NaN());
}

/// Whether K = X X^T is finite whatever the rounding of its entries, decided from X alone:
/// every |K_ij| <= ||x_i|| ||x_j||, so sum |K_ij| <= (sum_i ||x_i||)^2, taken with a factor
/// 4 of room. Writes tr = tr(K) = sum_i ||x_i||^2 (summed row by row: it may differ from the
/// trace of the formed K in the last bits). False (K must be formed to decide) otherwise.
inline bool gram_surely_finite(const ConstMatrixRef& X, Scalar& tr) {
    Scalar s = 0, t = 0;
    for (Index i = 0; i < X.rows(); ++i) {
        const Scalar q = X.row(i).squaredNorm();
        s += std::sqrt(q);
        t += q;
    }
    tr = t;
    return std::isfinite(t) && std::isfinite(s) && s <= std::sqrt(std::numeric_limits<Scalar>::max() / 4);
}

/// mu_1 of K = X X^T, from the smaller of K and X^T X.
inline Scalar largest_eigenvalue(const ConstMatrixRef* X, const ConstMatrixRef& K, VectorRef mu) {
    if (X != nullptr && X->cols() < X->rows()) {
        const RowMatrix G = X->transpose() * *X;
        Vector ev(G.rows());
        write_spectrum(G, ev);
        return ev[G.rows() - 1];
    }
    write_spectrum(K, mu);
    return mu[mu.size() - 1];
}

/// The checks and defaults that follow the solve, for every mode but StartBeta::positive (whose
/// positive_start() runs the same rules): a finite start with a finite starting loss, the
/// default step and the check of a given one (where mu_1 is known), the tolerance. Sums of
/// squares run in numpy's order (sum_of_squares()).
inline StartCheck finish_start(const ConstVectorRef& y, const ConstVectorRef& outer, const PrepareRequest& req,
                               bool with_weights, Scalar mu1, const ConstMatrixRef& beta0, const ConstMatrixRef& alpha0,
                               const ConstMatrixRef& W0, Scalar& eta, Scalar& tol) {
    if (!all_finite(beta0) || !all_finite(alpha0) || (with_weights && !all_finite(W0)))
        return StartCheck::start_not_finite;
    Vector h0(y.size());
    if (!std::isfinite(Scalar(0.5) * start_residual(outer, beta0, y, req, h0))) return StartCheck::start_not_finite;
    // mu1 is NaN only where the bounds on mu_1 accepted the given step and the tolerance is not relative to it.
    if (!std::isnan(mu1) && !start_step(req.loss, y.size(), sum_of_squares(outer), mu1, eta))
        return StartCheck::step_invalid;
    const Scalar y_sq = sum_of_squares(y);
    tol = start_tolerance(req, mu1, std::sqrt(y_sq), y_sq > 0 ? Scalar(0) : std::sqrt(sum_of_squares(h0)));
    return StartCheck::ok;
}

/// conditioning_rule() in its two halves: for StartSolve::inverse a failed estimate hands the
/// verdict to the spectrum (written into mu); for the other solves a failed estimate alone sends
/// the solve to pinv_solve() (use_factor false), and nothing is refused here.
template <class Factor>
StartCheck start_conditioning(const Factor& llt, const PrepareRequest& req, const ConstMatrixRef& K, VectorRef mu,
                              bool& use_factor) {
    use_factor = true;
    if (cholesky_estimate_passes(llt, req.rcond_min)) return StartCheck::ok;
    use_factor = req.solve == StartSolve::inverse;
    if (!use_factor) return StartCheck::ok;
    const Index n = K.rows();
    return spectrum_rule(llt, req.max_condition, [&] {
        detail::write_spectrum(K, mu);
        return std::pair(mu[n - 1], mu[0]);
    });
}

/// beta0 = W0 X^T: through the registered BLAS where the weight engine's products take it
/// (blas::gemm_nt; a faster kernel, its own rounding), Eigen's product otherwise.
inline void start_predictions(const ConstMatrixRef& X, const ConstMatrixRef& W0, MatrixRef beta0) {
    if (blas::detail::product_uses_blas(blas::registered_blas(), W0.rows(), X.cols(), X.rows()))
        blas::gemm_nt(W0, X, beta0);
    else
        beta0.noalias() = W0 * X.transpose();
}

/// a 2^p in place, row by row (a may be a block with an outer stride), exactly as scaling::scale().
inline void scale_rows(MatrixRef a, int p) {
    if (a.cols() == 0) return;
    for (Index i = 0; i < a.rows(); ++i) scaling::scale(&a(i, 0), a.cols(), p);
}

}  // namespace detail

/// Prepares one problem. X may be null (Gram-only mode: K given).
///
/// @param X      n x d inputs, or nullptr
/// @param y      n labels (finite: the other checks of StartBeta::positive are the caller's otherwise)
/// @param outer  m outer weights of this problem (checked here by StartBeta::positive, else non-zero by the caller)
/// @param[in,out] K      n x n: written as X X^T unless req.gram_given
/// @param[out] mu        n: the ascending spectrum when it was computed (a refusal of K always computes it), else
///                       untouched
/// @param[out] mu1       mu_1(K), or NaN when no rule needed it
/// @param[in,out] beta0  m x n (see StartBeta)
/// @param[out] alpha0    m x n (see StartSolve)
/// @param[in,out] W0     m x d: read for StartBeta::from_weights, else written as alpha0 X (when X is given)
/// @param[in,out] eta    > 0: the given step, checked against the default one; otherwise the default step
///                       is written
/// @param[out] tol       the gradient tolerance: req.tol when >= 0, else the default of the loss
/// @return ok, or the first check that failed. Except for StartBeta::positive (every check of
///         positive_start()), the refusals are labels_invalid, gram_not_finite (K overflows),
///         gram_degenerate / ill_conditioned / not_definite with the spectrum of K in mu,
///         start_not_finite and step_invalid (mu1 written).
inline StartCheck prepare_start(const ConstMatrixRef* X, const ConstVectorRef& y, const ConstVectorRef& outer,
                                const PrepareRequest& req, MatrixRef K, VectorRef mu, Scalar& mu1, MatrixRef beta0,
                                MatrixRef alpha0, MatrixRef W0, Scalar& eta, Scalar& tol) {
    if (req.beta == StartBeta::positive) {
        const StartCheck c = positive_start(*X, y, outer, req, K, mu, beta0, alpha0, W0, eta, tol);
        const bool spectrum = c == StartCheck::ok || c == StartCheck::step_invalid;
        mu1 = spectrum ? mu[K.rows() - 1] : std::numeric_limits<Scalar>::quiet_NaN();
        return c;
    }
    constexpr Scalar tiny = std::numeric_limits<Scalar>::min();
    const Index n = K.rows();
    if (req.scale_test && detail::labels_out_of_scale(y)) return StartCheck::scale_out_of_range;
    if (req.complete && !labels_usable(y)) return StartCheck::labels_invalid;
    mu1 = std::numeric_limits<Scalar>::quiet_NaN();
    // With req.lazy_gram, K is formed by the first rule that reads it; the checks that only
    // need its trace and a finiteness bound take them from X.
    bool have_gram = req.gram_given || !req.lazy_gram || X == nullptr;
    if (!req.gram_given && have_gram) gram_matrix(*X, K);
    if (req.scale_test && detail::gram_out_of_scale(X, K, have_gram)) return StartCheck::scale_out_of_range;
    const auto gram = [&]() -> const MatrixRef& {
        if (!have_gram) gram_matrix(*X, K);
        have_gram = true;
        return K;
    };
    Scalar tr = 0;
    if (have_gram || !detail::gram_surely_finite(*X, tr)) {
        if (!std::isfinite(gram().cwiseAbs().sum())) return StartCheck::gram_not_finite;
        tr = K.trace();
    }
    // mu_1 lies in [tr / n, tr]: outside the normal range, the Python layer names the reason from mu.
    if (!(tr > 0) || tr / static_cast<Scalar>(n) < tiny) {
        detail::write_spectrum(gram(), mu);
        mu1 = mu[n - 1];
        if (!(mu1 > 0) || mu1 < tiny) return StartCheck::gram_degenerate;
    }
    // mu_1 is needed by the default step and by a default tolerance relative to it.
    bool need_mu1 =
        req.complete && std::isnan(mu1) && (!(eta > 0) || (req.tol < 0 && loss_traits(req.loss).relative_tol));
    if (req.complete && !need_mu1 && std::isnan(mu1)) {
        // The given step must be at least machine eps times 1 / (L ||s||^2 mu_1); decided from the bounds when they agree.
        const Scalar c = loss_curvature(req.loss, n) * outer.squaredNorm();
        const Scalar lo = Scalar(1) / (c * tr), hi = static_cast<Scalar>(n) / (c * tr);
        const Scalar e = std::numeric_limits<Scalar>::epsilon();
        need_mu1 = !(std::isfinite(hi) && lo >= tiny && eta >= e * hi);
    }
    if (need_mu1)
        mu1 = X != nullptr && X->cols() < X->rows() ? detail::largest_eigenvalue(X, K, mu)
                                                    : detail::largest_eigenvalue(X, gram(), mu);

    const bool via_weights = X != nullptr && X->cols() < X->rows() && req.solve == StartSolve::least_squares;
    if (req.beta == StartBeta::from_weights) detail::start_predictions(*X, W0, beta0);
    if (req.solve != StartSolve::none) {
        if (via_weights) {
            // K is singular (rank <= d < n): alpha0 = W0 (X^T X)^+ X^T, the minimum-norm solution.
            // Eigen's factor: with K left unformed, a run below the BLAS's sizes keeps the built-in bits.
            const RowMatrix G = X->transpose() * *X;
            Eigen::LLT<RowMatrix> llt(G);
            RowMatrix C;  // m x d: W0 G^{+}
            if (cholesky_estimate_passes(llt, req.rcond_min))
                C = llt.solve(W0.transpose()).transpose();
            else
                C = detail::pinv_solve(G, W0);
            alpha0.noalias() = C * X->transpose();
        } else if (req.beta == StartBeta::gaussian_gram) {
            // This start reads the factor itself (Eigen's).
            Eigen::LLT<RowMatrix> llt(gram());
            bool use_factor = true;
            const StartCheck c = detail::start_conditioning(llt, req, K, mu, use_factor);
            if (c != StartCheck::ok) return c;
            const RowMatrix z = beta0;  // z^T (m x n)
            beta0.noalias() = z * llt.matrixU();
            alpha0 = llt.matrixU().solve(z.transpose()).transpose();
        } else {
            const Cholesky llt(gram());
            bool use_factor = true;
            const StartCheck c = detail::start_conditioning(llt, req, K, mu, use_factor);
            if (c != StartCheck::ok) return c;
            if (use_factor)
                alpha0 = llt.solve_rows(beta0);
            else
                alpha0 = detail::pinv_solve(K, beta0);
        }
    }
    if (X != nullptr && req.beta != StartBeta::from_weights) {
        W0.setZero();
        add_row_combination(alpha0, *X, W0);
    }
    if (!req.complete) return StartCheck::ok;
    return detail::finish_start(y, outer, req, X != nullptr, mu1, beta0, alpha0, W0, eta, tol);
}

/// prepare_start() with the exact rescaling of docs/errors.md ("Scale of the data") where req.rescale
/// is set, and with beta0 of a positive or disjoint start computed here from its offsets where offsets
/// is given (else beta0 is read as above). Without req.rescale: the call above after that definition.
///
/// A problem that the O(n) test (scale_may_be_out_of_range()) does not flag is prepared as above,
/// bit for bit, at no further cost. A flagged one gets its exact exponents (scaling::rescale_problem(),
/// O(size of the data)): within the safe range it is prepared as above, unscaled; outside it, a model
/// that is not homogeneous (req.not_scale_free) is refused with StartCheck::scale_not_free, and
/// otherwise the problem is prepared on its exactly rescaled copy: X / 2^ex (or K / 4^ex, in place)
/// and y / 2^ey, with the numbers given in the caller's units mapped into the copy's: eta (as 4^-ex;
/// StartCheck::eta_out_of_range, eta left as given, where it leaves float64's range), tol (as a
/// gradient norm), the offsets (req.eps > 0, offsets->eps, and those of StartBeta::positive in beta0
/// with req.eps < 0: as y; a default offset is that of the copy's labels), a given beta0 (as y) or W0
/// (StartBeta::from_weights; the draw z of StartBeta::gaussian_gram: as W). The start is computed on
/// the copy, where it is representable whatever the caller's scale; every output (K, mu, mu1, beta0,
/// alpha0, W0, eta, tol) is then in the copy's units, rescaled.X / rescaled.y hold the copy
/// (rescaled.K stays empty: K is rescaled in place) and rescaled.e the exponents, which
/// scale_back_run() (gd/rescaled_run.hpp) and the units of gd/scaling.hpp map back exactly.
/// rescaled.flagged records the test's verdict. Offsets that are not positive, or a default offset
/// that is not finite, in the units the problem is prepared in: StartCheck::eps_invalid.
inline StartCheck prepare_start(const ConstMatrixRef* X, const ConstVectorRef& y, const ConstVectorRef& outer,
                                const PrepareRequest& req, MatrixRef K, VectorRef mu, Scalar& mu1, MatrixRef beta0,
                                MatrixRef alpha0, MatrixRef W0, Scalar& eta, Scalar& tol,
                                scaling::RescaledProblem& rescaled, const StartOffsets* offsets = nullptr) {
    rescaled = scaling::RescaledProblem{};
    // The start in the caller's units; where it is refused, a flagged problem may still be prepared rescaled.
    const bool defined = offsets == nullptr || detail::offsets_start(*offsets, y, outer, req.C_alpha, 0, beta0);
    if (!req.rescale)
        return defined ? prepare_start(X, y, outer, req, K, mu, mu1, beta0, alpha0, W0, eta, tol)
                       : StartCheck::eps_invalid;
    PrepareRequest r = req;
    r.scale_test = true;
    const StartCheck tested = prepare_start(X, y, outer, r, K, mu, mu1, beta0, alpha0, W0, eta, tol);
    if (tested != StartCheck::scale_out_of_range) return defined ? tested : StartCheck::eps_invalid;
    // The test stopped before anything but K was written: K holds the caller's Gram matrix where it is given.
    const ConstMatrixRef K_given(K);
    rescaled = scaling::rescale_problem(X, X == nullptr ? &K_given : nullptr, y);
    rescaled.flagged = true;
    rescaled.K = RowMatrix();  // K is rescaled in place below
    r.scale_test = false;
    const scaling::Exponents e = rescaled.e;
    if (!scaling::rescaled(e)) {
        if (!defined) return StartCheck::eps_invalid;
        return prepare_start(X, y, outer, r, K, mu, mu1, beta0, alpha0, W0, eta, tol);
    }
    if (!req.not_scale_free.empty()) return StartCheck::scale_not_free;
    if (eta > 0) {
        Scalar down = eta;
        scaling::scale(&down, 1, -scaling::power(scaling::units::ETA, e));
        if (!(std::isfinite(down) && down > 0)) return StartCheck::eta_out_of_range;
        eta = down;
    }
    if (r.tol >= 0) scaling::scale(&r.tol, 1, -scaling::power(scaling::units::GRAD, e));
    if (r.eps > 0) scaling::scale(&r.eps, 1, -scaling::power(scaling::units::Y, e));
    const int y_down = -scaling::power(scaling::units::Y, e), w_down = -scaling::power(scaling::units::W, e);
    if (offsets != nullptr) {
        if (!detail::offsets_start(*offsets, rescaled.y, outer, req.C_alpha, y_down, beta0))
            return StartCheck::eps_invalid;
    } else if (req.beta == StartBeta::given || (req.beta == StartBeta::positive && req.eps < 0)) {
        detail::scale_rows(beta0, y_down);
    } else if (req.beta == StartBeta::gaussian_gram) {
        detail::scale_rows(beta0, w_down);
    } else if (req.beta == StartBeta::from_weights) {
        detail::scale_rows(W0, w_down);
    }
    if (req.gram_given) detail::scale_rows(K, -scaling::power(scaling::units::K, e));
    const ConstMatrixRef X_copy(rescaled.X);
    return prepare_start(X != nullptr ? &X_copy : nullptr, rescaled.y, outer, r, K, mu, mu1, beta0, alpha0, W0, eta,
                         tol);
}

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
