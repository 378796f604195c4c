// CPU time of DualGD steps with resync_every = 0 (never), 1024 (the default) and 1
// (beta recomputed from alpha at every step); numbers in bench/HISTORY.md. From the root:
//   g++ -std=c++17 -O3 -DNDEBUG -DEIGEN_DONT_PARALLELIZE -Icpp/include -I<build>/generated/include \
//       -isystem cpp/third_party/eigen bench/bench_resync.cpp -o /tmp/bench_resync && /tmp/bench_resync
#include "../cpp/tests/problems.hpp"
#include <chrono>
#include <cstdio>
#include <ctime>
using namespace relucore;
using namespace relucore_test;
int main() {
    for (int n : {10, 100}) {
        const Problem p = make_problem(n, 2000, 1);
        Vector outer(2);
        outer << 1.0, -1.0;
        std::mt19937_64 gen(3);
        const RowMatrix W0 = gaussian(2, 2000, gen, 0.01);
        const RowMatrix beta0 = W0 * p.X.transpose();
        GDSettings s;
        s.eta = 0.02;
        s.max_steps = 0;
        s.tol = 0;
        const long steps = n == 10 ? 4000000 : 100000;
        for (int rep = 0; rep < 3; ++rep)
            for (long every : {0L, 1024L, 1L}) {
                DualGD a(p.K, p.y, dual_start(outer, RowMatrix::Zero(2, n), beta0), s);
                a.set_resync_every(every);
                std::clock_t c0 = std::clock();
                a.step(steps);
                double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
                std::printf("n=%d every=%ld steps=%ld cpu %.3f s  %.1f ns/step loss %.3g\n", n, every, steps, cpu,
                            1e9 * cpu / steps, a.loss());
            }
    }
}
