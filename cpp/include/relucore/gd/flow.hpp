// Exact gradient flow of a shallow ReLU network on the square loss, event to event
// (docs/math.md §13): each phase in closed form (linear_phase.hpp), the first event by a root
// finder that cannot skip a root, sliding entries (Filippov) held at zero. The event loop is
// in flow_follow.hpp.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/gd/linear_phase.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {
namespace flow {

constexpr double kU = std::numeric_limits<double>::epsilon() / 2;
constexpr double kTiny = 64 * kU;  // relative size below which a value is rounding
constexpr double kDTiny = 1e-8;    // relative size below which a derivative at a switch is zero
constexpr int kMaxIter = 200;      // root-finder iterations per row and phase

enum class Kind { beta = 0, theta0 = 1, theta1 = 2 };

struct Tag {
    Kind kind;
    Index k, i;
};

/// Watched exponential sums f_j(s) = a_j + sum_l G_jl exp(-Lam_jl s), each to keep sigma_j f_j > 0.
struct Watched {
    Vec a, sigma;
    Mat G, Lam;
    std::vector<Tag> tags;
};

/// A row without constant term keeps its sign when divided by its slowest exponential.
inline void normalise_row(Watched& w, Index j) {
    const Index L = w.G.cols();
    if (L == 0) return;
    const double gmax = w.G.row(j).cwiseAbs().maxCoeff();
    double lo = std::numeric_limits<double>::infinity();
    for (Index l = 0; l < L; ++l)
        if (std::abs(w.G(j, l)) > 1e-12 * std::max(gmax, 1e-300)) lo = std::min(lo, w.Lam(j, l));
    if (!std::isfinite(lo)) lo = 0.0;
    for (Index l = 0; l < L; ++l) {
        const bool big = std::abs(w.G(j, l)) > 1e-12 * std::max(gmax, 1e-300);
        const bool near = big && (w.Lam(j, l) - lo <= 1e-12 * std::max(lo, 1e-300));
        if (near) w.a(j) += w.G(j, l);
        if (!big || near) w.G(j, l) = 0.0;
        w.Lam(j, l) = std::max(w.Lam(j, l) - lo, 0.0);
    }
}

inline Watched watched(const Phase& ph, const Vec& signs, const BoolMat& active, const BoolMat& sliding) {
    const Index m = active.rows(), n = active.cols(), nA = ph.lam.size();
    Vec modal(nA);
    for (Index l = 0; l < nA; ++l) modal(l) = ph.lam(l) > 0 ? ph.c(l) / ph.lam(l) : 0.0;
    // Rows: the non-sliding entries of every neuron with an active or sliding entry, then two per
    // sliding entry; sized first, so that the rows are written in place.
    Index F = 0;
    for (Index k = 0; k < m; ++k) {
        const Index sl = sliding.row(k).count();
        if (active.row(k).any() || sl > 0) F += n - sl;
        F += 2 * sl;
    }
    Watched w;
    w.a.resize(F);
    w.sigma.resize(F);
    w.G.resize(F, nA);
    w.Lam.resize(F, nA);
    w.tags.reserve(detail::idx(F));
    std::vector<char> shift(detail::idx(F), 0);
    Index j = 0;
    for (Index k = 0; k < m; ++k) {
        if (!(active.row(k) || sliding.row(k)).any()) continue;
        const Mat BV = ph.B[detail::idx(k)] * ph.V;
        for (Index i = 0; i < n; ++i) {
            if (sliding(k, i)) continue;
            w.a(j) = ph.beta_inf(k, i);
            w.G.row(j) = BV.row(i).cwiseProduct(modal.transpose());
            w.sigma(j) = active(k, i) ? 1.0 : -1.0;
            w.tags.push_back({Kind::beta, k, i});
            ++j;
        }
    }
    for (Index k = 0; k < m; ++k) {
        if (!sliding.row(k).any()) continue;
        const Mat CV = ph.C[detail::idx(k)] * ph.V;
        for (Index i = 0; i < n; ++i) {
            if (!sliding(k, i)) continue;
            const Vec dalpha = -CV.row(i).transpose().cwiseProduct(ph.c);
            const auto pos = std::find(ph.A.begin(), ph.A.end(), i);
            const bool inA = pos != ph.A.end();
            double act_a = 0.0;
            Vec act_G = Vec::Zero(nA);
            if (inA)
                act_G = -signs(k) * ph.V.row(pos - ph.A.begin()).transpose().cwiseProduct(ph.c);
            else
                act_a = -signs(k) * ph.r(i);
            const double s0 = (act_a + act_G.sum()) > 0 ? 1.0 : -1.0;
            w.a(j) = 0.0;
            w.G.row(j) = (s0 * dalpha).transpose();
            w.a(j + 1) = s0 * act_a;
            w.G.row(j + 1) = (s0 * (act_G - dalpha)).transpose();
            w.sigma(j) = w.sigma(j + 1) = 1.0;
            shift[detail::idx(j)] = 1;
            shift[detail::idx(j + 1)] = inA;
            w.tags.push_back({Kind::theta0, k, i});
            w.tags.push_back({Kind::theta1, k, i});
            j += 2;
        }
    }
    for (Index r = 0; r < F; ++r) {
        w.Lam.row(r) = ph.lam.transpose();
        if (shift[detail::idx(r)]) normalise_row(w, r);
    }
    return w;
}

/// Value, first derivative and the bounds of row j at s, each times sigma_j.
struct RowEval {
    double F, F1, F2, scale, L1, L2, L3, tail;
};

inline RowEval eval_row(const Watched& w, Index j, double s) {
    RowEval e{w.a(j), 0, 0, std::abs(w.a(j)), 0, 0, 0, 0};
    double absum = 0;
    for (Index l = 0; l < w.G.cols(); ++l) {
        const double lam = w.Lam(j, l), ge = w.G(j, l) * std::exp(-lam * s), ag = std::abs(ge);
        e.F += ge;
        e.F1 -= ge * lam;
        e.F2 += ge * lam * lam;
        absum += ag;
        e.L1 += ag * lam;
        e.L2 += ag * lam * lam;
        e.L3 += ag * lam * lam * lam;
    }
    const double sg = w.sigma(j);
    e.F *= sg;
    e.F1 *= sg;
    e.F2 *= sg;
    e.scale += absum;
    e.tail = sg * w.a(j) - absum;
    return e;
}

/// Row j leaves its side at s = 0 (wrong sign, or at zero heading the wrong way); otherwise
/// *start is a time before which it provably stays on its side.
inline bool leaves_at_zero(const Watched& w, Index j, double* start) {
    const RowEval e = eval_row(w, j, 0.0);
    *start = 0.0;
    const bool at_zero = std::abs(e.F) <= kTiny * e.scale;
    if (!at_zero) return e.F < 0;
    if (e.scale == 0) return false;  // identically zero
    const bool ok1 = e.F1 > kDTiny * e.L1;
    const bool ok2 = std::abs(e.F1) <= kDTiny * e.L1 && e.F2 > kDTiny * e.L2;
    if (!(ok1 || ok2)) return true;
    const double st = ok1 ? e.F1 / e.L2 : 1.5 * e.F2 / e.L3;
    *start = std::isfinite(st) ? st : 0.0;
    return false;
}

/// Earliest s in [0, s_max] where some row reaches zero: (s, j), or (inf, -1).
inline std::pair<double, Index> first_event(const Watched& w, double s_max) {
    const Index F = w.a.size();
    std::vector<double> start(detail::idx(F));
    for (Index j = 0; j < F; ++j)
        if (leaves_at_zero(w, j, &start[detail::idx(j)])) return {0.0, j};
    double best = s_max;
    Index who = -1;
    for (Index j = 0; j < F; ++j) {
        double s = start[detail::idx(j)];
        int it = 0;
        for (; it < kMaxIter && s < best; ++it) {
            const RowEval e = eval_row(w, j, s);
            if (e.tail > kTiny * e.scale || e.scale == 0) break;  // never reaches zero after s
            double h = e.L2 > 0 ? (e.F1 + std::sqrt(std::max(e.F1 * e.F1 + 2 * e.L2 * e.F, 0.0))) / e.L2
                                : std::numeric_limits<double>::infinity();
            if (e.F <= kTiny * e.scale || h <= 4 * kU * std::max(s, 1e-300)) {
                best = s;
                who = j;
                break;
            }
            s += h;
        }
        if (it == kMaxIter && s < best) {  // an unresolved near-tangency: its closest approach is an event
            best = s;
            who = j;
        }
    }
    return who >= 0 ? std::make_pair(best, who) : std::make_pair(std::numeric_limits<double>::infinity(), Index(-1));
}

inline void state_at(const Phase& ph, const BoolMat& sliding, double s, RowMatrix& alpha, RowMatrix& beta) {
    if (s == 0) return;
    const Index nA = ph.lam.size();
    Vec q(nA);
    for (Index l = 0; l < nA; ++l) q(l) = ph.lam(l) > 0 ? std::exp(-ph.lam(l) * s) * ph.c(l) / ph.lam(l) : 0.0;
    const Vec zt = ph.V * q;
    for (Index k = 0; k < beta.rows(); ++k) {
        alpha.row(k) = ph.alpha_inf.row(k) + (ph.C[detail::idx(k)] * zt).transpose();
        beta.row(k) = ph.beta_inf.row(k) + (ph.B[detail::idx(k)] * zt).transpose();
    }
    for (Index k = 0; k < beta.rows(); ++k)
        for (Index i = 0; i < beta.cols(); ++i)
            if (sliding(k, i)) beta(k, i) = 0.0;
}

inline Vec residual_at(const Phase& ph, double s) {
    Vec r = ph.r;
    const Vec q = ((-ph.lam * s).array().exp() * ph.c.array()).matrix();
    const Vec rA = ph.V * q;
    for (size_t a = 0; a < ph.A.size(); ++a) r(ph.A[a]) = rA(static_cast<Index>(a));
    return r;
}

}  // namespace flow
}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
