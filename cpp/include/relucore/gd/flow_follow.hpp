// The event loop of the exact gradient flow (docs/math.md §13, events and sliding).
// Included by relucore/gd/flow.hpp.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/status.hpp"

#include "relucore/defaults.hpp"
#include "relucore/gd/certify.hpp"
#include "relucore/gd/flow.hpp"
#include "relucore/gd/run.hpp"
#include "relucore/gd/self_check.hpp"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {
namespace flow {

/// The pattern after an event, with its phase and watched rows already computed.
struct Switched {
    BoolMat active, sliding;
    std::string kind;
    Phase phase;
    Watched rows;
};

/// The first continuation of an event on tag whose own conditions hold at the event
/// (cross, else slide; leave sliding to the side theta reached), or nothing.
inline std::optional<Switched> switch_pattern(const Mat& K, const Vec& y, const Vec& signs, const RowMatrix& alpha,
                                              const RowMatrix& beta, const BoolMat& active, const BoolMat& sliding,
                                              const Tag& tag, const Vec& r) {
    struct Candidate {
        const char* name;
        bool act, sl;
    };
    std::vector<Candidate> cands;
    const bool was = active(tag.k, tag.i);
    if (tag.kind == Kind::beta)
        cands = {{was ? "off" : "on", !was, false}, {"slide", false, true}};
    else if (tag.kind == Kind::theta0)
        cands = {{"leave-off", false, false}};
    else
        cands = {{"leave-on", true, false}};
    for (const auto& c : cands) {
        Switched out{active, sliding, {}, {}, {}};
        out.active(tag.k, tag.i) = c.act;
        out.sliding(tag.k, tag.i) = c.sl;
        out.phase = linear_phase(K, y, signs, alpha, beta, out.active, out.sliding, &r);
        out.rows = watched(out.phase, signs, out.active, out.sliding);
        bool ok = true;
        for (Index j = 0; j < out.rows.a.size() && ok; ++j) {
            double start;
            const Tag& t = out.rows.tags[detail::idx(j)];
            if (t.k == tag.k && t.i == tag.i && leaves_at_zero(out.rows, j, &start)) ok = false;
        }
        if (ok) {
            out.kind = std::string(c.name) + " " + std::to_string(tag.k) + " " + std::to_string(tag.i);
            return out;
        }
    }
    return std::nullopt;
}

/// Everything flow() returns (the Python side packages it).
struct FlowOutput {
    Status status = Status::stuck;  ///< certified, uncertified, t_max, max_events or stuck (core/status.hpp)
    std::string message;
    double t_final = 0.0;
    std::vector<double> event_times;
    std::vector<BoolMat> event_patterns, event_sliding;
    std::vector<std::string> event_kinds;
    std::vector<RowMatrix> alpha_t, beta_t;  ///< at the requested times reached
    RowMatrix alpha, beta;
    BoolMat active, sliding;
    bool limit = false;
    double margin = 0.0, rate = 0.0, last_event = 0.0;
    double motion = 0.0;    ///< proved bound on |beta_limit - beta| entrywise (0: the pattern is frozen)
    double fp_error = 0.0;  ///< largest fp_ki of the returned limit (docs/math.md §13, rounding model)
    std::string reason;     ///< why the limit failed its self-check (status uncertified)
};

inline std::string sci(double x, int digits = 3) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.*g", digits, x);
    return buf;
}

/// The units the messages print times and entries of beta in: a run on data rescaled exactly by powers
/// of two (relucore._scaling) prints std::ldexp(t, time) and std::ldexp(b, beta), the caller's numbers.
struct MessageUnits {
    int time = 0;
    int beta = 0;
};

/// A proved bound on the rest of any gradient flow from beta (docs/math.md §13, remaining motion).
struct Motion {
    bool holds = false;   ///< no example can join or leave A = {i : some beta_ki > 0}
    double path = 0.0;    ///< bound on the remaining path length of W
    double entry = 0.0;   ///< bound on every later |beta_ki(t) - beta_ki|
    double margin = 0.0;  ///< smallest slack of the conditions that keep A fixed
};

/// A rigorous lower bound on mu_min(K) (Weyl, backward-stable eigensolver; docs/math.md §13).
inline double mu_min_lower(const Mat& K) {
    if (K.rows() == 0) return 0.0;
    Eigen::SelfAdjointEigenSolver<Mat> es(K, Eigen::EigenvaluesOnly);
    return es.eigenvalues()(0) - 8.0 * static_cast<double>(K.rows()) * kU * K.norm();
}

/// While A is fixed, d/dt (|r_A|^2 / 2) = -|dW/dt|^2 and |dW/dt|^2 >= s_min^2 mu_min(K) |r_A|^2,
/// so the path of W is at most |r_A| / (s_min sqrt(mu_min(K))) and |d beta_ki| <= sqrt(K_ii) times it;
/// A stays fixed when every i outside A has all beta_ki below -that and every i in A one beta_ki above it.
inline Motion remaining_motion(const Mat& K, const Vec& y, const Vec& signs, const RowMatrix& beta, double mu_lo) {
    const Index m = beta.rows(), n = beta.cols();
    Motion out;
    double smin = std::numeric_limits<double>::infinity();
    for (Index k = 0; k < m; ++k) smin = std::min(smin, std::abs(signs(k)));
    if (!(mu_lo > 0) || !(smin > 0) || m == 0) return out;
    const double m2 = static_cast<double>(m + 2);
    const double g = m2 * kU / (1 - m2 * kU);  // gamma_{m+2}: error of each computed r_i
    std::vector<char> inA(detail::idx(n), 0);
    double r2 = 0.0, f2 = 0.0;
    for (Index i = 0; i < n; ++i) {
        double r = -y(i), f = std::abs(y(i));
        for (Index k = 0; k < m; ++k)
            if (beta(k, i) > 0) {
                r += signs(k) * beta(k, i);
                f += std::abs(signs(k)) * beta(k, i);
                inA[detail::idx(i)] = 1;
            }
        if (inA[detail::idx(i)]) {
            r2 += r * r;
            f2 += (g * f) * (g * f);
        }
    }
    out.path = (std::sqrt(r2) + std::sqrt(f2)) / (smin * std::sqrt(mu_lo)) * (1 + 16 * kU);
    out.margin = std::numeric_limits<double>::infinity();
    for (Index i = 0; i < n; ++i) {
        const double d = std::sqrt(K(i, i)) * out.path * (1 + 4 * kU);
        out.entry = std::max(out.entry, d);
        const double slack = inA[detail::idx(i)] ? beta.col(i).maxCoeff() - d : -beta.col(i).maxCoeff() - d;
        out.margin = std::min(out.margin, slack);
    }
    out.holds = out.margin > 0;
    return out;
}

/// Margin and rate of the limit's certificate: min sigma beta_inf over the watched entries.
inline void certify_limit(const Phase& ph, const Watched& w, FlowOutput& out) {
    out.limit = true;
    out.margin = std::numeric_limits<double>::infinity();
    for (Index j = 0; j < w.a.size(); ++j)
        if (w.tags[detail::idx(j)].kind == Kind::beta) out.margin = std::min(out.margin, w.sigma(j) * w.a(j));
    out.rate = ph.lam.size() ? std::exp(-ph.lam(0)) : 0.0;
    out.last_event = out.event_times.empty() ? 0.0 : out.event_times.back();
}

/// fp_ki of the phase's beta_inf on the neurons that move (docs/math.md §13, "Floating-point error of
/// the proof", applied to the final phase of the flow); NaN where the phase's bounds do not exist.
inline RowMatrix phase_fp(const Mat& K, const Vec& signs, const Phase& ph, const RowMatrix& beta,
                          const BoolMat& moving) {
    const Index m = beta.rows(), n = beta.cols();
    RowMatrix fp = RowMatrix::Zero(m, n);
    if (ph.A.empty()) return fp;
    const PhaseBounds pb = phase_bounds(K, signs, ph);
    const Vec az = ph.z.cwiseAbs();
    for (Index k = 0; k < m; ++k) {
        if (!moving.row(k).any()) continue;
        for (Index i = 0; i < n; ++i)
            fp(k, i) =
                pb.lam_lo > 0 ? entry_error(ph, beta, az, pb.dz, k, i) : std::numeric_limits<double>::quiet_NaN();
    }
    return fp;
}

/// Runs the self-check (self_check.hpp) of the limit (a, b) reached from (alpha, beta); on failure the
/// result becomes "uncertified" with the reason (never a wrong "limit").
inline void self_check_limit(const Mat& K, const Vec& y, const Vec& signs, const RowMatrix& alpha,
                             const RowMatrix& beta, const RowMatrix& a, const RowMatrix& b, LimitClaim claim,
                             FlowOutput& out) {
    claim.terms.push_back({"rate", out.rate});
    claim.terms.push_back({"motion", out.motion});
    out.fp_error = claim.fp ? claim.fp->maxCoeff() : 0.0;
    out.reason = check_limit(K, y, signs, alpha, beta, a, b, claim);
    if (out.reason.empty()) return;
    out.status = Status::uncertified;
    out.limit = false;
    out.message = "not certified: the limit failed its self-check (" + out.reason + ")";
}

/// Where and how far a run has come, for end_at_rest.
struct RestScale {
    double mu_lo, scale, t;
    MessageUnits units;
};

/// Ends the run at the state (a, b) when every continuation from the current state (alpha, beta) moves
/// beta by at most flow_rest_rtol of the scale, counting the distance from the current state to (a, b);
/// otherwise changes nothing and returns false. The requested times not reached yet get the state of the
/// phase ph (or the current state): within that bound.
inline bool end_at_rest(const Mat& K, const Vec& y, const Vec& signs, const RestScale& at,
                        const std::vector<double>& times, size_t& ti, const Phase* ph, const BoolMat& sliding,
                        const RowMatrix& a, const RowMatrix& b, const char* what, RowMatrix& alpha, RowMatrix& beta,
                        FlowOutput& out) {
    const Motion mo = remaining_motion(K, y, signs, beta, at.mu_lo);
    const double bound = mo.entry + (b - beta).cwiseAbs().maxCoeff();
    const double cap = defaults::flow_rest_rtol * std::max(at.scale, beta.cwiseAbs().maxCoeff());
    if (!mo.holds || !(bound <= cap)) return false;
    out.status = Status::certified;
    out.t_final = std::numeric_limits<double>::infinity();
    out.limit = true;
    out.margin = mo.margin;
    out.motion = bound;
    out.rate = 0.0;
    out.last_event = at.t;
    out.message = "followed to t = " + sci(std::ldexp(at.t, at.units.time), 6) + " after " +
                  std::to_string(out.event_times.size()) +
                  " events; from there any continuation moves each entry of beta by at most " +
                  sci(std::ldexp(bound, at.units.beta)) + " (proved); returned " + what;
    {
        const BoolMat moving = (beta.array() > 0).select(BoolMat::Constant(beta.rows(), beta.cols(), true), sliding);
        const RowMatrix fp = ph ? phase_fp(K, signs, *ph, beta, moving) : RowMatrix::Zero(beta.rows(), beta.cols());
        LimitClaim claim;
        claim.sliding = &sliding;
        claim.fp = &fp;
        claim.margin = mo.margin;
        claim.entry_margin = false;
        claim.motion = bound;
        if (ph) claim.r_start = &ph->r;
        self_check_limit(K, y, signs, alpha, beta, a, b, claim, out);
    }
    for (; ti < times.size(); ++ti) {
        RowMatrix ta = alpha, tb = beta;
        if (ph) state_at(*ph, sliding, times[ti] - at.t, ta, tb);
        out.alpha_t.push_back(ta);
        out.beta_t.push_back(tb);
    }
    alpha = a;
    beta = b;
    return true;
}

/// beta at the end of the phase: beta_inf with the sliding entries at zero.
inline RowMatrix phase_limit(const Phase& ph, const BoolMat& sliding) {
    RowMatrix b = ph.beta_inf;
    for (Index k = 0; k < b.rows(); ++k)
        for (Index i = 0; i < b.cols(); ++i)
            if (sliding(k, i)) b(k, i) = 0.0;
    return b;
}

/// Whether a state of the square-loss ReLU model with outer weights signs leaves some example unfit
/// (state_unfit(), gd/run.hpp).
inline bool leaves_unfit(const Vec& y, const Vec& signs, const RowMatrix& beta) {
    const ModelSpec spec;
    for (Index i = 0; i < beta.cols(); ++i) {
        Scalar h = 0;
        for (Index k = 0; k < beta.rows(); ++k) h += signs[k] * activate(beta(k, i), spec);
        if (state_unfit(beta, signs.data(), spec, y[i], h, i)) return true;
    }
    return false;
}

/// Follows the flow from (alpha, beta) at t = 0 up to t_max (inf: the limit), recording the state
/// at the sorted `times`; the messages print times and entries of beta in `units`. `events_done`
/// (optional, not owned) is set to the number of events so far after each one, for another
/// thread's progress bar; it does not change the flow.
inline FlowOutput follow(const Mat& K, const Vec& y, const Vec& signs, RowMatrix alpha, RowMatrix beta, double t_max,
                         const std::vector<double>& times, std::int64_t max_events, MessageUnits units = {},
                         std::atomic<std::int64_t>* events_done = nullptr) {
    const Index m = beta.rows(), n = beta.cols();
    FlowOutput out;
    BoolMat active = (beta.array() > 0), sliding = BoolMat::Constant(m, n, false);
    double t = 0.0;
    size_t ti = 0;
    Vec r;
    std::optional<Switched> ready;
    const bool to_limit = std::isinf(t_max);
    const double mu_lo = to_limit ? mu_min_lower(K) : 0.0;
    const double scale = std::max(beta.cwiseAbs().maxCoeff(), y.cwiseAbs().maxCoeff());
    auto at_rest = [&](const RowMatrix& a, const RowMatrix& b, const char* what, const Phase* ph) {
        return to_limit &&
               end_at_rest(K, y, signs, {mu_lo, scale, t, units}, times, ti, ph, sliding, a, b, what, alpha, beta, out);
    };
    while (true) {
        Phase ph;
        Watched w;
        if (ready) {
            ph = std::move(ready->phase);
            w = std::move(ready->rows);
            ready.reset();
        } else {
            ph = linear_phase(K, y, signs, alpha, beta, active, sliding, r.size() ? &r : nullptr);
            w = watched(ph, signs, active, sliding);
        }
        auto [s_ev, j] = first_event(w, t_max - t);
        while (ti < times.size() && times[ti] <= std::min(t + s_ev, t_max)) {
            RowMatrix a = alpha, b = beta;
            state_at(ph, sliding, times[ti] - t, a, b);
            out.alpha_t.push_back(a);
            out.beta_t.push_back(b);
            ++ti;
        }
        const std::int64_t E = static_cast<std::int64_t>(out.event_times.size());
        if (j >= 0 && at_rest(ph.alpha_inf, phase_limit(ph, sliding), "the limit of the current phase", &ph)) break;
        if (j < 0 || E >= max_events) {
            if (j < 0 && to_limit) {
                out.status = Status::certified;
                out.t_final = std::numeric_limits<double>::infinity();
                const RowMatrix alpha_s = alpha, beta_s = beta;
                alpha = ph.alpha_inf;
                beta = phase_limit(ph, sliding);
                certify_limit(ph, w, out);
                out.message = "followed to the limit t = inf after " + std::to_string(E) + " events";
                const BoolMat expected = sliding.select(BoolMat::Constant(m, n, false), active);
                const BoolMat moving = active.select(BoolMat::Constant(m, n, true), sliding);
                const RowMatrix fp = phase_fp(K, signs, ph, beta_s, moving);
                LimitClaim claim;
                claim.pattern = &expected;
                claim.sliding = &sliding;
                claim.fp = &fp;
                claim.margin = out.margin;
                claim.r_start = &ph.r;
                self_check_limit(K, y, signs, alpha_s, beta_s, alpha, beta, claim, out);
            } else {
                out.status = j < 0 ? Status::t_max : Status::max_events;
                out.t_final = j < 0 ? t_max : t + s_ev;
                state_at(ph, sliding, out.t_final - t, alpha, beta);
                out.message = "stopped at t = " + sci(std::ldexp(out.t_final, units.time), 6) + " after " +
                              std::to_string(E) + " events" +
                              (j < 0 ? "" : " (max_events = " + std::to_string(max_events) + " reached)");
            }
            break;
        }
        state_at(ph, sliding, s_ev, alpha, beta);
        r = residual_at(ph, s_ev);
        t += s_ev;
        const Tag tag = w.tags[detail::idx(j)];
        if (tag.kind == Kind::beta) beta(tag.k, tag.i) = 0.0;
        ready = switch_pattern(K, y, signs, alpha, beta, active, sliding, tag, r);
        if (!ready) {
            if (at_rest(RowMatrix(alpha), RowMatrix(beta), "the state at that time", nullptr)) break;
            out.status = Status::stuck;
            out.t_final = t;
            out.message = "stuck at t = " + sci(std::ldexp(t, units.time), 6) +
                          ": no continuation of the event on entry (" + std::to_string(tag.k) + ", " +
                          std::to_string(tag.i) + ") is consistent";
            break;
        }
        active = ready->active;
        sliding = ready->sliding;
        out.event_times.push_back(t);
        out.event_patterns.push_back(active);
        out.event_sliding.push_back(sliding);
        out.event_kinds.push_back(ready->kind);
        if (events_done != nullptr)
            events_done->store(static_cast<std::int64_t>(out.event_times.size()), std::memory_order_relaxed);
    }
    out.alpha = alpha;
    out.beta = beta;
    out.active = active;
    out.sliding = sliding;
    // One rule for success (core/status.hpp): a limit that leaves examples unfit is stalled.
    if (out.status == Status::certified) out.status = stalled_if_unfit(out.status, leaves_unfit(y, signs, beta));
    return out;
}

}  // namespace flow
}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
