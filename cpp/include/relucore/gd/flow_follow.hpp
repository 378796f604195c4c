// The event loop of the exact gradient flow (docs/math.md §13, events and sliding).
// Included by relucore/gd/flow.hpp.
#pragma once

#include "relucore/gd/flow.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace relucore::flow {

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
    std::string status, message;
    double t_final = 0.0;
    std::vector<double> event_times;
    std::vector<BoolMat> event_patterns, event_sliding;
    std::vector<std::string> event_kinds;
    std::vector<RowMatrix> alpha_t, beta_t;  ///< at the requested times reached
    RowMatrix alpha, beta;
    BoolMat active, sliding;
    bool limit = false;
    double margin = 0.0, rate = 0.0, last_event = 0.0;
};

/// Margin and rate of the limit's certificate: min sigma beta_inf over the watched entries.
inline void certify_limit(const Phase& ph, const Watched& w, FlowOutput& out) {
    out.limit = true;
    out.margin = std::numeric_limits<double>::infinity();
    for (Index j = 0; j < w.a.size(); ++j)
        if (w.tags[detail::idx(j)].kind == Kind::beta) out.margin = std::min(out.margin, w.sigma(j) * w.a(j));
    out.rate = ph.lam.size() ? std::exp(-ph.lam(0)) : 0.0;
    out.last_event = out.event_times.empty() ? 0.0 : out.event_times.back();
}

/// Follows the flow from (alpha, beta) at t = 0 up to t_max (inf: the limit), recording the state
/// at the sorted `times`.
inline FlowOutput follow(const Mat& K, const Vec& y, const Vec& signs, RowMatrix alpha, RowMatrix beta, double t_max,
                         const std::vector<double>& times, std::int64_t max_events) {
    const Index m = beta.rows(), n = beta.cols();
    FlowOutput out;
    BoolMat active = (beta.array() > 0), sliding = BoolMat::Constant(m, n, false);
    double t = 0.0;
    size_t ti = 0;
    Vec r;
    std::optional<Switched> ready;
    const bool to_limit = std::isinf(t_max);
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
        if (j < 0 || E >= max_events) {
            if (j < 0 && to_limit) {
                out.status = "limit";
                out.t_final = std::numeric_limits<double>::infinity();
                alpha = ph.alpha_inf;
                beta = ph.beta_inf;
                for (Index k = 0; k < m; ++k)
                    for (Index i = 0; i < n; ++i)
                        if (sliding(k, i)) beta(k, i) = 0.0;
                certify_limit(ph, w, out);
                out.message = "followed to the limit t = inf after " + std::to_string(E) + " events";
            } else {
                out.status = j < 0 ? "t_max" : "max_events";
                out.t_final = j < 0 ? t_max : t + s_ev;
                state_at(ph, sliding, out.t_final - t, alpha, beta);
                out.message = "stopped at t = " + std::to_string(out.t_final) + " after " + std::to_string(E) +
                              " events" + (j < 0 ? "" : " (max_events = " + std::to_string(max_events) + " reached)");
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
            out.status = "stuck";
            out.t_final = t;
            out.message = "stuck at t = " + std::to_string(t) + ": no continuation of the event on entry (" +
                          std::to_string(tag.k) + ", " + std::to_string(tag.i) + ") is consistent";
            break;
        }
        active = ready->active;
        sliding = ready->sliding;
        out.event_times.push_back(t);
        out.event_patterns.push_back(active);
        out.event_sliding.push_back(sliding);
        out.event_kinds.push_back(ready->kind);
    }
    out.alpha = alpha;
    out.beta = beta;
    out.active = active;
    out.sliding = sliding;
    return out;
}

}  // namespace relucore::flow
