// gd/linear_phase.hpp and gd/flow_follow.hpp: the linear phase against its defining
// equations, a sliding phase's constraint, a flow without events against the closed form, and
// the remaining-motion bound against the exact rest of a phase; gd/certify.hpp: a failed try's
// step count against GD steps taken here, and a diverging step refused; gd/self_check.hpp: a
// certified limit passes and each corrupted claim fails by name.
#include "check.hpp"

#include "relucore/gd/certify.hpp"
#include "relucore/gd/flow_follow.hpp"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace relucore;
using namespace relucore::flow;
using namespace relucore_test;

namespace {

struct Problem {
    Mat X, K;
    Vec y;
};

Problem make(Index n, Index d, unsigned seed, bool positive) {
    std::mt19937_64 gen(seed);
    std::normal_distribution<double> g;
    std::uniform_real_distribution<double> u(0.2, 1.0);
    Problem p{Mat(n, d), Mat(), Vec(n)};
    for (Index i = 0; i < n; ++i) {
        for (Index j = 0; j < d; ++j) p.X(i, j) = g(gen);
        p.y(i) = u(gen) * ((positive || i % 2 == 0) ? 1.0 : -1.0);
    }
    p.K = p.X * p.X.transpose();
    return p;
}

}  // namespace

TEST_CASE("linear_phase_limit_interpolates_the_active_examples") {
    const Problem p = make(6, 40, 1, false);
    Vec s(2);
    s << 1.0, -1.0;
    RowMatrix beta(2, 6), alpha;
    for (Index i = 0; i < 6; ++i) {
        beta(0, i) = p.y(i) > 0 ? 0.1 : -0.1;
        beta(1, i) = p.y(i) > 0 ? -0.1 : 0.1;
    }
    alpha = (p.K.ldlt().solve(beta.transpose())).transpose();
    const BoolMat active = beta.array() > 0, sliding = BoolMat::Constant(2, 6, false);
    const Phase ph = linear_phase(p.K, p.y, s, alpha, beta, active, sliding);
    CHECK(ph.A.size() == 6u);
    CHECK(ph.lam.minCoeff() > 0);
    // The limit interpolates: h = s_+ beta_+ - beta_- on the active sets equals y.
    for (Index i = 0; i < 6; ++i) {
        const double h = active(0, i) ? ph.beta_inf(0, i) : -ph.beta_inf(1, i);
        CHECK_CLOSE(h, p.y(i), 1e-12, 1e-12);
    }
    // beta_inf = K alpha_inf: the two coordinates stay consistent.
    const RowMatrix Ka = (p.K * ph.alpha_inf.transpose()).transpose();
    CHECK(((Ka - ph.beta_inf).cwiseAbs().maxCoeff()) < 1e-10);
}

TEST_CASE("sliding_entries_do_not_move") {
    const Problem p = make(5, 30, 2, true);
    Vec s = Vec::Ones(1);
    RowMatrix beta = RowMatrix::Constant(1, 5, 0.05);
    beta(0, 2) = 0.0;
    const RowMatrix alpha = (p.K.ldlt().solve(beta.transpose())).transpose();
    BoolMat active = beta.array() > 0, sliding = BoolMat::Constant(1, 5, false);
    sliding(0, 2) = true;
    const Phase ph = linear_phase(p.K, p.y, s, alpha, beta, active, sliding);
    for (Index a = 0; a < static_cast<Index>(ph.A.size()); ++a) CHECK(std::abs(ph.B[0](2, a)) < 1e-12);
    CHECK(std::abs(ph.beta_inf(0, 2)) < 1e-12);
}

TEST_CASE("flow_without_events_is_the_minimum_distance_interpolant") {
    const Problem p = make(6, 50, 3, true);
    Vec s = Vec::Ones(1);
    const RowMatrix beta = RowMatrix::Constant(1, 6, 0.01);
    const RowMatrix alpha = (p.K.ldlt().solve(beta.transpose())).transpose();
    const double inf = std::numeric_limits<double>::infinity();
    const FlowOutput out = follow(p.K, p.y, s, alpha, beta, inf, {0.0, 1e-3}, 100);
    CHECK(out.status == Status::certified);
    CHECK(out.event_times.empty());
    CHECK(out.limit && out.margin > 0);
    CHECK(out.beta_t.size() == 2u);
    CHECK(((out.beta_t[0] - beta).cwiseAbs().maxCoeff()) == 0.0);
    for (Index i = 0; i < 6; ++i) CHECK_CLOSE(out.beta(0, i), p.y(i), 1e-12, 1e-12);
}

TEST_CASE("flow_stops_at_t_max_and_max_events") {
    const Problem p = make(6, 8, 4, false);
    Vec s(2);
    s << 1.0, -1.0;
    const RowMatrix beta = RowMatrix::Constant(2, 6, 0.01);
    const RowMatrix alpha = (p.K.ldlt().solve(beta.transpose())).transpose();
    const FlowOutput part = follow(p.K, p.y, s, alpha, beta, 1e-3, {}, 1000);
    CHECK(part.status == Status::t_max && part.t_final == 1e-3);
    const FlowOutput none = follow(p.K, p.y, s, alpha, beta, std::numeric_limits<double>::infinity(), {}, 0);
    CHECK(none.status == Status::max_events || none.status == Status::certified);
}

TEST_CASE("remaining_motion_bounds_the_rest_of_a_flow") {
    // Late on a phase without events, the bound covers the exact remaining motion beta_inf - beta(s)
    // and the path length of W, computed here from the closed form of the phase.
    // Positive labels: neuron 0 active everywhere fits them, neuron 1 stays off (no events).
    const Problem p = make(6, 40, 3, true);
    Vec s(2);
    s << 1.0, -1.0;
    RowMatrix beta(2, 6);
    beta.row(0).setConstant(0.1);
    beta.row(1).setConstant(-0.1);
    RowMatrix alpha = (p.K.ldlt().solve(beta.transpose())).transpose();
    const BoolMat active = beta.array() > 0, sliding = BoolMat::Constant(2, 6, false);
    const Phase ph = linear_phase(p.K, p.y, s, alpha, beta, active, sliding);
    const double mu_lo = mu_min_lower(p.K);
    Eigen::SelfAdjointEigenSolver<Mat> es(p.K);
    CHECK(mu_lo > 0 && mu_lo <= es.eigenvalues()(0));
    for (double decay : {1e-3, 1e-8}) {
        const double sT = -std::log(decay) / ph.lam(0);
        RowMatrix a = alpha, b = beta;
        state_at(ph, sliding, sT, a, b);
        const Motion mo = remaining_motion(p.K, p.y, s, b, mu_lo);
        CHECK(mo.holds);
        const double moved = (ph.beta_inf - b).cwiseAbs().maxCoeff();
        CHECK(moved <= mo.entry);
        CHECK(mo.entry < 1e3 * moved);  // not vacuous
        // Path length of W from sT on: integral of |dW/dt| = sqrt(r^T M r) (trapezoid, steps of 0.1% in e^t).
        double path = 0, prev = 0, tprev = sT;
        for (int k = 0; k <= 40000; ++k) {
            const double tk = sT + (std::exp(k * 0.001) - 1) / ph.lam(0);
            const Vec rA = ph.V * ((-ph.lam * tk).array().exp() * ph.c.array()).matrix();
            const double v = std::sqrt(std::max(0.0, rA.dot(ph.M * rA)));
            if (k > 0) path += 0.5 * (v + prev) * (tk - tprev);
            prev = v;
            tprev = tk;
        }
        // The bound is tight where one mode dominates (here M = K): the trapezoid's excess (~1e-5) allowed.
        CHECK(path <= mo.path * (1 + 1e-4));
        CHECK(mo.path < 1.01 * path);
    }
    // Far from the limit the conditions that keep A fixed fail: no bound is claimed.
    CHECK(!remaining_motion(p.K, p.y, s, beta, mu_lo).holds);
}

RELUCORE_TEST_MAIN

TEST_CASE("certify_gd_holds_after_the_steps_a_failed_try_names") {
    // One neuron, all examples active and labels positive: the limit is beta = y. From beta = 4y the
    // deviation bound is too large at first; the try names the steps after which it holds.
    const Problem p = make(5, 30, 3, true);
    const Vec s = Vec::Ones(1);
    const double eta = 1.0 / Eigen::SelfAdjointEigenSolver<Mat>(p.K).eigenvalues().maxCoeff();
    RowMatrix beta = 4.0 * p.y.transpose();
    RowMatrix alpha = (p.K.ldlt().solve(beta.transpose())).transpose();
    GDCertificate c = certify_gd(p.K, p.y, s, alpha, beta, eta);
    CHECK(c.status == GDCertificate::fails);
    CHECK(c.need > 5);
    CHECK_CLOSE(c.phase.beta_inf.maxCoeff(), p.y.maxCoeff(), 1e-12, 0.0);
    // GD on the dual with the pattern frozen: alpha <- alpha - eta r, beta <- beta - eta K r.
    for (std::int64_t t = 0; t < c.need; ++t) {
        const Vec r = beta.row(0).transpose() - p.y;
        alpha.row(0) -= eta * r.transpose();
        beta.row(0) -= eta * (p.K * r).transpose();
    }
    const GDCertificate later = certify_gd(p.K, p.y, s, alpha, beta, eta);
    CHECK(later.status == GDCertificate::holds);
    CHECK(later.margin > 0 && later.margin <= p.y.minCoeff());
    CHECK(later.contraction < 1 && later.fp_error > 0);
    // A step with eta mu_max(M) > 2 makes the final phase diverge: refused, whatever the state.
    const GDCertificate big = certify_gd(p.K, p.y, s, alpha, beta, 2.5 * eta);
    CHECK(big.status == GDCertificate::diverges);
}

TEST_CASE("self_check_passes_a_certified_limit_and_names_what_a_corrupted_one_breaks") {
    // The limit of the test above passes; moved off its claims one at a time, each fails with the
    // claim named (gd/self_check.hpp): a sign, stationarity, beta = K alpha, a non-finite term.
    const Problem p = make(5, 30, 3, true);
    const Vec s = Vec::Ones(1);
    const double eta = 1.0 / Eigen::SelfAdjointEigenSolver<Mat>(p.K).eigenvalues().maxCoeff();
    const RowMatrix beta = 1.001 * p.y.transpose();
    const RowMatrix alpha = (p.K.ldlt().solve(beta.transpose())).transpose();
    const GDCertificate c = certify_gd(p.K, p.y, s, alpha, beta, eta);
    CHECK(c.status == GDCertificate::holds && c.reason.empty());
    const BoolMat active = beta.array() > 0;
    LimitClaim claim;
    claim.pattern = &active;
    claim.fp = &c.fp;
    claim.margin = c.margin;
    const RowMatrix& a = c.phase.alpha_inf;
    const RowMatrix& b = c.phase.beta_inf;
    CHECK(check_limit(p.K, p.y, s, alpha, beta, a, b, claim).empty());
    RowMatrix flipped = b;
    flipped(0, 2) = -b(0, 2);
    CHECK(check_limit(p.K, p.y, s, alpha, beta, a, flipped, claim).find("certified sign") != std::string::npos);
    RowMatrix moved = b, moved_a = a;
    moved(0, 1) *= 1 + 1e-9;
    moved_a.row(0) = (p.K.ldlt().solve(moved.transpose())).transpose();
    CHECK(check_limit(p.K, p.y, s, alpha, beta, moved_a, moved, claim).find("not stationary") != std::string::npos);
    RowMatrix drifted = a;
    drifted(0, 1) *= 1 + 1e-9;
    CHECK(check_limit(p.K, p.y, s, alpha, beta, drifted, b, claim).find("beta = K alpha") != std::string::npos);
    LimitClaim nan_claim = claim;
    nan_claim.terms = {{"rho", std::numeric_limits<double>::quiet_NaN()}};
    CHECK(check_limit(p.K, p.y, s, alpha, beta, a, b, nan_claim).find("not finite") != std::string::npos);
}
