// CPU time of the self-check of a certified limit (relucore/gd/self_check.hpp, docs/math.md §13)
// against the proof it checks (certify_gd, which runs it once when the proof holds), on the
// Figure 4 setting (n = 10, d = 2000, m = 2, all-positive start, default step); numbers in
// bench/HISTORY.md. `python bench/bench_limit.py --self-check` relates it to whole calls. From the root:
//   g++ -std=c++17 -O3 -DNDEBUG -DEIGEN_DONT_PARALLELIZE -Icpp/include -I<build>/generated/include \
//       -isystem cpp/third_party/eigen bench/bench_self_check.cpp -o /tmp/bench_self_check && /tmp/bench_self_check
#include "../cpp/tests/problems.hpp"
#include "relucore/gd/certify.hpp"
#include "relucore/relucore.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

using namespace relucore;
using namespace relucore_test;

template <class F>
double best_us(F&& f, int reps) {
    double best = 1e300;
    for (int r = 0; r < 5; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < reps; ++i) f();
        const std::chrono::duration<double, std::micro> dt = std::chrono::steady_clock::now() - t0;
        best = std::min(best, dt.count() / reps);
    }
    return best;
}

int main() {
    for (unsigned seed = 0; seed < 4; ++seed) {
        const Problem p = make_problem(10, 2000, seed);
        DualGD::PositiveStart start;
        start.outer = Vector(2);
        start.outer << 1.0, -1.0;
        GDSettings s;
        s.max_steps = 0;
        Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(Eigen::MatrixXd(p.K), Eigen::EigenvaluesOnly);
        s.eta = default_step(Loss::square, p.K.rows(), start.outer.squaredNorm(), es.eigenvalues()(p.K.rows() - 1));
        DualGD gd = DualGD::positive_start(p.X, p.y, start, s);
        flow::GDCertificate c;
        std::int64_t steps = 0;
        for (; steps < 4096; ++steps) {
            c = flow::certify_gd(p.K, p.y, start.outer, gd.alpha(), gd.beta(), gd.eta());
            if (c.status == flow::GDCertificate::holds) break;
            gd.step(1);
        }
        if (c.status != flow::GDCertificate::holds) {
            std::printf("seed %u: not certified in %lld steps\n", seed, static_cast<long long>(steps));
            continue;
        }
        const RowMatrix a0 = gd.alpha(), b0 = gd.beta();
        const flow::BoolMat active = b0.array() > 0;
        flow::LimitClaim claim;
        claim.pattern = &active;
        claim.fp = &c.fp;
        claim.margin = c.margin;
        volatile std::size_t sink = 0;
        const double t_proof = best_us(
            [&] {
                sink =
                    sink + static_cast<std::size_t>(flow::certify_gd(p.K, p.y, start.outer, a0, b0, gd.eta()).status);
            },
            2000);
        const double t_check = best_us(
            [&] {
                sink =
                    sink +
                    flow::check_limit(p.K, p.y, start.outer, a0, b0, c.phase.alpha_inf, c.phase.beta_inf, claim).size();
            },
            20000);
        std::printf(
            "seed %u: certified at step %lld; proof with check %.2f us, self-check %.3f us (%.1f %% of the proof)\n",
            seed, static_cast<long long>(steps), t_proof, t_check, 100 * t_check / t_proof);
    }
    return 0;
}
