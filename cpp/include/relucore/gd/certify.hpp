// The certificate of a GD state: the proof that its activation pattern stays frozen for all
// later steps, with the floating-point error of the proof's own computation (docs/math.md §13,
// "The certificate" and "Floating-point error of the proof"). Used by train(steps=np.inf).
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/gd/linear_phase.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {
namespace flow {

/// The outcome of one try of the proof at a GD state.
struct GDCertificate {
    enum Status : int { holds = 0, not_contracting = 1, diverges = 2, fails = 3 };
    Status status = fails;
    double margin = -std::numeric_limits<double>::infinity();
    double contraction = std::numeric_limits<double>::quiet_NaN();  ///< rho (upper bound)
    double fp_error = std::numeric_limits<double>::quiet_NaN();     ///< largest fp_ki of the moving entries
    double lam_max = 0.0;                                           ///< computed mu_max(M)
    Index k = -1, i = -1;                                           ///< the entry with the smallest slack (fails)
    double limit = 0.0, bound = 0.0, err = 0.0;                     ///< its beta_inf, deviation bound and fp bound
    /// GD steps after which the proof holds if the pattern stays: 0 when it holds, -1 when no
    /// estimate, -2 when no number of steps makes it hold (some sigma beta_inf <= its fp bound).
    std::int64_t need = -1;
    Phase phase;
};

namespace certify_detail {

constexpr double kUnit = std::numeric_limits<double>::epsilon() / 2;

/// Higham's gamma_k = k u / (1 - k u).
inline double gamma_k(double k) {
    return k * kUnit / (1.0 - k * kUnit);
}

}  // namespace certify_detail

/// Tries the proof at the state (alpha, beta) of GD with step eta (docs/math.md §13).
inline GDCertificate certify_gd(const Mat& K, const Vec& y, const Vec& signs, const RowMatrix& alpha,
                                const RowMatrix& beta, double eta) {
    using certify_detail::gamma_k;
    using certify_detail::kUnit;
    const Index m = beta.rows(), n = beta.cols();
    const BoolMat active = beta.array() > 0;
    GDCertificate out;
    out.phase = linear_phase(K, y, signs, alpha, beta, active, BoolMat::Constant(m, n, false));
    const Phase& ph = out.phase;
    const Index nAi = static_cast<Index>(ph.A.size());
    if (nAi == 0) {
        out.status = GDCertificate::holds;
        out.margin = std::numeric_limits<double>::infinity();
        out.contraction = out.fp_error = 0.0;
        out.need = 0;
        return out;
    }
    out.lam_max = ph.lam(nAi - 1);
    // Error terms: bounds on mu_min(M), mu_max(M), ||z|| and every computed beta_inf entry.
    const double nA = static_cast<double>(nAi), md = static_cast<double>(m);
    const double s2 = signs.squaredNorm();
    double kaa = 0.0;
    for (Index a = 0; a < nAi; ++a)
        for (Index b = 0; b < nAi; ++b)
            kaa += K(ph.A[detail::idx(a)], ph.A[detail::idx(b)]) * K(ph.A[detail::idx(a)], ph.A[detail::idx(b)]);
    const double nKA = std::sqrt(kaa), nM = ph.M.norm();
    const double dM = (gamma_k(md + 2) + gamma_k(2 * nA + 2)) * s2 * nKA;
    const double dlam = 8 * nA * kUnit * nM + dM;
    const double lam_lo = ph.lam(0) - dlam, lam_hi = ph.lam(nAi - 1) + dlam;
    if (!(lam_lo > 0)) {
        out.status = GDCertificate::not_contracting;
        return out;
    }
    const double nz = ph.z.norm();
    const double res = (ph.rA - ph.M * ph.z).norm() + gamma_k(nA + 1) * (ph.rA.norm() + nM * nz) + dM * nz;
    const double dz = res / lam_lo, zbound = nz + dz;
    const double rho = std::max(std::abs(1 - eta * lam_lo), std::abs(1 - eta * lam_hi)) * (1 + 4 * kUnit);
    out.contraction = rho;
    if (rho >= 1) {
        out.status = GDCertificate::diverges;
        return out;
    }
    // Per entry: slack = sigma beta_inf - ||(B_k)_i|| rho ||z|| - fp, over the neurons that move.
    const double gB = 1 + gamma_k(nA + 1), g2 = gamma_k(nA + 2), gg = gamma_k(2);
    const Vec az = ph.z.cwiseAbs();
    double margin = std::numeric_limits<double>::infinity(), fp = 0.0, ratio = std::numeric_limits<double>::infinity();
    bool any = false, room_ok = true;
    for (Index k = 0; k < m; ++k) {
        if (!active.row(k).any()) continue;  // a neuron with no active entry never moves again (exactly)
        any = true;
        const Mat& B = ph.B[detail::idx(k)];
        for (Index i = 0; i < n; ++i) {
            const double Bn = std::sqrt(B.row(i).squaredNorm()) * gB;
            const double ab = std::abs(beta(k, i));
            const double err = Bn * dz + g2 * (ab + B.row(i).cwiseAbs().dot(az)) + gg * ab;
            const double bound = Bn * rho * zbound;
            const double lim = ph.beta_inf(k, i), sl = (active(k, i) ? lim : -lim);
            const double slack = sl - bound - err;
            fp = std::max(fp, err);
            if (slack < margin) {
                margin = slack;
                out.k = k;
                out.i = i;
                out.limit = lim;
                out.bound = bound;
                out.err = err;
            }
            const double room = sl - err;
            if (!(room > 0)) room_ok = false;
            if (bound > 0) ratio = std::min(ratio, room / bound);
        }
    }
    out.margin = any ? margin : std::numeric_limits<double>::infinity();
    out.fp_error = any ? fp : 0.0;
    if (out.margin > 0) {
        out.status = GDCertificate::holds;
        out.need = 0;
        return out;
    }
    out.status = GDCertificate::fails;
    if (!room_ok)
        out.need = -2;
    else if (rho > 0)
        out.need =
            (0 < ratio && ratio < 1) ? static_cast<std::int64_t>(std::ceil(std::log(ratio) / std::log(rho))) + 1 : 1;
    return out;
}

}  // namespace flow
}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
