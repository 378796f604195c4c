/// @file gd/refusal.hpp
/// The one home of the words a refused start is explained in: refusal_message()
/// maps the StartCheck of prepare_start() (gd/prepare.hpp) for one problem to
/// the error text that docs/errors.md lists (its table is executable:
/// tests/reliability/test_errors.py). Where one check covers several causes
/// (a label that is NaN, infinite, too large or too small), the message names
/// the first of them in the order the Python layer validates its arguments
/// (y, X, the labels' scale, signs, eps), so that a problem with one fault is
/// named the same way whichever path found it.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/types.hpp"
#include "relucore/gd/model.hpp"
#include "relucore/gd/positive_start.hpp"
#include "relucore/gd/prepare.hpp"
#include "relucore/gd/scaling.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

/// What refusal_message() reads of one refused problem (views of prepare_start()'s arguments).
struct RefusedProblem {
    const ConstMatrixRef* X = nullptr;  ///< n x d inputs, or nullptr (Gram-only mode)
    const ConstVectorRef* y = nullptr;  ///< n labels
    const ConstVectorRef* outer = nullptr;
    const ConstMatrixRef* K = nullptr;
    const ConstVectorRef* mu = nullptr;  ///< the spectrum of K, ascending (refusals of K)
    const ConstMatrixRef* beta0 = nullptr;
    const ConstMatrixRef* alpha0 = nullptr;
    const ConstMatrixRef* W0 = nullptr;                     ///< nullptr without X
    Scalar eta = 0;                                         ///< the given step (> 0), else 0
    Scalar mu1 = std::numeric_limits<Scalar>::quiet_NaN();  ///< mu_1(K) (the step's refusals; NaN: mu's last)
    std::string init = "positive";                          ///< the init's name
    scaling::Exponents e;  ///< the problem's exponents (scale_not_free, eta_out_of_range)
    Index problem = -1;    ///< its index in a batch of more than one problem (scale_not_free), else -1
};

namespace detail {

/// printf's %.3g, which writes numbers as Python's format spec ".3g" does.
inline std::string g3(Scalar v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", v);
    return buf;
}

/// "Input <name> contains NaN." (or infinity) when a value is not finite, as relucore._validation words it; else "".
template <class Derived>
std::string not_finite(const Eigen::DenseBase<Derived>& a, const char* name) {
    if (a.allFinite()) return {};
    const bool nan = a.derived().array().isNaN().any();
    return std::string("Input ") + name + " contains " + (nan ? "NaN." : "infinity.");
}

inline std::string labels_message(const RefusedProblem& p) {
    const ConstVectorRef& y = *p.y;
    std::string s = not_finite(y, "y");
    if (s.empty() && p.X != nullptr) s = not_finite(*p.X, "X");
    if (!s.empty()) return s;
    const Scalar y_max = y.cwiseAbs().maxCoeff();
    if (!std::isfinite(Scalar(0.5) * static_cast<Scalar>(y.size()) * y_max * y_max))
        return "y is too large: the loss 1/2 ||y||^2 overflows float64 (max |y_i| = " + g3(y_max) + "); rescale y";
    return "y is too small: the loss 1/2 ||y||^2 underflows float64 (max |y_i| = " + g3(y_max) +
           "); rescale y (GD is equivariant: y -> c y with the init scaled by c gives c W)";
}

inline std::string outer_message(const RefusedProblem& p) {
    std::string s = p.X != nullptr ? not_finite(*p.X, "X") : std::string();
    if (s.empty()) s = not_finite(*p.outer, "signs");
    return s.empty() ? "signs (outer-layer weights) must be non-zero" : s;
}

inline std::string gram_not_finite_message(const RefusedProblem& p) {
    if (p.X == nullptr)
        return p.K->allFinite() ? "gram is too large: sums of its entries overflow float64; rescale it"
                                : "Input gram contains NaN or infinity.";
    std::string s = not_finite(*p.X, "X");
    if (!s.empty()) return s;
    return "X is too large: K = X X^T overflows float64 (max |x_ij| = " + g3(p.X->cwiseAbs().maxCoeff()) +
           "); rescale X (GD is equivariant: X -> c X, eta -> eta / c^2 gives the same beta)";
}

/// A K that is zero, tiny, not positive semidefinite or too badly conditioned for the init, from its spectrum.
inline std::string spectrum_message(const RefusedProblem& p, bool gram_given) {
    constexpr Scalar tiny = std::numeric_limits<Scalar>::min();
    const ConstVectorRef& mu = *p.mu;
    const Index n = mu.size();
    const Scalar mu1 = mu[n - 1], mun = mu[0];
    if (!(mu1 > 0))
        return gram_given
                   ? "gram is zero or negative definite; a Gram matrix X X^T is positive semidefinite and non-zero"
                   : "X is all zeros (K = X X^T vanishes); nothing can be trained";
    if (gram_given && mun < -1e-10 * mu1)
        return "gram is not positive semidefinite: smallest eigenvalue " + g3(mun) + " (largest " + g3(mu1) +
               "); a Gram matrix X X^T has none below 0";
    const std::string what = gram_given ? "gram" : "X";
    if (mu1 < tiny)
        return what + " is too small: the largest eigenvalue of K = X X^T is " + g3(mu1) +
               ", below the smallest normal float64 (" + g3(tiny) + "), so K has lost its precision; rescale " + what;
    const Scalar cond = mun > 0 ? mu1 / mun : std::numeric_limits<Scalar>::infinity();
    const std::string d = p.X != nullptr ? ", d=" + std::to_string(p.X->cols()) : std::string();
    return "X is rank-deficient or badly conditioned: cond(K) = " + g3(cond) + " (n=" + std::to_string(n) + d +
           "); init='" + p.init + "' needs K = X X^T invertible (n <= d and linearly independent examples)";
}

/// The largest |v_i|, NaN when one is NaN (as numpy's max).
inline Scalar max_abs(const ConstMatrixRef& v) {
    return v.array().isNaN().any() ? std::numeric_limits<Scalar>::quiet_NaN() : v.cwiseAbs().maxCoeff();
}

/// The starting point or its loss overflows: the part that does, and the options that set its scale.
inline std::string start_message(const RefusedProblem& p, bool eps_default) {
    std::string culprit = p.init == "disjoint"   ? "eps, C_g"
                          : p.init == "gaussian" ? "init_scale"
                          : p.init == "array"    ? "init"
                                                 : "eps";
    if (eps_default && (p.init == "positive" || p.init == "disjoint"))
        culprit += ", C_alpha (default eps = y_min / (C_alpha m))";
    culprit += ", signs and the scale of X";
    const char* part = !p.beta0->allFinite()                     ? "beta0"
                       : !p.alpha0->allFinite()                  ? "alpha0"
                       : (p.W0 != nullptr && !p.W0->allFinite()) ? "W0"
                                                                 : nullptr;
    if (part != nullptr)
        return std::string("the starting point is too large: ") + part + " overflows float64 (check " + culprit +
               "; max |beta0| = " + g3(max_abs(*p.beta0)) + ")";
    return "the starting point is too large: its loss overflows float64 (check " + culprit + ")";
}

/// The default step over- or underflows, or the given one is below machine epsilon times it.
inline std::string step_message(const RefusedProblem& p, Loss loss, bool gram_given) {
    const Scalar s2 = sum_of_squares(*p.outer);
    const Scalar mu1 = std::isnan(p.mu1) ? (*p.mu)[p.mu->size() - 1] : p.mu1;
    const Scalar eta_default = default_step(loss, p.y->size(), s2, mu1);
    if (!std::isfinite(eta_default) || !(eta_default >= std::numeric_limits<Scalar>::min())) {
        const bool small = !std::isfinite(eta_default);
        return std::string("the default step 1/(||s||^2 mu_1(K)) ") + (small ? "overflows" : "underflows") +
               " (||s||^2 = " + g3(s2) + ", mu_1(K) = " + g3(mu1) + "): signs or " + (gram_given ? "gram" : "X") +
               " are too " + (small ? "small" : "large") + "; rescale them";
    }
    return "eta = " + g3(p.eta) + " is too small: it is below machine epsilon times the default step (" +
           g3(eta_default) + "), so a GD step would not change the state in float64";
}

}  // namespace detail

/// The error text of docs/errors.md for a problem that prepare_start() refused with `check` (not ok).
inline std::string refusal_message(StartCheck check, const RefusedProblem& p, const PrepareRequest& req) {
    switch (check) {
        case StartCheck::labels_invalid:
            return detail::labels_message(p);
        case StartCheck::outer_invalid:
            return detail::outer_message(p);
        case StartCheck::gram_not_finite:
            return detail::gram_not_finite_message(p);
        case StartCheck::eps_invalid: {
            const Scalar eps = default_offset(*p.y, p.outer->size(), req.C_alpha);
            if (req.eps == 0 && !std::isfinite(eps))
                return "C_alpha = " + detail::g3(req.C_alpha) +
                       " is too small: the default eps = y_min / (C_alpha m) overflows";
            return "eps must be positive (the 'positive' and 'disjoint' inits need 0 < eps)";
        }
        case StartCheck::start_not_finite:
            return detail::start_message(p, req.eps == 0);
        case StartCheck::step_invalid:
            return detail::step_message(p, req.loss, req.gram_given);
        case StartCheck::gram_degenerate:
        case StartCheck::ill_conditioned:
        case StartCheck::not_definite:
            return detail::spectrum_message(p, req.gram_given);
        case StartCheck::ok:
            break;
        case StartCheck::scale_not_free:
            return scaling::out_of_range_message(req.not_scale_free, p.e, p.X == nullptr, p.problem);
        case StartCheck::eta_out_of_range:
            return scaling::eta_out_of_range_message(p.eta, p.e);
        case StartCheck::scale_out_of_range:
            return "the scale of the data may lie outside the range that runs unscaled (not a refusal: the caller "
                   "rescales the problem exactly)";
    }
    return "the start was prepared (no refusal)";
}

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
