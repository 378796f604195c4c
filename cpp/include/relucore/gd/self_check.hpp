// The self-check of a limit (docs/math.md §13, "The self-check"): before a certified GD limit or a
// flow limit is reported, its returned state is checked against what the proof claims, from K, y,
// the signs and the returned arrays alone, with the rounding model of docs/math.md §13. The proof
// and the check share no intermediate quantity but the per-entry error bounds fp_ki the proof
// states, so a wrong step of the proof (an underflow, an overflow, a NaN hidden in a comparison)
// turns the result into "not certified" instead of a wrong "holds".
#pragma once

#include "relucore/gd/linear_phase.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace relucore::flow {

namespace certify_detail {

constexpr double kUnit = std::numeric_limits<double>::epsilon() / 2;

/// Higham's gamma_k = k u / (1 - k u).
inline double gamma_k(double k) {
    return k * kUnit / (1.0 - k * kUnit);
}

}  // namespace certify_detail

/// What a limit claims about its returned state.
struct LimitClaim {
    const BoolMat* pattern = nullptr;  ///< the certified pattern of the returned beta (null: not claimed)
    const BoolMat* sliding = nullptr;  ///< entries held at zero (flow), not counted in the margin
    const RowMatrix* fp = nullptr;     ///< per-entry bound on |beta - beta_limit| from rounding (null: 0)
    double margin = 0.0;               ///< every moving sigma_ki beta_ki is at least this (entry_margin)
    bool entry_margin = true;          ///< the margin bounds the entries (else it is another slack)
    double motion = 0.0;               ///< proved bound on |beta - beta_limit| from the rest of the motion
    /// The residual the phase was solved with, when it is not the one of beta0 (the flow carries it in
    /// modal form); the limit is then stationary to |r(beta0) - r_start| (the error of beta0 it reveals).
    const Vec* r_start = nullptr;
    std::vector<std::pair<const char*, double>> terms;  ///< named bound terms, each must be finite
};

namespace check_detail {

inline std::string num(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", x);
    return buf;
}

inline std::string entry(const char* what, Index k, Index i) {
    return std::string(what) + "[" + std::to_string(k) + ", " + std::to_string(i) + "]";
}

}  // namespace check_detail

/// Checks the returned state (alpha, beta) of a limit reached from the state (alpha0, beta0) the proof
/// started from; returns the reason it fails, empty when every claim holds:
///  - every array and bound term is finite, the margin finite and >= 0 (when some entry is active);
///  - the pattern of beta is the certified one, every moving sigma_ki beta_ki at least the margin;
///  - stationarity: on every example i active in some neuron, the residual r_i is within
///    gamma_{m+1} (sum_k |s_k| relu(beta_ki) + |y_i|) + sum_k |s_k| (fp_ki + motion), its rounding and the
///    distance to the exact limit (where r_A = 0);
///  - beta - K alpha is what it was at the proof's start, within the dot-product bound
///    2 gamma_{n+2} (|K| (|alpha| + |alpha0| + 2 |alpha - alpha0|) + |beta| + |beta0|) (the proof moves beta
///    by B_k z and alpha by C_k z with B_k = K C_k; neurons with sliding entries are not checked here:
///    their B_k carries the rounding of a Schur complement).
inline std::string check_limit(const Mat& K, const Vec& y, const Vec& signs, const RowMatrix& alpha0,
                               const RowMatrix& beta0, const RowMatrix& alpha, const RowMatrix& beta,
                               const LimitClaim& c) {
    using certify_detail::gamma_k;
    using check_detail::entry;
    using check_detail::num;
    const Index m = beta.rows(), n = beta.cols();
    if (!alpha.allFinite() || !beta.allFinite()) return "the returned alpha or beta is not finite";
    for (const auto& [name, value] : c.terms)
        if (!std::isfinite(value)) return std::string("the bound term ") + name + " = " + num(value) + " is not finite";
    if (c.fp && !c.fp->allFinite()) return "a floating-point bound fp_ki is not finite";
    const bool any_active = (beta.array() > 0).any();
    // With no active entry nothing moves again (the gradient is zero exactly): no margin is claimed.
    // A margin of 0 is an inactive entry that ends exactly at zero (a flow's "off" event), where the
    // ReLU's derivative 0 keeps it.
    if (any_active && !(c.margin >= 0 && std::isfinite(c.margin)))
        return "the margin " + num(c.margin) + " is not a finite number >= 0";
    auto slides = [&](Index k, Index i) { return c.sliding && (*c.sliding)(k, i); };
    if (c.pattern) {
        for (Index k = 0; k < m; ++k) {
            const bool moves = c.pattern->row(k).any();
            for (Index i = 0; i < n; ++i) {
                const bool on = beta(k, i) > 0;
                if (on != (*c.pattern)(k, i))
                    return "the returned " + entry("beta", k, i) + " = " + num(beta(k, i)) +
                           " has not the certified sign (" + (on ? "inactive" : "active") + ")";
                const double sb = on ? beta(k, i) : -beta(k, i);
                if (c.entry_margin && moves && !slides(k, i) && !(sb >= c.margin))
                    return "the returned " + entry("beta", k, i) + " = " + num(beta(k, i)) +
                           " is closer to zero than the margin " + num(c.margin);
            }
        }
    }
    double sabs = 0.0;
    for (Index k = 0; k < m; ++k) sabs += std::abs(signs(k));
    const double g_r = gamma_k(static_cast<double>(m + 1));
    for (Index i = 0; i < n; ++i) {
        double r = -y(i), f = std::abs(y(i)), away = c.motion * sabs;
        if (c.r_start) {
            double r0 = -y(i), f0 = std::abs(y(i));
            for (Index k = 0; k < m; ++k)
                if (beta0(k, i) > 0) {
                    r0 += signs(k) * beta0(k, i);
                    f0 += std::abs(signs(k)) * beta0(k, i);
                }
            away += std::abs(r0 - (*c.r_start)(i)) + g_r * f0;
        }
        bool inA = false;
        for (Index k = 0; k < m; ++k)
            if (beta(k, i) > 0) {
                r += signs(k) * beta(k, i);
                f += std::abs(signs(k)) * beta(k, i);
                if (c.fp) away += std::abs(signs(k)) * (*c.fp)(k, i);
                inA = true;
            }
        const double bound = g_r * f + away * (1 + gamma_k(static_cast<double>(m + 2)));
        if (inA && !(std::abs(r) <= bound))
            return "the returned point is not stationary: the residual on active example " + std::to_string(i) +
                   " is " + num(r) + ", beyond its bound " + num(bound);
    }
    const double g_n = gamma_k(static_cast<double>(n + 2));
    const Mat aK = K.cwiseAbs();
    for (Index k = 0; k < m; ++k) {
        if (c.sliding && c.sliding->row(k).any()) continue;
        const Vec a = alpha.row(k).transpose(), a0 = alpha0.row(k).transpose();
        const Vec now = beta.row(k).transpose() - K * a, then = beta0.row(k).transpose() - K * a0;
        const Vec scale = aK * (a.cwiseAbs() + a0.cwiseAbs() + 2 * (a - a0).cwiseAbs());
        for (Index i = 0; i < n; ++i) {
            const double bound = 2 * g_n * (scale(i) + std::abs(beta(k, i)) + std::abs(beta0(k, i)));
            const double dev = std::abs(now(i) - then(i));
            if (!(dev <= bound))
                return "beta = K alpha does not hold at the returned point: " + entry("beta - K alpha", k, i) +
                       " moved by " + num(dev) + " from the proof's start, beyond its dot-product bound " + num(bound);
        }
    }
    return {};
}

}  // namespace relucore::flow
