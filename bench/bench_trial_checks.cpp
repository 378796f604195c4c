// CPU time of the argument checks of gram_trial (relucore/sweep/sweep_gram.hpp) against
// the whole trial, in Gram mode (K given, minnorm on, default settings): the checks a
// trial makes are K square and finite, y of n entries and s non-zero in gram_trial, and K
// square and finite and y of n finite entries again in the engine's constructor (the
// minimum-norm solve reuses gram_trial's checks). Each check is timed alone on the trial's
// own K and y, and their sum divided by the trial's time; numbers in bench/HISTORY.md.
// From the root:
//   g++ -std=c++17 -O3 -DNDEBUG -DEIGEN_DONT_PARALLELIZE -Icpp/include -I<build>/generated/include \
//       -isystem cpp/third_party/eigen bench/bench_trial_checks.cpp -o /tmp/bench_trial_checks && /tmp/bench_trial_checks
#include "../cpp/tests/problems.hpp"
#include "relucore/analysis.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

using namespace relucore;
using namespace relucore_test;

template <class F>
double best_us(F&& f, int reps) {
    double best = 1e300;
    for (int r = 0; r < 7; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < reps; ++i) f();
        const std::chrono::duration<double, std::micro> dt = std::chrono::steady_clock::now() - t0;
        best = std::min(best, dt.count() / reps);
    }
    return best;
}

int main() {
    volatile double sink = 0;
    std::printf("| n | d | trial (us) | checks (us) | share |\n|---|---|---:|---:|---:|\n");
    for (const Index n : {10, 40, 100}) {
        const Problem p = make_problem(n, 1000, 7);
        const GramTrialSettings st;
        const double trial = best_us(
            [&] {
                const GramTrialResult r = gram_trial(p.K, p.y, st);
                sink = sink + r.gap + double(r.run.nit);
            },
            n <= 10 ? 2000 : n <= 40 ? 200 : 20);
        const ConstMatrixRef K = p.K;
        const ConstVectorRef y = p.y;
        const double checks = best_us(
            [&] {
                // gram_trial's own checks, then the engine's (K and y; its start is 1 x n).
                detail::require_square("K", K.rows(), K.cols());
                detail::require_size("y", y.size(), n, "n");
                detail::require_finite("K", K);
                detail::require_nonzero("s", st.sign);
                detail::require_square("K", K.rows(), K.cols());
                detail::require_finite("K", K);
                detail::require_size("y", y.size(), n, "n");
                detail::require_finite("y", y);
                sink = sink + K(0, 0);
            },
            20000);
        std::printf("| %ld | 1000 | %.2f | %.3f | %.2f %% |\n", long(n), trial, checks, 100 * checks / trial);
    }
    return sink == 12345 ? 1 : 0;
}
