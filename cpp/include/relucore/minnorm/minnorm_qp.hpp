// Convex quadratic programs of the minimum-norm problems (docs/theory.md).
//
//     minimise   1/2 z^T H z - c^T z
//     subject to E z = e,   lower <= z <= upper     (bounds may be +-inf)
//
// with H symmetric positive definite. For m = 1 this is the dual of Eq. (7)
// (z = dual coefficients, H = K, bounds: free on S+, z <= 0 on S-); for m >= 2
// the minimum-norm programs of one activation pattern (Lemma 4, Eq. 9) are of
// this form in prediction coordinates (H = blockdiag(K^{-1}), equality rows
// sum_k s_k beta_k,i = y_i, sign bounds on every beta_k,i).
//
// Two active-set methods, both written for this header:
//  * a primal-dual active-set method (block principal pivoting: every
//    variable whose bound status is inconsistent with the current solve flips
//    at once) for problems without equality rows. It usually ends in a handful
//    of solves when H is close to a multiple of the identity, as high-
//    dimensional Gram matrices are, but it is not guaranteed to terminate;
//  * a primal active-set method (one bound enters or leaves the working set
//    per iteration, starting from a feasible point) that is finite for
//    strictly convex problems and also handles the equality rows. It is the
//    fallback when the block method stalls and the method for problems with
//    equalities.
// Both end with a re-solve of the equality-constrained problem on the final
// working set plus one step of iterative refinement.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/checks.hpp"
#include "relucore/core/status.hpp"
#include "relucore/core/types.hpp"
#include "relucore/defaults.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Eigen/LU>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

struct QPSettings {
    int max_block_iter = defaults::minnorm_max_block_iter;  // block pivoting iterations before the fallback
    int stall_limit = defaults::minnorm_stall_limit;        // block iterations without fewer infeasibilities, ditto
    int max_iter = 0;                                       // primal active-set iterations (0: 20 (n + p) + 100)
    double tol = defaults::minnorm_tol;                     // relative tolerance of the sign tests
};

struct QPResult {
    Vector z;                         // solution
    Vector nu;                        // equality multipliers (H z - c + E^T nu = r)
    Vector r;                         // reduced gradient: >= 0 at lower bounds, <= 0 at upper bounds, ~0 elsewhere
    std::vector<signed char> state;   // -1 at lower bound, +1 at upper bound, 0 free
    Status status = Status::optimal;  // optimal, max_iter, singular or infeasible_start (core/status.hpp)
    int block_iterations = 0;
    int primal_iterations = 0;
    bool used_fallback = false;
};

namespace detail {

inline bool is_fixed(signed char s) {
    return s != 0;
}

// Solves the equality-constrained problem with the variables in `state` held at
// their bounds. Returns false when the KKT matrix is singular.
inline bool solve_on_working_set(const Eigen::Ref<const RowMatrix>& H, const Eigen::Ref<const Vector>& c,
                                 const Eigen::Ref<const RowMatrix>& E, const Eigen::Ref<const Vector>& e,
                                 const Vector& lower, const Vector& upper, const std::vector<signed char>& state,
                                 Vector& z, Vector& nu) {
    const Index n = H.rows(), p = E.rows();
    std::vector<Index> F;
    F.reserve(static_cast<size_t>(n));
    for (Index j = 0; j < n; ++j) {
        if (state[idx(j)] < 0)
            z[j] = lower[j];
        else if (state[idx(j)] > 0)
            z[j] = upper[j];
        else
            F.push_back(j);
    }
    const Index nf = static_cast<Index>(F.size());
    // Right-hand side: c_F - H_FW z_W and e - E_W z_W.
    Vector zW = z;
    for (Index j : F) zW[j] = 0.0;
    Vector rhs(nf + p);
    const Vector HzW = H * zW;
    for (Index a = 0; a < nf; ++a) rhs[a] = c[F[idx(a)]] - HzW[F[idx(a)]];
    if (p > 0) rhs.tail(p) = e - E * zW;
    if (nf == 0) {
        nu = Vector::Zero(p);
        if (p == 0) return true;
        // Every variable fixed: the equalities must hold as they are.
        return rhs.tail(p).norm() <= 1e-12 * (1.0 + e.norm());
    }
    RowMatrix Hff(nf, nf);
    for (Index a = 0; a < nf; ++a)
        for (Index b = 0; b < nf; ++b) Hff(a, b) = H(F[idx(a)], F[idx(b)]);
    if (p == 0) {
        Eigen::LLT<Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>> llt(Hff);
        if (llt.info() != Eigen::Success) return false;
        Vector x = llt.solve(rhs);
        // One step of iterative refinement (the re-solve that fixes the last digits).
        Vector res = rhs - Hff * x;
        x += llt.solve(res);
        for (Index a = 0; a < nf; ++a) z[F[idx(a)]] = x[a];
        nu.resize(0);
        return true;
    }
    Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic> KKT =
        Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>::Zero(nf + p, nf + p);
    KKT.topLeftCorner(nf, nf) = Hff;
    for (Index r = 0; r < p; ++r)
        for (Index a = 0; a < nf; ++a) {
            KKT(nf + r, a) = E(r, F[idx(a)]);
            KKT(a, nf + r) = E(r, F[idx(a)]);
        }
    Eigen::FullPivLU<Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>> lu(KKT);
    if (!lu.isInvertible()) return false;
    Vector x = lu.solve(rhs);
    Vector res = rhs - KKT * x;
    x += lu.solve(res);
    for (Index a = 0; a < nf; ++a) z[F[idx(a)]] = x[a];
    // The solve gives the multipliers of E z = e with the sign convention
    // H z - c + E^T nu = 0 on the free variables.
    nu = x.tail(p);
    return true;
}

inline Vector reduced_gradient(const Eigen::Ref<const RowMatrix>& H, const Eigen::Ref<const Vector>& c,
                               const Eigen::Ref<const RowMatrix>& E, const Vector& z, const Vector& nu) {
    Vector r = H * z - c;
    if (E.rows() > 0) r.noalias() += E.transpose() * nu;
    return r;
}

// The working-set entry whose multiplier has the wrong sign by more than threshold, most of all (-1: none).
inline Index most_violated_bound(const std::vector<signed char>& state, const Vector& r, double threshold) {
    Index worst = -1;
    double worst_val = threshold;
    for (Index j = 0; j < static_cast<Index>(state.size()); ++j) {
        double v = 0.0;
        if (state[idx(j)] < 0)
            v = -r[j];
        else if (state[idx(j)] > 0)
            v = r[j];
        if (v > worst_val) {
            worst_val = v;
            worst = j;
        }
    }
    return worst;
}

// Ratio test: shortens tau (<= 1 on entry) to the first bound a free variable hits along step.
inline void longest_feasible_step(const Vector& step, const Vector& z, const Vector& lower, const Vector& upper,
                                  const std::vector<signed char>& state, double& tau, Index& block,
                                  signed char& block_side) {
    for (Index j = 0; j < step.size(); ++j) {
        if (state[idx(j)] != 0) continue;
        if (step[j] < 0 && std::isfinite(lower[j])) {
            const double t = (lower[j] - z[j]) / step[j];
            if (t < tau) {
                tau = t;
                block = j;
                block_side = -1;
            }
        } else if (step[j] > 0 && std::isfinite(upper[j])) {
            const double t = (upper[j] - z[j]) / step[j];
            if (t < tau) {
                tau = t;
                block = j;
                block_side = 1;
            }
        }
    }
}

// solve_qp_primal() on checked arguments (the box method's fallback passes its own).
inline QPResult qp_primal_checked(const Eigen::Ref<const RowMatrix>& H, const Eigen::Ref<const Vector>& c,
                                  const Eigen::Ref<const RowMatrix>& E, const Eigen::Ref<const Vector>& e,
                                  const Vector& lower, const Vector& upper, Vector z, std::vector<signed char> state,
                                  const QPSettings& s) {
    const Index n = H.rows(), p = E.rows();
    QPResult out;
    // All tolerances are relative to the scale of the data (no absolute floor:
    // Gram matrices of huge d make the coordinates tiny).
    const double scale = z.size() ? z.cwiseAbs().maxCoeff() : 0.0;
    for (Index j = 0; j < n; ++j) {
        const double slack = 1e-9 * scale;
        if (z[j] < lower[j] - slack || z[j] > upper[j] + slack) {
            out.status = Status::infeasible_start;
            out.z = z;
            out.state = std::move(state);
            return out;
        }
        z[j] = std::min(std::max(z[j], lower[j]), upper[j]);
        if (state[detail::idx(j)] < 0 && !std::isfinite(lower[j])) state[detail::idx(j)] = 0;
        if (state[detail::idx(j)] > 0 && !std::isfinite(upper[j])) state[detail::idx(j)] = 0;
    }
    const int max_iter = s.max_iter > 0 ? s.max_iter : static_cast<int>(20 * (n + p) + 100);
    Vector znew = z, nu;
    double gscale = c.size() ? c.cwiseAbs().maxCoeff() : 0.0;
    for (int it = 0; it < max_iter; ++it) {
        out.primal_iterations = it + 1;
        znew = z;
        if (!detail::solve_on_working_set(H, c, E, e, lower, upper, state, znew, nu)) {
            out.status = Status::singular;
            break;
        }
        Vector step = znew - z;
        const double zscale = std::max(z.cwiseAbs().maxCoeff(), znew.cwiseAbs().maxCoeff());
        // Steps at rounding level are zero steps: otherwise a bound just
        // released could block again at once and the method would cycle.
        const double step_eps = 1e-13 * zscale;
        for (Index j = 0; j < n; ++j)
            if (std::abs(step[j]) <= step_eps) step[j] = 0.0;
        const double stepnorm = step.cwiseAbs().maxCoeff();
        if (stepnorm == 0.0) {
            z = znew;
            Vector r = detail::reduced_gradient(H, c, E, z, nu);
            gscale = std::max(gscale, (r - (H * z - c)).cwiseAbs().maxCoeff());
            gscale = std::max(gscale, (H * z).cwiseAbs().maxCoeff());
            // Release the working bound whose multiplier has the wrong sign by the most.
            const Index worst = detail::most_violated_bound(state, r, s.tol * gscale);
            if (worst < 0) {
                out.z = z;
                out.nu = nu;
                out.r = r;
                out.state = std::move(state);
                out.status = Status::optimal;
                return out;
            }
            state[detail::idx(worst)] = 0;
            continue;
        }
        // Longest feasible step towards znew; the first bound hit joins the working set.
        double tau = 1.0;
        Index block = -1;
        signed char block_side = 0;
        detail::longest_feasible_step(step, z, lower, upper, state, tau, block, block_side);
        tau = std::max(tau, 0.0);
        z += tau * step;
        if (block >= 0) {
            state[detail::idx(block)] = block_side;
            z[block] = block_side < 0 ? lower[block] : upper[block];
        } else {
            z = znew;  // full step: take the solve's values (no rounding from z + step)
            for (Index j = 0; j < n; ++j)
                if (state[detail::idx(j)] == 0) z[j] = std::min(std::max(z[j], lower[j]), upper[j]);
        }
        if (it + 1 == max_iter) out.status = Status::max_iter;
    }
    if (out.status == Status::optimal) out.status = Status::max_iter;
    out.z = z;
    out.nu = nu.size() == p ? nu : Vector::Zero(p);
    out.r = detail::reduced_gradient(H, c, E, z, out.nu);
    out.state = std::move(state);
    return out;
}

// The checks of both solvers: sizes, finite data, bounds that are not NaN and not crossed.
inline void require_qp(const char* solver, const Eigen::Ref<const RowMatrix>& H, const Eigen::Ref<const Vector>& c,
                       const Vector& lower, const Vector& upper) {
    const Index n = H.rows();
    if (H.cols() != n || c.size() != n || lower.size() != n || upper.size() != n)
        throw std::invalid_argument(std::string(solver) + ": inconsistent sizes");
    require_finite("H", H);
    require_finite("c", c);
    for (Index j = 0; j < n; ++j)
        if (!(lower[j] <= upper[j])) throw std::invalid_argument(std::string(solver) + ": lower > upper");
}

}  // namespace detail

// Primal active-set method from a feasible z (E z = e, bounds), with the given
// initial working set (only variables sitting at a bound may be in it).
// @throws std::invalid_argument unless H is n x n, c, lower, upper, z and state have n entries, E is p x n,
// e has p entries, H, c, E, e and z are finite and lower <= upper (no NaN bound); checked in every build type.
inline QPResult solve_qp_primal(const Eigen::Ref<const RowMatrix>& H, const Eigen::Ref<const Vector>& c,
                                const Eigen::Ref<const RowMatrix>& E, const Eigen::Ref<const Vector>& e,
                                const Vector& lower, const Vector& upper, Vector z, std::vector<signed char> state,
                                const QPSettings& s) {
    detail::require_qp("solve_qp_primal", H, c, lower, upper);
    const Index n = H.rows();
    detail::require_shape("E", E.rows(), E.cols(), E.rows(), n, "p x n");
    detail::require_size("e", e.size(), E.rows(), "p");
    detail::require_size("z", z.size(), n, "n");
    detail::require_size("state", static_cast<Index>(state.size()), n, "n");
    detail::require_finite("E", E);
    detail::require_finite("e", e);
    detail::require_finite("z", z);
    return detail::qp_primal_checked(H, c, E, e, lower, upper, std::move(z), std::move(state), s);
}

namespace detail {

// solve_box_qp() on checked arguments (minnorm_single_gram checks K and y itself).
inline QPResult box_qp_checked(const Eigen::Ref<const RowMatrix>& H, const Eigen::Ref<const Vector>& c,
                               const Vector& lower, const Vector& upper, const QPSettings& s,
                               const std::vector<signed char>* initial_state) {
    const Index n = H.rows();
    const RowMatrix E0(0, n);
    const Vector e0(0);
    std::vector<signed char> state(static_cast<size_t>(n), 0);
    if (initial_state != nullptr && static_cast<Index>(initial_state->size()) == n)
        for (Index j = 0; j < n; ++j) {
            const signed char v = (*initial_state)[static_cast<size_t>(j)];
            if ((v < 0 && std::isfinite(lower[j])) || (v > 0 && std::isfinite(upper[j])))
                state[static_cast<size_t>(j)] = v;
        }
    Vector z = Vector::Zero(n), nu;
    QPResult out;
    Index best = std::numeric_limits<Index>::max();
    int stall = 0;
    bool ok = false;
    for (int it = 0; it < s.max_block_iter; ++it) {
        out.block_iterations = it + 1;
        if (!detail::solve_on_working_set(H, c, E0, e0, lower, upper, state, z, nu)) break;
        const Vector Hz = H * z;
        const Vector r = Hz - c;
        // Infeasibilities: free variables outside their bounds, fixed variables
        // whose multiplier has the wrong sign. Tolerances relative to the
        // largest coordinate and the largest gradient term.
        const double gscale = std::max(c.cwiseAbs().maxCoeff(), Hz.cwiseAbs().maxCoeff());
        const double zt = s.tol * z.cwiseAbs().maxCoeff();
        std::vector<Index> bad;
        for (Index j = 0; j < n; ++j) {
            if (state[detail::idx(j)] == 0) {
                if (z[j] < lower[j] - zt || z[j] > upper[j] + zt) bad.push_back(j);
            } else if ((state[detail::idx(j)] < 0 && r[j] < -s.tol * gscale) ||
                       (state[detail::idx(j)] > 0 && r[j] > s.tol * gscale)) {
                bad.push_back(j);
            }
        }
        if (bad.empty()) {
            ok = true;
            break;
        }
        const Index nb = static_cast<Index>(bad.size());
        if (nb < best) {
            best = nb;
            stall = 0;
        } else if (++stall >= s.stall_limit) {
            break;
        }
        for (Index j : bad) {
            if (state[detail::idx(j)] == 0)
                state[detail::idx(j)] = z[j] < lower[j] ? -1 : 1;
            else
                state[detail::idx(j)] = 0;
        }
    }
    if (ok) {
        for (Index j = 0; j < n; ++j) z[j] = std::min(std::max(z[j], lower[j]), upper[j]);
        out.z = z;
        out.nu = Vector(0);
        out.r = H * z - c;
        out.state = std::move(state);
        out.status = Status::optimal;
        return out;
    }
    // Fallback: start the primal method from the projection of the last iterate,
    // with the variables that sit on a bound in the working set.
    for (Index j = 0; j < n; ++j) {
        if (!std::isfinite(z[j])) z[j] = 0.0;
        if (z[j] <= lower[j]) {
            z[j] = lower[j];
            state[detail::idx(j)] = -1;
        } else if (z[j] >= upper[j]) {
            z[j] = upper[j];
            state[detail::idx(j)] = 1;
        } else {
            state[detail::idx(j)] = 0;
        }
        if (!std::isfinite(z[j])) {
            z[j] = 0.0;
            state[detail::idx(j)] = 0;
        }
    }
    QPResult res = qp_primal_checked(H, c, E0, e0, lower, upper, z, state, s);
    res.block_iterations = out.block_iterations;
    res.used_fallback = true;
    return res;
}

}  // namespace detail

// Bound-constrained problem (no equality rows): block principal pivoting with
// the primal active-set method as a guaranteed fallback. initial_state (size
// n, -1/+1 at the lower/upper bound, 0 free; only finite bounds are used) is
// the first working set to try (default: all free).
// @throws std::invalid_argument unless H is n x n, c, lower and upper have n entries, H and c are finite and
// lower <= upper (no NaN bound); checked in every build type.
inline QPResult solve_box_qp(const Eigen::Ref<const RowMatrix>& H, const Eigen::Ref<const Vector>& c,
                             const Vector& lower, const Vector& upper, const QPSettings& s,
                             const std::vector<signed char>* initial_state = nullptr) {
    detail::require_qp("solve_box_qp", H, c, lower, upper);
    return detail::box_qp_checked(H, c, lower, upper, s, initial_state);
}

// The one-neuron minimum-norm problem in Gram space (Eq. 7, Lemma 3): the dual
//     min 1/2 z^T K z - t+^T z+   s.t.  z_j <= 0 where t_j <= 0,   t = y / s,
// solved by solve_box_qp(), with the KKT residuals of relucore.minnorm's
// Gram-only certificate (relative; 0 = exact): stationarity in the K-norm,
// primal feasibility, dual feasibility and complementarity. w* = X^T z.
// The block method starts from the working set "every constraint of S-
// binds" (w* = X_+^T K_++^{-1} t_+, exact when d >> n, Lemma 3), which usually
// saves the first n x n factorisation.
struct MinNorm1Result {
    Vector z;                         // dual coordinates alpha*
    double objective = 0;             // 1/2 z^T K z
    Status status = Status::optimal;  // how the QP solve ended
    int block_iterations = 0, primal_iterations = 0;
    bool used_fallback = false;
    double stationarity = 0, primal_feasibility = 0, dual_feasibility = 0, complementarity = 0;
};

namespace detail {

/// minnorm_single_gram() on arguments already checked (gram_trial checks K and y before it
/// trains, and would otherwise pass over K once more).
inline MinNorm1Result minnorm_single_gram_checked(const ConstMatrixRef& K, const ConstVectorRef& y, double s,
                                                  const QPSettings& settings) {
    const Index n = K.rows();
    const double inf = std::numeric_limits<double>::infinity();
    Vector t = y / s, c(n), lower = Vector::Constant(n, -inf), upper(n);
    for (Index i = 0; i < n; ++i) {
        const bool fit = t[i] > 0;
        c[i] = fit ? t[i] : 0.0;
        upper[i] = fit ? inf : 0.0;
    }
    std::vector<signed char> guess(static_cast<size_t>(n), 0);
    for (Index i = 0; i < n; ++i)
        if (!(t[i] > 0)) guess[static_cast<size_t>(i)] = 1;
    const QPResult qp = box_qp_checked(K, c, lower, upper, settings, &guess);
    MinNorm1Result out;
    out.z = qp.z;
    out.status = qp.status;
    out.block_iterations = qp.block_iterations;
    out.primal_iterations = qp.primal_iterations;
    out.used_fallback = qp.used_fallback;
    const Vector& z = out.z;
    const Vector beta = K * z;
    // Multipliers: nu_i = z_i on the fitted examples, mu_j = -z_j (>= 0) on the others;
    // phi = nu - max(mu, 0); stationarity ||K^{1/2}(z - phi)|| / ||K^{1/2} z||.
    Vector diff(n);
    double ymax = 0, primal = 0, zmax = 0, dual = 0, comp = 0;
    for (Index i = 0; i < n; ++i) {
        const bool fit = t[i] > 0;
        const double mu = fit ? 0.0 : -z[i];
        const double phi = (fit ? z[i] : 0.0) - std::max(mu, 0.0);
        diff[i] = z[i] - phi;
        ymax = std::max(ymax, std::abs(t[i]));
        primal = std::max(primal, fit ? std::abs(beta[i] - t[i]) : std::max(beta[i], 0.0));
        zmax = std::max(zmax, std::abs(z[i]));
        dual = std::max(dual, std::max(-mu, 0.0));
        if (!fit) comp = std::max(comp, std::abs(mu * beta[i]));
    }
    ymax = std::max(ymax, 1e-300);
    const double zKz = z.dot(beta);
    out.objective = 0.5 * zKz;
    const double wn = std::max(std::sqrt(std::max(zKz, 0.0)), 1e-300);
    out.stationarity = std::sqrt(std::max(diff.dot(K * diff), 0.0)) / wn;
    out.primal_feasibility = primal / ymax;
    const double mscale = std::max(zmax, 1e-300);
    out.dual_feasibility = dual / mscale;
    out.complementarity = comp / std::max(mscale * ymax, 1e-300);
    return out;
}

}  // namespace detail

// @throws std::invalid_argument unless K is square and finite, y has n finite
// entries and s is non-zero and finite (checked in every build type).
inline MinNorm1Result minnorm_single_gram(const ConstMatrixRef& K, const ConstVectorRef& y, double s,
                                          const QPSettings& settings = QPSettings{}) {
    detail::require_square("K", K.rows(), K.cols());
    detail::require_size("y", y.size(), K.rows(), "n");
    detail::require_finite("K", K);
    detail::require_finite("y", y);
    detail::require_nonzero("s", s);
    return detail::minnorm_single_gram_checked(K, y, s, settings);
}

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
