/// @file gd/scaling.hpp
/// Exact power-of-two normalisation of a problem's scale (docs/errors.md, "Scale of the data"): the
/// one home of the exponent rule, the units, the exact arithmetic and the refusals' texts.
///
/// The network h(x) = sum_k s_k phi(w_k^T x) without bias, with a fixed outer layer and the square
/// loss, is positively homogeneous: X -> 2^-a X and y -> 2^-b y map gradient descent's whole
/// trajectory onto itself, with W -> 2^(a-b) W, beta -> 2^-b beta, alpha -> 2^(2a-b) alpha,
/// eta -> 4^a eta, ||grad|| -> 2^-(a+b) ||grad|| and loss -> 4^-b loss. With powers of two every
/// floating-point operation of the run scales exactly, so a problem far from unit scale runs on its
/// normalised copy and every result is scaled back without rounding.
///
/// A problem whose binary exponents (of max |x_ij|, half (floor) that of max |K_ij| in Gram-only
/// mode, and of max |y_i|) lie within +-defaults::scale_exponent runs unscaled, so that ordinary
/// calls keep their bits. The O(n) test that flags the problems which may lie outside that range is
/// scale_may_be_out_of_range() of gd/positive_start.hpp.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/types.hpp"
#include "relucore/defaults.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {
namespace scaling {

/// The units of a quantity: it scales as 2^(x ex + y ey) when X -> 2^ex X and y -> 2^ey y.
struct Unit {
    int x = 0;
    int y = 0;
};

/// The units of every quantity (named as relucore._scaling names them).
namespace units {
inline constexpr Unit X{1, 0};
inline constexpr Unit K{2, 0};           ///< K, mu_1
inline constexpr Unit Y{0, 1};           ///< y, beta, eps, the certificate's margins and error bounds
inline constexpr Unit W{-1, 1};          ///< the inner weights
inline constexpr Unit ALPHA{-2, 1};      ///< the dual coordinates
inline constexpr Unit ETA{-2, 0};        ///< eta, and gradient-flow time
inline constexpr Unit GRAD{1, 1};        ///< gradient norms and tol
inline constexpr Unit LOSS{0, 2};        ///< the loss
inline constexpr Unit OBJECTIVE{-2, 2};  ///< 1/2 sum ||w_k||^2 (minnorm), as |W|^2
}  // namespace units

/// The binary exponents of one problem: X was divided by 2^ex and y by 2^ey (0, 0: unscaled).
struct Exponents {
    int ex = 0;
    int ey = 0;
};

/// The exponent of the factor 2^p of a quantity of unit u.
constexpr int power(Unit u, Exponents e) {
    return u.x * e.ex + u.y * e.ey;
}

/// The binary exponent e of max |a_i| (max |a_i| = f 2^e with f in [0.5, 1)); 0 for an empty or
/// all-zero a, and for an a with an entry that is not finite (the data's checks refuse it).
inline int binary_exponent(const Scalar* a, Index n) {
    Scalar top = 0;
    for (Index i = 0; i < n; ++i) {
        const Scalar v = std::abs(a[i]);
        if (!(v <= std::numeric_limits<Scalar>::max())) return 0;  // inf or NaN
        top = v > top ? v : top;
    }
    int e = 0;
    if (top > 0) std::frexp(top, &e);
    return e;
}

/// Half (floor) of a binary exponent: K -> 4^k K shifts the exponent of max |K_ij| by 2k, so the
/// exponent of X in Gram-only mode is that of max |K_ij| halved.
constexpr int half_exponent(int e) {
    return e >= 0 ? e / 2 : -((1 - e) / 2);
}

/// The exponents of one problem whatever their range: ex of max |x_ij| (X given, n_x entries), else
/// half that of max |K_ij| (K given, n_k entries), else 0; ey of max |y_i|.
inline Exponents exponents_of(const Scalar* X, Index n_x, const Scalar* K, Index n_k, const Scalar* y, Index n) {
    Exponents e;
    if (X != nullptr)
        e.ex = binary_exponent(X, n_x);
    else if (K != nullptr)
        e.ex = half_exponent(binary_exponent(K, n_k));
    e.ey = binary_exponent(y, n);
    return e;
}

/// Whether a binary exponent lies in the range that runs unscaled, +-defaults::scale_exponent.
constexpr bool in_safe_range(int e) {
    return e >= -defaults::scale_exponent && e <= defaults::scale_exponent;
}

/// The rescaling a problem of exponents e needs: e itself where one of them leaves the safe range,
/// else (0, 0), so that a problem's bits do not depend on the other problems of its batch.
constexpr Exponents plan(Exponents e) {
    return in_safe_range(e.ex) && in_safe_range(e.ey) ? Exponents{} : e;
}

/// Whether a problem runs rescaled.
constexpr bool rescaled(Exponents e) {
    return e.ex != 0 || e.ey != 0;
}

/// a_i 2^p in place, correctly rounded (as std::ldexp): one multiply by the normal number 2^p where
/// |p| <= 1022 (it rounds a 2^p once, as ldexp does), ldexp per entry beyond.
inline void scale(Scalar* a, Index n, int p) {
    if (p == 0) return;
    if (std::abs(p) <= 1022) {
        const Scalar f = std::ldexp(Scalar(1), p);
        for (Index i = 0; i < n; ++i) a[i] *= f;
    } else {
        for (Index i = 0; i < n; ++i) a[i] = std::ldexp(a[i], p);
    }
}

/// One problem in the units it runs in: exactly rescaled copies of the data where the exponent
/// rule asks for them (e non-zero), else nothing copied (the caller's data run as they are).
struct RescaledProblem {
    bool flagged = false;  ///< the O(n) scale test flagged it (prepare_start(): e decided exactly)
    Exponents e;           ///< X was divided by 2^e.ex (K by 4^e.ex) and y by 2^e.ey
    RowMatrix X;           ///< X / 2^ex (empty when not rescaled, or without X)
    RowMatrix K;           ///< K / 4^ex (empty when not rescaled, or with X)
    Vector y;              ///< y / 2^ey (empty when not rescaled)
};

/// The plan of one problem (X n x d, or null in Gram-only mode with K given) and its rescaled
/// copies. An O(size of the data) scan of the exponents; a model that is not homogeneous refuses
/// data out of range instead (out_of_range_message()).
inline RescaledProblem rescale_problem(const ConstMatrixRef* X, const ConstMatrixRef* K, const ConstVectorRef& y) {
    RescaledProblem p;
    const ConstMatrixRef* data = X != nullptr ? X : K;
    RowMatrix copy;  // the data as one block, where the caller's rows are strided
    const Scalar* block = nullptr;
    if (data != nullptr) {
        if (data->outerStride() != data->cols()) copy = *data;
        block = copy.size() > 0 ? copy.data() : data->data();
    }
    const Index size = data != nullptr ? data->size() : 0;
    p.e = plan(
        exponents_of(X != nullptr ? block : nullptr, size, X == nullptr ? block : nullptr, size, y.data(), y.size()));
    if (!rescaled(p.e)) return p;
    if (X != nullptr) {
        p.X = *X;
        scale(p.X.data(), p.X.size(), -power(units::X, p.e));
    } else if (K != nullptr) {
        p.K = *K;
        scale(p.K.data(), p.K.size(), -power(units::K, p.e));
    }
    p.y = y;
    scale(p.y.data(), p.y.size(), -power(units::Y, p.e));
    return p;
}

/// Whether an array of unit u computed in the rescaled units fits in float64 once scaled back by the
/// exponents e: its largest entry must stay in [2^-1022, 2^1024) (smaller entries may round into
/// the subnormals: an absolute error of 2^-1074 at most). may_underflow: a number that may be near
/// zero (a loss or a gradient norm), checked for overflow only. An array with an entry that is not
/// finite, or all zero, passes (a diverged or an exact run reports what it reached).
inline bool representable(const Scalar* a, Index n, Unit u, Exponents e, bool may_underflow) {
    Scalar top = 0;
    for (Index i = 0; i < n; ++i) {
        const Scalar v = std::abs(a[i]);
        if (!(v <= std::numeric_limits<Scalar>::max())) return true;
        top = v > top ? v : top;
    }
    if (top == 0) return true;
    int t = 0;
    std::frexp(top, &t);
    const int scaled = t + power(u, e);
    return !(scaled > 1024 || (scaled < -1021 && !may_underflow));
}

/// The refusal of data out of the safe range for a model that no exact rescaling maps onto itself.
/// model names what makes it not homogeneous; gram: the data are a Gram matrix (no X); problem:
/// the index of the problem in a batch of more than one, -1 for a single problem.
inline std::string out_of_range_message(const std::string& model, Exponents e, bool gram, Index problem) {
    const int hi = defaults::scale_exponent;
    std::string what;
    if (!in_safe_range(e.ex))
        what = gram ? "max |K_ij| ~ 2^" + std::to_string(2 * e.ex) : "max |x_ij| ~ 2^" + std::to_string(e.ex);
    else
        what = "max |y_i| ~ 2^" + std::to_string(e.ey);
    const std::string where = problem >= 0 ? " (problem " + std::to_string(problem) + ")" : "";
    return "the scale of the data is out of range for " + model + ": " + what + where +
           "; this model is not invariant under rescaling X and y, so it runs only for max |x_ij| (sqrt max "
           "|K_ij|) and max |y_i| within [2^-" +
           std::to_string(hi) + ", 2^" + std::to_string(hi) +
           "]; rescale the data (and the options in its units) yourself";
}

/// Why the result of a problem, computed on its exactly rescaled copy, cannot be returned in float64.
/// gram: the data are a Gram matrix; problem: its index in a batch, -1 for a single problem.
inline std::string unrepresentable_message(Exponents e, bool gram, Index problem) {
    const std::string data = gram ? "gram" : "X";
    const std::string where = problem >= 0 ? "problem " + std::to_string(problem) + ": " : "";
    const bool small = e.ey - 2 * e.ex > 0;  // the dual coordinates (and weights) are large: X small for the labels
    const std::string what = data + (small ? " is too small (or y too large)" : " is too large (or y too small)");
    const std::string size =
        gram ? "max |K_ij| ~ 2^" + std::to_string(2 * e.ex) : "max |x_ij| ~ 2^" + std::to_string(e.ex);
    return where + what + ": " + size + " and max |y_i| ~ 2^" + std::to_string(e.ey) + ", so the weights (~ 2^" +
           std::to_string(e.ey - e.ex) + "), the dual coordinates (~ 2^" + std::to_string(e.ey - 2 * e.ex) +
           ") or the loss (~ 2^" + std::to_string(2 * e.ey) +
           ") cannot be represented in float64, though the run on the exactly rescaled data succeeded; rescale X "
           "or y (X -> c X, y -> l y maps W -> (l / c) W)";
}

/// printf("%.6g") of a number, as Python's format(x, ".6g") prints a positive finite one.
inline std::string format_g6(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

/// The refusal of a step eta, given in the caller's units, that leaves float64's normal range on the
/// exactly rescaled copy (eta scales as 4^-ex).
inline std::string eta_out_of_range_message(double eta, Exponents e) {
    return "eta = " + format_g6(eta) + " is out of range for data of this scale (max |x_ij| ~ 2^" +
           std::to_string(e.ex) + "): the step is of order 1 / mu_1(K), about 2^" + std::to_string(-2 * e.ex) + " here";
}

/// The refusal of a flow time, given in the caller's units, that leaves float64's normal range on the
/// exactly rescaled copy (a time scales as eta, 1 / K).
inline std::string time_out_of_range_message(double t, Exponents e) {
    const std::string given = format_g6(t);
    return "the time " + given + " cannot be represented for data of this scale (max |x_ij| ~ 2^" +
           std::to_string(e.ex) + "): flow times scale as 1 / K, and this one becomes " + given + " * 2^" +
           std::to_string(-power(units::ETA, e)) +
           " on the exactly rescaled copy of the data, outside float64's normal range";
}

/// Why a minimum-norm solution, computed on the exactly rescaled copy, cannot be returned in float64:
/// data names the data ("X" or "gram"); log2_objective is log2 of 1/2 sum ||w_k||^2 in the caller's
/// units, printed rounded to an integer.
inline std::string minnorm_unrepresentable_message(Exponents e, const std::string& data, double log2_objective) {
    const bool small = e.ex < e.ey;  // the weights are large: X small for the labels
    char objective[32];
    std::snprintf(objective, sizeof objective, "%.0f", log2_objective);
    return data + (small ? " is too small (or y too large)" : " is too large (or y too small)") + ": max |x_ij| ~ 2^" +
           std::to_string(e.ex) + " and max |y_i| ~ 2^" + std::to_string(e.ey) +
           ", so the minimum-norm weights have 1/2 sum ||w_k||^2 ~ 2^" + objective + " (and dual coordinates ~ 2^" +
           std::to_string(e.ey - 2 * e.ex) +
           "), which float64 cannot represent even after an exact rescaling; rescale X or y (X -> c X, y -> l y "
           "maps W -> (l / c) W)";
}

}  // namespace scaling
}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
