// One Gram-mode sweep trial end to end (relucore.sweep's fast path): sample
// K and y (random/gram_sample.hpp), the all-positive init of one neuron with its
// default step and tolerance, GD to a stopping rule (DualGD), the
// minimum-norm solution w* (minnorm_single_gram) and the gap
// ||w_inf - w*|| = sqrt((alpha - alpha*)^T K (alpha - alpha*)).
//
// The start runs the rules of relucore.train's prepare step (gd/prepare.hpp,
// Gram mode, init="positive", m = 1, square loss, ReLU) by calling them:
// labels_usable(), default_offset(), factor_gram(), start_residual(),
// start_step() and start_tolerance() of gd/positive_start.hpp, then the same
// DualGD engine as _core.run_dual_batch. Only the eigenvalues differ in
// rounding: mu_1 and mu_n come from extreme_eigenvalues() below (Laguerre's
// iteration) instead of LAPACK, so a default step or tolerance can differ from
// train's in the last bits; with eta and tol given, a trial is train's run bit
// for bit. The conditioning rule is prepare's (conditioning_rule(): the Cholesky
// rcond estimate, then cond(K) = mu_1 / mu_n <= max_condition where the estimate
// fails; given the spectrum the trial has already computed, the same verdict
// with the estimate only where the spectrum fails). w* is relucore.minnorm's for m = 1.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/checks.hpp"
#include "relucore/core/status.hpp"
#include "relucore/core/types.hpp"
#include "relucore/defaults.hpp"
#include "relucore/gd/dual_gd.hpp"
#include "relucore/gd/positive_start.hpp"
#include "relucore/gd/refusal.hpp"
#include "relucore/gd/run.hpp"
#include "relucore/minnorm/minnorm_qp.hpp"
#include "relucore/random/gram_sample.hpp"
#include "relucore/random/rng.hpp"
#include "relucore/simd.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <utility>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

namespace detail {

// Laguerre's iteration on det(T - x I) of a symmetric tridiagonal T
// (diagonal a, off-diagonal b), started outside the spectrum: for a
// polynomial with only real roots it converges monotonically, and cubically,
// to the nearest root, i.e. to the largest eigenvalue from above (from_above)
// or the smallest from below. log det and its derivatives come from the
// pivots q_i = a_i - x - b_{i-1}^2 / q_{i-1} of T - x I = L D L^T. O(n) per step.
//
// Each pivot waits for the division of the one before, so a sweep is bound by
// the latency of a chain of divisions. The two ends are independent: their
// sweeps run interleaved (LaguerreEnd::sweep2), two chains in flight at once,
// with each end's operations and stopping rules those of an end run alone.
struct LaguerreEnd {
    const double* a;
    const double* b;
    Index n;
    double tiny;
    bool from_above;
    double x;
    int it = 0;
    bool done = false;

    // Gershgorin bounds, moved off the spectrum.
    LaguerreEnd(const ConstVectorRef& diag, const ConstVectorRef& off, bool above)
        : a(diag.data()), b(off.data()), n(diag.size()), tiny(0), from_above(above), x(0) {
        double lo = a[0], hi = a[0], scale = 0;
        for (Index i = 0; i < n; ++i) {
            const double r = (i > 0 ? std::abs(b[i - 1]) : 0.0) + (i + 1 < n ? std::abs(b[i]) : 0.0);
            lo = std::min(lo, a[i] - r);
            hi = std::max(hi, a[i] + r);
            scale = std::max(scale, std::abs(a[i]) + r);
        }
        tiny = std::numeric_limits<double>::epsilon() * std::max(scale, std::numeric_limits<double>::min());
        x = from_above ? hi + tiny : lo - tiny;
        done = n == 1;
        if (n == 1) x = a[0];
    }

    // The pivot recursion's state at x: q, its derivatives dq, d2q in x, and the sums
    // G = sum_j 1/(x - mu_j), H = sum_j 1/(x - mu_j)^2.
    struct Sums {
        double q, dq, d2q, G, H;
    };
    Sums first() const {
        Sums s{a[0] - x, -1.0, 0.0, 0.0, 0.0};
        if (s.q == 0.0) s.q = -tiny;
        s.G = s.dq / s.q;
        s.H = (s.dq / s.q) * (s.dq / s.q) - s.d2q / s.q;
        return s;
    }
    void next(Sums& s, Index i) const {
        const double b2 = b[i - 1] * b[i - 1];
        const double r = 1.0 / s.q;
        const double nq = a[i] - x - b2 * r;
        const double ndq = -1.0 + b2 * s.dq * r * r;
        const double nd2q = b2 * (s.d2q * r * r - 2.0 * s.dq * s.dq * r * r * r);
        s.q = nq == 0.0 ? -tiny : nq;
        s.dq = ndq;
        s.d2q = nd2q;
        const double g = s.dq / s.q;
        s.G += g;
        s.H += g * g - s.d2q / s.q;
    }
    Sums sweep() const {
        Sums s = first();
        for (Index i = 1; i < n; ++i) next(s, i);
        return s;
    }
    // The sweeps of two ends of the same T, interleaved.
    static void sweep2(const LaguerreEnd& e1, const LaguerreEnd& e2, Sums& s1, Sums& s2) {
        s1 = e1.first();
        s2 = e2.first();
        for (Index i = 1; i < e1.n; ++i) {
            e1.next(s1, i);
            e2.next(s2, i);
        }
    }
    // One Laguerre step from the sums at x; done once the iterate stops.
    void update(const Sums& s) {
        const double nn = static_cast<double>(n);
        const double disc = std::sqrt(std::max((nn - 1.0) * (nn * s.H - s.G * s.G), 0.0));
        const double den = s.G >= 0 ? s.G + disc : s.G - disc;
        ++it;
        if (!(std::abs(den) > 0) || !std::isfinite(den)) {
            done = true;
            return;
        }
        const double step = nn / den;
        const double xn = x - step;
        // Monotone: stop when the iterate no longer moves inwards.
        if (from_above ? !(xn < x) : !(xn > x)) {
            done = true;
            return;
        }
        x = xn;
        done = it == 100 || std::abs(step) <= 2.0 * std::numeric_limits<double>::epsilon() * std::abs(x);
    }
};

// The largest (from_above) or smallest eigenvalue of T by Laguerre's iteration alone.
inline double laguerre_extreme_eigenvalue(const ConstVectorRef& a, const ConstVectorRef& b, bool from_above) {
    LaguerreEnd e(a, b, from_above);
    while (!e.done) e.update(e.sweep());
    return e.x;
}

}  // namespace detail

// The largest and smallest eigenvalues of a symmetric K: Householder
// tridiagonalisation (Eigen) and Laguerre's iteration from outside the
// spectrum on each end (the tridiagonal QR of a full eigensolver costs 3x more).
inline void extreme_eigenvalues(const ConstMatrixRef& K, double& mu_max, double& mu_min) {
    const Index n = K.rows();
    if (n == 1) {
        mu_max = mu_min = K(0, 0);
        return;
    }
    // K far from 1 in scale (largest diagonal entry, which bounds every |K_ij| of a positive
    // semi-definite K, outside [2^-300, 2^300]): the Householder vectors' squared norms and
    // Laguerre's sums of 1 / (x - mu)^2 would under- or overflow. Work on 2^-e K instead
    // (exact) and scale the ends back; the iteration commutes with that scaling, so within
    // the range, where e = 0, nothing changes.
    double dmax = 0;
    for (Index i = 0; i < n; ++i) dmax = std::max(dmax, std::abs(K(i, i)));
    const int e = dmax > 0 && std::isfinite(dmax) && (dmax < 0x1p-300 || dmax > 0x1p300) ? std::ilogb(dmax) : 0;
    Eigen::MatrixXd T = K;
    if (e != 0) T = T.unaryExpr([e](double v) { return std::ldexp(v, -e); });
    Vector diag(n), sub(n - 1), hc(n - 1);
    Eigen::internal::tridiagonalization_inplace(T, diag, sub, hc, false);
    detail::LaguerreEnd top(diag, sub, true), bottom(diag, sub, false);
    detail::LaguerreEnd::Sums s_top{}, s_bottom{};
    while (!top.done && !bottom.done) {
        detail::LaguerreEnd::sweep2(top, bottom, s_top, s_bottom);
        top.update(s_top);
        bottom.update(s_bottom);
    }
    while (!top.done) top.update(top.sweep());
    while (!bottom.done) bottom.update(bottom.sweep());
    mu_max = std::ldexp(top.x, e);
    mu_min = std::ldexp(bottom.x, e);
}

/// Settings of a trial. The start's options are train's (StartOptions: eps, C_alpha, tol,
/// tol_factor, max_condition; loss and activation stay square and ReLU).
struct GramTrialSettings : StartOptions {
    double sign = 1.0;  // outer weight s of the neuron
    double eta = 0.0;   // step; 0: the default 1 / (s^2 mu_1(K)) of start_step()
    std::int64_t max_steps = defaults::steps;
    bool minnorm = true;  // solve for w* and the gap
    double norm1 = 1.0;   // ||lambda||_1, for the normalised gap
    /// Widest SIMD path of the trial (simd::ThreadCap while it runs; the sweep's sampler takes
    /// the same cap). A trial is a few short steps among scalar work, and the 512-bit step
    /// lowers the clock for all of it, so small trials run faster without it. Bitwise the same.
    int simd_level = simd::kAvx;
};

/// Why a trial returned early. The values are the row indices of gram_trial_error_table.
enum class GramTrialError : int {
    none = 0,
    ill_conditioned = 1,   ///< conditioning_rule() refused K (gd/positive_start.hpp)
    minnorm_failed = 2,    ///< the QP solver did not finish
    minnorm_singular = 3,  ///< K numerically singular for minnorm (Cholesky pivot test)
    not_finite = 4,        ///< the starting point or its loss is not finite
    labels_invalid = 5,    ///< labels_usable() refused y
    step_invalid = 6,      ///< start_step() refused: the default step over/underflows, or eta < machine eps x default
};

/// One row of gram_trial_error_table: the code, its name, the Python exception that the sweep's
/// general path raises for the same trial (its error column reads "<exception>: <text>"), and
/// what the code means. The text of a trial's error is GramTrialResult::message.
struct GramTrialErrorInfo {
    GramTrialError error;
    const char* name;
    const char* exception;
    const char* meaning;
};

/// The name, exception and meaning of every GramTrialError, in the order of their values.
inline constexpr GramTrialErrorInfo gram_trial_error_table[] = {
    {GramTrialError::none, "none", "", "the trial ran"},
    {GramTrialError::ill_conditioned, "ill_conditioned", "ValueError",
     "K is zero, not positive semidefinite, or too badly conditioned for the positive init"},
    {GramTrialError::minnorm_failed, "minnorm_failed", "RuntimeError", "the minimum-norm QP solver did not finish"},
    {GramTrialError::minnorm_singular, "minnorm_singular", "ValueError",
     "K = X X^T is numerically singular (condition number > 1e13): X needs full row rank"},
    {GramTrialError::not_finite, "not_finite", "ValueError", "the starting point or its loss is not finite"},
    {GramTrialError::labels_invalid, "labels_invalid", "ValueError",
     "y is not usable: a label is not finite, or the loss 1/2 ||y||^2 overflows or underflows float64"},
    {GramTrialError::step_invalid, "step_invalid", "ValueError",
     "the default step over- or underflows, or the given eta is below machine epsilon times it"},
};

/// The row of gram_trial_error_table of a code.
constexpr const GramTrialErrorInfo& gram_trial_error_info(GramTrialError e) {
    return gram_trial_error_table[static_cast<std::size_t>(e)];
}

namespace detail {
constexpr bool gram_trial_error_table_in_order() {
    for (std::size_t i = 0; i < std::size(gram_trial_error_table); ++i)
        if (static_cast<std::size_t>(gram_trial_error_table[i].error) != i) return false;
    return true;
}
}  // namespace detail
static_assert(detail::gram_trial_error_table_in_order(),
              "gram_trial_error_table's rows must follow the values of GramTrialError");

struct GramTrialResult {
    RunSummary run;
    double eta = 0, tol = 0, mu1 = 0, mun = 0, cond = 0;
    double gap = std::numeric_limits<double>::quiet_NaN(), gap_normalized = std::numeric_limits<double>::quiet_NaN();
    double certificate = std::numeric_limits<double>::quiet_NaN();  // largest KKT residual of w*
    Status qp_status = Status::optimal;                             // of the minimum-norm QP (when solved)
    std::int64_t n_pos = 0, n_neg = 0;
    GramTrialError error = GramTrialError::none;
    /// The error's text, empty without one: the words of the general path for the same trial
    /// (refusal_message() of gd/refusal.hpp for a refused start, minnorm's for the QP).
    std::string message;
};

/// The error column of a trial as the sweep stores it: "<exception>: <message>", "" without an error.
inline std::string gram_trial_error_text(const GramTrialResult& r) {
    if (r.error == GramTrialError::none) return {};
    return std::string(gram_trial_error_info(r.error).exception) + ": " + r.message;
}

namespace detail {
/// refusal_message() for a refused start of a trial (Gram mode, init="positive", one neuron).
inline std::string trial_refusal(StartCheck check, const ConstVectorRef& y, const Vector& outer, Scalar eps,
                                 const GramTrialSettings& st, RefusedProblem& p) {
    const ConstVectorRef outer_r(outer);
    p.y = &y;
    p.outer = &outer_r;
    PrepareRequest req;
    req.gram_given = true;
    // The sweep's general path gives train eps explicitly (its default computed in Python): the text of a given eps.
    req.eps = eps;
    req.C_alpha = st.C_alpha;
    return refusal_message(check, p, req);
}
}  // namespace detail

// Trains and measures one trial on a given K (n x n) and y (n).
// @throws std::invalid_argument unless K is square and finite and y has n entries
// (checked in every build type; labels that are not usable give labels_invalid).
inline GramTrialResult gram_trial(const ConstMatrixRef& K, const ConstVectorRef& y, const GramTrialSettings& st) {
    const Index n = K.rows();
    detail::require_square("K", n, K.cols());
    detail::require_size("y", y.size(), n, "n");
    detail::require_finite("K", K);
    const simd::ThreadCap cap(st.simd_level);
    GramTrialResult out;
    for (Index i = 0; i < n; ++i) (y[i] > 0 ? out.n_pos : out.n_neg) += 1;
    Vector outer = Vector::Constant(1, st.sign);
    if (!labels_usable(y)) {
        out.error = GramTrialError::labels_invalid;
        RefusedProblem refused;
        out.message = detail::trial_refusal(StartCheck::labels_invalid, y, outer, st.eps, st, refused);
        return out;
    }
    extreme_eigenvalues(K, out.mu1, out.mun);
    out.cond = out.mun > 0 ? out.mu1 / out.mun : std::numeric_limits<double>::infinity();
    Eigen::LLT<RowMatrix> llt(n);
    if (const StartCheck c = factor_gram(K, st.max_condition, std::pair(out.mu1, out.mun), llt); c != StartCheck::ok) {
        out.error = GramTrialError::ill_conditioned;
        RefusedProblem refused;
        // The message reads the ends of the spectrum and n.
        Vector mu = Vector::Constant(n, out.mun);
        mu[n - 1] = out.mu1;
        const ConstVectorRef mu_r(mu);
        refused.mu = &mu_r;
        out.message = detail::trial_refusal(c, y, outer, st.eps, st, refused);
        return out;
    }
    RowMatrix beta0 = RowMatrix::Constant(1, n, st.eps > 0 ? st.eps : default_offset(y, 1, st.C_alpha));
    RowMatrix alpha0 = llt.solve(beta0.transpose()).transpose();
    // The checks and defaults of prepare's finish: a finite start and starting loss, the step, the tolerance.
    Vector h0(n);
    if (!alpha0.allFinite() || !std::isfinite(0.5 * start_residual(outer, beta0, y, st, h0))) {
        out.error = GramTrialError::not_finite;
        RefusedProblem refused;
        const ConstMatrixRef beta_r(beta0), alpha_r(alpha0);
        refused.beta0 = &beta_r;
        refused.alpha0 = &alpha_r;
        out.message = detail::trial_refusal(StartCheck::start_not_finite, y, outer, beta0(0, 0), st, refused);
        return out;
    }
    out.eta = st.eta;
    if (!start_step(st.loss, n, sum_of_squares(outer), out.mu1, out.eta)) {
        out.error = GramTrialError::step_invalid;
        RefusedProblem refused;
        refused.eta = st.eta;
        refused.mu1 = out.mu1;
        out.message = detail::trial_refusal(StartCheck::step_invalid, y, outer, st.eps, st, refused);
        return out;
    }
    const double y_sq = sum_of_squares(y);
    out.tol = start_tolerance(st, out.mu1, std::sqrt(y_sq), y_sq > 0 ? 0.0 : std::sqrt(sum_of_squares(h0)));
    GDSettings s;
    s.eta = out.eta;
    s.tol = out.tol;
    s.max_steps = st.max_steps;
    DualGD::Start start;
    start.outer = std::move(outer);
    start.alpha = std::move(alpha0);
    start.beta = std::move(beta0);
    DualGD engine(borrow, K, y, std::move(start), s);  // K outlives the engine: no copy per trial
    out.run = engine.run(nullptr);
    // train's rule: no non-finite number leaves in a result not marked diverged.
    if (out.run.status != Status::diverged && !(engine.alpha().allFinite() && engine.beta().allFinite() &&
                                                std::isfinite(out.run.loss) && std::isfinite(out.run.grad_norm)))
        out.run.status = Status::diverged;
    if (!st.minnorm) return out;
    // relucore.minnorm's positive-definiteness test on the Cholesky factor.
    const auto& Lf = llt.matrixLLT();
    double min_piv = std::numeric_limits<double>::infinity(), max_diag = 0;
    for (Index i = 0; i < n; ++i) {
        min_piv = std::min(min_piv, Lf(i, i) * Lf(i, i));
        max_diag = std::max(max_diag, K(i, i));
    }
    if (min_piv < defaults::minnorm_pivot_rtol * max_diag) {
        out.error = GramTrialError::minnorm_singular;
        out.message = gram_trial_error_info(out.error).meaning;  // relucore.minnorm's words
        return out;
    }
    // K (square, finite) and y (n entries, finite: labels_usable) are checked above.
    detail::require_nonzero("s", st.sign);
    const MinNorm1Result mn = detail::minnorm_single_gram_checked(K, y, st.sign, QPSettings{});
    out.qp_status = mn.status;
    out.certificate =
        std::max(std::max(mn.stationarity, mn.primal_feasibility), std::max(mn.dual_feasibility, mn.complementarity));
    if (mn.status != Status::optimal) {
        out.error = GramTrialError::minnorm_failed;
        // The head of the general path's text, which goes on with the KKT residuals of its own solve.
        out.message = std::string("minnorm failed: active-set solver failed (") + status_message(mn.status) + ")";
        return out;
    }
    const Vector diff = engine.alpha().row(0).transpose() - mn.z;
    out.gap = std::sqrt(std::max(diff.dot(K * diff), 0.0));
    // Theorem 2 normalises by the examples the neuron leaves inactive.
    const std::int64_t n_off = st.sign > 0 ? out.n_neg : out.n_pos;
    if (n_off > 0) out.gap_normalized = out.gap * std::sqrt(st.norm1 / static_cast<double>(n_off));
    return out;
}

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
