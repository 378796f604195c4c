// parallel_for: exceptions thrown by iterations (on worker threads) reach the
// caller, every other iteration still runs, and results do not depend on the
// number of threads.
#include "check.hpp"
#include "problems.hpp"

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

using namespace relucore;
using namespace relucore_test;

TEST_CASE("an exception in an iteration is rethrown on the caller, after the loop") {
    for (int threads : {1, 2, 0}) {
        std::atomic<int> ran{0};
        std::string message;
        try {
            parallel_for(40, threads, [&](Index i) {
                ++ran;
                if (i == 7 || i == 23) throw std::runtime_error("problem " + std::to_string(i) + " failed");
            });
        } catch (const std::runtime_error& e) {
            message = e.what();
        }
        CHECK(ran.load() == 40);
        CHECK(message == "problem 7 failed" || message == "problem 23 failed");
    }
}

TEST_CASE("exception types are preserved; count <= 0 runs nothing") {
    CHECK_THROWS(parallel_for(5, 2,
                              [](Index i) {
                                  if (i == 4) throw std::invalid_argument("bad");
                              }),
                 std::invalid_argument);
    int calls = 0;
    parallel_for(0, 2, [&](Index) { ++calls; });
    parallel_for(-3, 2, [&](Index) { ++calls; });
    CHECK(calls == 0);
}

TEST_CASE("engine runs over problems do not depend on the thread count") {
    const int B = 6;
    std::vector<Problem> problems;
    for (int b = 0; b < B; ++b) problems.push_back(make_problem(10, 25, 100 + b));
    Vector outer(2);
    outer << 1.0, -1.0;
    GDSettings s;
    s.eta = 0.2;
    s.max_steps = 150;
    auto solve = [&](int threads) {
        std::vector<RowMatrix> out(B);
        parallel_for(B, threads, [&](Index b) {
            DualGD gd = DualGD::positive_start(problems[b].X, problems[b].y, positive_offsets(outer, 1e-3), s);
            gd.run();
            out[b] = gd.alpha();
        });
        return out;
    };
    const auto serial = solve(1), parallel = solve(2);
    for (int b = 0; b < B; ++b) CHECK(serial[b] == parallel[b]);
    std::printf("  OpenMP: %s, default threads %d\n", has_openmp() ? "yes" : "no", default_threads());
}

RELUCORE_TEST_MAIN
