// The certificate of a GD state: the proof that its activation pattern stays frozen for all
// later steps, with the floating-point error of the proof's own computation (docs/math.md §13,
// "The certificate" and "Floating-point error of the proof"). Used by train(steps=np.inf).
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/gd/linear_phase.hpp"
#include "relucore/gd/self_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {
namespace flow {

/// The outcome of one try of the proof at a GD state.
struct GDCertificate {
    /// unverified: the proof held, but its returned limit failed the self-check (self_check.hpp).
    enum Status : int { holds = 0, not_contracting = 1, diverges = 2, fails = 3, unverified = 4 };
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
    RowMatrix fp;        ///< fp_ki of every entry of a moving neuron (0 elsewhere; empty before the entry loop)
    std::string reason;  ///< why the self-check failed (unverified)
    Phase phase;
};

/// Rigorous bounds on the computed phase (docs/math.md §13, "Floating-point error of the proof"):
/// mu_min(M) and mu_max(M) within dlam, the solve z = M^{-1} r_A within dz.
struct PhaseBounds {
    double lam_lo = 0.0, lam_hi = 0.0, dz = 0.0, zbound = 0.0;
};

/// The bounds of PhaseBounds for the phase ph of K (nA > 0).
inline PhaseBounds phase_bounds(const Mat& K, const Vec& signs, const Phase& ph) {
    using certify_detail::gamma_k;
    using certify_detail::kUnit;
    const Index nAi = static_cast<Index>(ph.A.size());
    const double nA = static_cast<double>(nAi), md = static_cast<double>(signs.size());
    const double s2 = signs.squaredNorm();
    double kaa = 0.0;
    for (Index a = 0; a < nAi; ++a)
        for (Index b = 0; b < nAi; ++b)
            kaa += K(ph.A[detail::idx(a)], ph.A[detail::idx(b)]) * K(ph.A[detail::idx(a)], ph.A[detail::idx(b)]);
    const double nKA = std::sqrt(kaa), nM = ph.M.norm();
    const double dM = (gamma_k(md + 2) + gamma_k(2 * nA + 2)) * s2 * nKA;
    const double dlam = 8 * nA * kUnit * nM + dM;
    PhaseBounds out;
    out.lam_lo = ph.lam(0) - dlam;
    out.lam_hi = ph.lam(nAi - 1) + dlam;
    const double nz = ph.z.norm();
    const double res = (ph.rA - ph.M * ph.z).norm() + gamma_k(nA + 1) * (ph.rA.norm() + nM * nz) + dM * nz;
    out.dz = res / out.lam_lo;
    out.zbound = nz + out.dz;
    return out;
}

/// fp_ki: the floating-point error bound of the computed beta_inf_ki = beta_ki - (B_k z)_i.
inline double entry_error(const Phase& ph, const RowMatrix& beta, const Vec& az, double dz, Index k, Index i,
                          double* Bnorm = nullptr) {
    using certify_detail::gamma_k;
    const double nA = static_cast<double>(ph.A.size());
    const Mat& B = ph.B[detail::idx(k)];
    const double Bn = std::sqrt(B.row(i).squaredNorm()) * (1 + gamma_k(nA + 1));
    const double ab = std::abs(beta(k, i));
    if (Bnorm) *Bnorm = Bn;
    return Bn * dz + gamma_k(nA + 2) * (ab + B.row(i).cwiseAbs().dot(az)) + gamma_k(2) * ab;
}

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
    const PhaseBounds pb = phase_bounds(K, signs, ph);
    const double lam_lo = pb.lam_lo, lam_hi = pb.lam_hi;
    if (!(lam_lo > 0)) {
        out.status = GDCertificate::not_contracting;
        return out;
    }
    const double dz = pb.dz, zbound = pb.zbound;
    const double rho = std::max(std::abs(1 - eta * lam_lo), std::abs(1 - eta * lam_hi)) * (1 + 4 * kUnit);
    out.contraction = rho;
    if (rho >= 1) {
        out.status = GDCertificate::diverges;
        return out;
    }
    // Per entry: slack = sigma beta_inf - ||(B_k)_i|| rho ||z|| - fp, over the neurons that move.
    const Vec az = ph.z.cwiseAbs();
    out.fp = RowMatrix::Zero(m, n);
    double margin = std::numeric_limits<double>::infinity(), fp = 0.0, ratio = std::numeric_limits<double>::infinity();
    bool any = false, room_ok = true, finite = true;
    for (Index k = 0; k < m; ++k) {
        if (!active.row(k).any()) continue;  // a neuron with no active entry never moves again (exactly)
        any = true;
        for (Index i = 0; i < n; ++i) {
            double Bn = 0.0;
            const double err = entry_error(ph, beta, az, dz, k, i, &Bn);
            out.fp(k, i) = err;
            const double bound = Bn * rho * zbound;
            const double lim = ph.beta_inf(k, i), sl = (active(k, i) ? lim : -lim);
            const double slack = sl - bound - err;
            if (!std::isfinite(slack)) finite = false;
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
        LimitClaim claim;
        claim.pattern = &active;
        claim.fp = &out.fp;
        claim.margin = out.margin;
        claim.terms = {{"slack", finite ? 0.0 : std::numeric_limits<double>::quiet_NaN()},
                       {"contraction", rho},
                       {"fp_error", out.fp_error},
                       {"z bound", zbound},
                       {"lam_lo", lam_lo}};
        out.reason = check_limit(K, y, signs, alpha, beta, ph.alpha_inf, ph.beta_inf, claim);
        out.status = out.reason.empty() ? GDCertificate::holds : GDCertificate::unverified;
        out.need = out.reason.empty() ? 0 : -2;
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
