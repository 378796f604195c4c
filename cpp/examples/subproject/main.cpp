// A small program built against relucore::core by cpp/examples/subproject
// (add_subdirectory) and cpp/examples/fetchcontent (FetchContent): prints the
// version, trains a few independent problems with parallel_for and checks
// that each matches the same problem trained alone. Exits non-zero on failure.
#include <relucore/relucore.hpp>

#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

int main() {
    std::printf("relucore %s (%d.%d.%d), openmp %s\n", RELUCORE_VERSION_STRING, RELUCORE_VERSION_MAJOR,
                RELUCORE_VERSION_MINOR, RELUCORE_VERSION_PATCH, relucore::has_openmp() ? "on" : "off");
    bool ok = true;
#if defined(DEMO_EXPECTED_VERSION) && defined(DEMO_EXPECTED_OPENMP)
    ok = std::strcmp(RELUCORE_VERSION_STRING, DEMO_EXPECTED_VERSION) == 0 &&
         relucore::has_openmp() == bool(DEMO_EXPECTED_OPENMP);
#endif

    const relucore::Index n = 6, d = 40, problems = 4;
    relucore::RowMatrix X(n, d);
    std::mt19937_64 gen(7);
    std::normal_distribution<double> normal(0.0, 0.15);
    for (relucore::Index i = 0; i < n; ++i)
        for (relucore::Index j = 0; j < d; ++j) X(i, j) = normal(gen);
    relucore::GDSettings s;
    s.eta = 0.2;
    s.max_steps = 2000;
    s.tol = 1e-12;
    relucore::DualGD::PositiveStart start;
    start.outer = relucore::Vector::Ones(2);
    start.offset = 1e-3;
    auto labels = [&](relucore::Index b) { return relucore::Vector::LinSpaced(n, 1.0, 2.0 + double(b)); };

    std::vector<double> parallel(problems), serial(problems);
    relucore::parallel_for(problems, 0, [&](relucore::Index b) {
        parallel[b] = relucore::DualGD::positive_start(X, labels(b), start, s).run().loss;
    });
    for (relucore::Index b = 0; b < problems; ++b) {
        serial[b] = relucore::DualGD::positive_start(X, labels(b), start, s).run().loss;
        ok = ok && parallel[b] == serial[b];
    }
    std::printf("losses %.3e %.3e %.3e %.3e\n%s\n", parallel[0], parallel[1], parallel[2], parallel[3],
                ok ? "demo OK" : "demo FAILED");
    return ok ? 0 : 1;
}
