// minnorm/minnorm_qp.hpp and stats/gram_stats.hpp: KKT conditions of the QPs checked
// directly, the block method against the primal fallback, a problem with
// equality rows, minnorm_single_gram against a brute force over the faces of
// its QP, and the Gram statistics against their definitions.
#include "check.hpp"
#include "problems.hpp"

#include <Eigen/Eigenvalues>
#include <Eigen/SVD>

#include <cmath>
#include <limits>
#include <vector>

using namespace relucore;
using namespace relucore_test;

namespace {

const double inf = std::numeric_limits<double>::infinity();

// Max KKT violation of min 1/2 z'Hz - c'z s.t. lower <= z <= upper at (z, r = Hz - c).
double box_kkt(const RowMatrix& H, const Vector& c, const Vector& lo, const Vector& up, const Vector& z) {
    const Vector r = H * z - c;
    double worst = 0.0;
    for (Index j = 0; j < z.size(); ++j) {
        worst = std::max(worst, std::max(lo[j] - z[j], z[j] - up[j]));
        const bool at_lo = std::isfinite(lo[j]) && z[j] == lo[j];
        const bool at_up = std::isfinite(up[j]) && z[j] == up[j];
        if (at_lo)
            worst = std::max(worst, -r[j]);
        else if (at_up)
            worst = std::max(worst, r[j]);
        else
            worst = std::max(worst, std::abs(r[j]));
    }
    return worst;
}

}  // namespace

TEST_CASE("m = 1 dual of Eq. (7): KKT holds and both methods agree") {
    for (Index d : {12, 40, 400}) {
        const Problem p = make_problem(10, d, 7 + static_cast<unsigned>(d));
        const Index n = 10;
        Vector c(n), lo(n), up(n);
        for (Index i = 0; i < n; ++i) {
            c[i] = p.y[i] > 0 ? p.y[i] : 0.0;
            lo[i] = -inf;
            up[i] = p.y[i] > 0 ? inf : 0.0;
        }
        QPSettings s;
        const QPResult a = solve_box_qp(p.K, c, lo, up, s);
        CHECK(a.status == Status::optimal);
        CHECK(box_kkt(p.K, c, lo, up, a.z) <= 1e-12);
        QPSettings force;
        force.max_block_iter = 1;
        force.stall_limit = 1;
        const QPResult b = solve_box_qp(p.K, c, lo, up, force);
        CHECK(b.status == Status::optimal);
        CHECK(b.used_fallback);
        CHECK_CLOSE(b.z, a.z, 1e-9, 1e-12);
    }
}

TEST_CASE("primal active-set method with an equality row") {
    // min 1/2 |z|^2 s.t. z0 + z1 = 1, z0 >= 0, z1 <= 0.2  ->  z = (0.8, 0.2).
    RowMatrix H = RowMatrix::Identity(2, 2);
    Vector c = Vector::Zero(2);
    RowMatrix E(1, 2);
    E << 1.0, 1.0;
    Vector e(1);
    e << 1.0;
    Vector lo(2), up(2), z0(2);
    lo << 0.0, -inf;
    up << inf, 0.2;
    z0 << 1.0, 0.0;
    std::vector<signed char> state(2, 0);
    const QPResult r = solve_qp_primal(H, c, E, e, lo, up, z0, state, QPSettings{});
    CHECK(r.status == Status::optimal);
    Vector want(2);
    want << 0.8, 0.2;
    CHECK_CLOSE(r.z, want, 1e-14, 1e-14);
    CHECK(r.state[1] == 1);
    CHECK(r.r[1] <= 0.0);  // upper-bound multiplier sign
}

TEST_CASE("minnorm_single_gram: the brute-force optimum over every face, and its certificates") {
    int cases = 0;
    for (Index d : {12, 40, 200})
        for (double sign : {1.0, -1.0, 0.5}) {
            const Problem p = make_problem(9, d, 31 + static_cast<unsigned>(d));
            const MinNorm1Result r = minnorm_single_gram(p.K, p.y, sign);
            CHECK(r.status == Status::optimal);
            const Vector z = minnorm_single_brute_force(p.K, p.y, sign);
            const double scale = std::sqrt(z.dot(p.K * z));
            const Vector diff = r.z - z;
            CHECK(std::sqrt(std::max(diff.dot(p.K * diff), 0.0)) <= 1e-10 * scale);
            CHECK_CLOSE(r.objective, 0.5 * z.dot(p.K * z), 1e-10, 0.0);
            CHECK(std::max(std::max(r.stationarity, r.primal_feasibility),
                           std::max(r.dual_feasibility, r.complementarity)) < 1e-10);
            ++cases;
        }
    CHECK(cases == 9);
}

TEST_CASE("gram statistics match their definitions") {
    RowMatrix K(3, 3);
    K << 4.0, 1.0, -0.5, 1.0, 5.0, 0.25, -0.5, 0.25, 3.0;
    const GramStatistics g = gram_statistics(K, 4.0);
    const Eigen::MatrixXd Kd = K;
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(Kd);
    CHECK_CLOSE(g.mu_max, es.eigenvalues()[2], 1e-14, 0.0);
    CHECK_CLOSE(g.mu_min, es.eigenvalues()[0], 1e-14, 0.0);
    const Eigen::MatrixXd D = Kd / 4.0 - Eigen::MatrixXd::Identity(3, 3);
    const double dev = D.jacobiSvd().singularValues()[0];
    CHECK_CLOSE(g.deviation, dev, 1e-13, 0.0);
    CHECK_CLOSE(g.offdiag_ratio, 1.0 / 3.0, 1e-15, 0.0);
}

RELUCORE_TEST_MAIN
