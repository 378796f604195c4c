/// @file gd/norm_bound.hpp
/// The dual-form squared gradient norm sum_k u_k^T K u_k with a rigorous bound on its rounding error
/// (docs/math.md, "Rounding of the dual-form gradient norm"), and the one rule that decides whether a
/// gradient norm so computed is provably below a tolerance. With K singular (collinear or duplicate
/// examples, n > d) the sum cancels: a computed value below tol proves nothing unless the bound says so.
#pragma once

#include "relucore/core/abi.hpp"
#include "relucore/core/types.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

/// sum_k u_k^T K u_k as computed by dual_norm_sq() and the bound on its rounding error, both in units
/// of 2^scale: the exact value is 2^scale * (sq + e) with |e| <= bound, for any evaluation order of
/// the sum (with or without fused multiply-adds).
struct DualNormSq {
    Scalar sq = 0;     ///< the computed sum, scaled by 2^-scale
    Scalar bound = 0;  ///< bound on |computed - exact|, scaled by 2^-scale
    int scale = 0;     ///< binary exponent of the units (K and U are scaled by powers of two, exactly)

    /// Whether the norm sqrt(sum_k u_k^T K u_k) is provably below `tol`: sq and bound finite and
    /// sq + bound <= tol^2 (in the units of sq, with 4u of slack for the comparison's own roundings). NaN or a non-finite sum is never below tol.
    bool provably_below(Scalar tol) const {
        if (!std::isfinite(sq) || !std::isfinite(bound)) return false;
        // tol^2 in units of 2^scale: tol scaled by a power of two (exact unless it under- or overflows).
        const Scalar t = std::ldexp(tol, -(scale / 2));
        const Scalar t2 = std::ldexp(t * t, -(scale % 2));
        // 4u of slack on tol^2 covers the roundings of t * t and of sq + bound (relative u each).
        constexpr Scalar u = std::numeric_limits<Scalar>::epsilon() / 2;
        return sq + bound <= t2 * (1 - 4 * u);
    }
    /// A bound on the rounding error of the norm sqrt(sum_k u_k^T K u_k) itself, in its units:
    /// sqrt(2^scale bound), since |sqrt(a) - sqrt(b)| <= sqrt(|a - b|).
    Scalar norm_bound() const { return std::sqrt(bound) * std::exp2(0.5 * scale); }
};

/// sum_k u_k^T K u_k of the m rows u_k of U (m x n) with K (n x n), and a rigorous bound on the
/// rounding error of that sum as computed by any order of evaluation: each term K_ij u_ki u_kj passes
/// through at most N = n + m n roundings (n in (K u_k)_i, one product, m n - 1 additions), so
/// |computed - exact| <= gamma_N sum_k |u_k|^T |K| |u_k| with gamma_N = N u / (1 - N u), u = 2^-53
/// (the standard model of floating-point dot products). The absolute sum is itself computed, so it is
/// divided by 1 - gamma_N; K and U are first scaled by powers of two (exact) so that their largest
/// entries are near 1, and n^2 m + m n times the smallest subnormal covers underflow in the products.
/// Costs O(m n^2): callers compute it only where a computed norm is below a tolerance.
template <class KMatrix, class UMatrix>
DualNormSq dual_norm_sq(const KMatrix& K, const UMatrix& U) {
    DualNormSq out;
    const Index m = U.rows();
    const Index n = U.cols();
    Scalar cu = 0, ck = 0;
    for (Index k = 0; k < m; ++k)
        for (Index i = 0; i < n; ++i) cu = std::max(cu, std::abs(U(k, i)));
    for (Index i = 0; i < n; ++i)
        for (Index j = 0; j < n; ++j) ck = std::max(ck, std::abs(K(i, j)));
    if (!std::isfinite(cu) || !std::isfinite(ck)) {
        out.sq = out.bound = std::numeric_limits<Scalar>::quiet_NaN();
        return out;
    }
    if (cu == 0 || ck == 0) return out;  // the sum is exactly 0
    int eu = 0, ek = 0;
    std::frexp(cu, &eu);
    std::frexp(ck, &ek);
    out.scale = 2 * eu + ek;
    // x * 2^-e equals ldexp(x, -e) (both exact, or correctly rounded into the subnormals) where 2^-e is
    // a normal number; only the extreme exponents need ldexp itself, a library call per entry.
    const auto scaler = [](int e) {
        const bool normal =
            -e >= std::numeric_limits<Scalar>::min_exponent - 1 && -e <= std::numeric_limits<Scalar>::max_exponent - 1;
        const Scalar f = normal ? std::ldexp(Scalar(1), -e) : Scalar(0);
        return [normal, f, e](Scalar x) { return normal ? x * f : std::ldexp(x, -e); };
    };
    const auto su = scaler(eu);
    const auto sk = scaler(ek);
    Scalar sq = 0, abs_sum = 0;
    for (Index k = 0; k < m; ++k)
        for (Index i = 0; i < n; ++i) {
            const Scalar ui = su(U(k, i));
            if (ui == 0) continue;
            Scalar ku = 0, aku = 0;
            for (Index j = 0; j < n; ++j) {
                const Scalar kij = sk(K(i, j));
                const Scalar uj = su(U(k, j));
                ku += kij * uj;
                aku += std::abs(kij) * std::abs(uj);
            }
            sq += ui * ku;
            abs_sum += std::abs(ui) * aku;
        }
    constexpr Scalar u = std::numeric_limits<Scalar>::epsilon() / 2;
    const Scalar N = static_cast<Scalar>(n) + static_cast<Scalar>(m) * static_cast<Scalar>(n);
    const Scalar gamma = N * u / (1 - N * u);
    const Scalar tiny = (static_cast<Scalar>(n) + 1) * static_cast<Scalar>(n) * static_cast<Scalar>(m) *
                        std::numeric_limits<Scalar>::denorm_min();
    out.sq = sq;
    // Rounded up by the factor (1 + 4u): the three operations forming the bound round it down by at most that.
    out.bound = (gamma * abs_sum / (1 - gamma) + tiny) * (1 + 4 * u);
    return out;
}

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
