// The fused dual step of 6 <= n <= 16 (gd/dual_small.hpp: one portable vector kernel in 2 and 4
// lanes, the AVX-512F kernel) against the plain loops written here: every SIMD level this build
// and CPU have (simd::ThreadCap picks it when the engine is built: scalar, sse2 or neon, avx,
// avx512) gives the state, loss and gradient norm of the reference bit for bit, and all levels
// agree over runs long enough to resynchronise.
#include "check.hpp"
#include "problems.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using namespace relucore;
using namespace relucore_test;

namespace {

// The reference rounds each product and each sum (no FMA contraction, which aarch64 offers in
// its base set): the engine's operations, so the comparison can be bitwise there too.
#if defined(__clang__)
#define TEST_NO_CONTRACT _Pragma("clang fp contract(off)")
#define TEST_NO_CONTRACT_ATTR
#elif defined(__GNUC__)
#define TEST_NO_CONTRACT
#define TEST_NO_CONTRACT_ATTR __attribute__((optimize("fp-contract=off")))
#else
#define TEST_NO_CONTRACT
#define TEST_NO_CONTRACT_ATTR
#endif

struct State {
    RowMatrix alpha, beta;
    double loss = 0, grad_norm = 0;
    std::int64_t flips = 0;  // activation changes along the run
};

// `steps` GD steps of the square loss and the ReLU in dual coordinates, then the loss and the
// gradient norm of the final state: h = sum_k a_k relu(beta_k) (k increasing), g = h - y,
// d_alpha_k = (-eta a_k) g on the active examples, d_beta_k = sum over the rows i with
// d_alpha_ki != 0, increasing i, of d_alpha_ki K_i, from 0; the loss and
// sq = sum_k sum_j d_beta_kj d_alpha_kj one term at a time.
TEST_NO_CONTRACT_ATTR State reference(const RowMatrix& K, const Vector& y, const Vector& outer, State s, double eta,
                                      int steps) {
    TEST_NO_CONTRACT
    const Index m = s.alpha.rows(), n = s.alpha.cols();
    std::vector<double> h(static_cast<std::size_t>(n)), g(h), da(h), db(h);
    for (int t = 0; t <= steps; ++t) {
        for (Index i = 0; i < n; ++i) h[std::size_t(i)] = 0;
        for (Index k = 0; k < m; ++k)
            for (Index i = 0; i < n; ++i) {
                const double b = s.beta(k, i);
                h[std::size_t(i)] = h[std::size_t(i)] + outer[k] * (b > 0 ? b : 0.0);
            }
        double loss = 0, sq = 0;
        for (Index i = 0; i < n; ++i) {
            g[std::size_t(i)] = h[std::size_t(i)] - y[i];
            loss = loss + g[std::size_t(i)] * g[std::size_t(i)];
        }
        for (Index k = 0; k < m; ++k) {
            const double a = -eta * outer[k];
            for (Index i = 0; i < n; ++i) {
                da[std::size_t(i)] = s.beta(k, i) > 0 ? a * g[std::size_t(i)] : 0.0;
                db[std::size_t(i)] = 0;
            }
            for (Index i = 0; i < n; ++i) {
                const double c = da[std::size_t(i)];
                if (c == 0) continue;
                for (Index j = 0; j < n; ++j) db[std::size_t(j)] = db[std::size_t(j)] + c * K(i, j);
            }
            for (Index j = 0; j < n; ++j) sq = sq + db[std::size_t(j)] * da[std::size_t(j)];
            if (t == steps) continue;  // the last pass evaluates the final state only
            for (Index j = 0; j < n; ++j) {
                const double before = s.beta(k, j);
                s.alpha(k, j) = s.alpha(k, j) + da[std::size_t(j)];
                s.beta(k, j) = before + db[std::size_t(j)];
                s.flips += (before > 0) != (s.beta(k, j) > 0);
            }
        }
        s.loss = loss / 2;
        s.grad_norm = std::sqrt(sq) / eta;
    }
    return s;
}

struct Case {
    RowMatrix K;
    Vector y, outer;
    State start;
    double eta = 0;
};

// n examples in d = n + 5 dimensions, m neurons with outer weights of the given sign pattern
// (+1: all positive, -1: all negative, 0: alternating) and a start with mixed signs of beta.
Case make_case(Index n, Index m, int sign, std::uint64_t seed) {
    std::mt19937_64 gen(seed);
    const RowMatrix X = gaussian(n, n + 5, gen);
    Case c;
    c.K = X * X.transpose();
    std::uniform_real_distribution<double> u(0.1, 1.0);
    c.y.resize(n);
    for (Index i = 0; i < n; ++i) c.y[i] = u(gen) * (i % 3 == 1 ? -1.0 : 1.0);
    c.outer.resize(m);
    for (Index k = 0; k < m; ++k) c.outer[k] = (sign != 0 ? sign : (k % 2 == 0 ? 1.0 : -1.0)) * (0.5 + u(gen));
    c.start.alpha = gaussian(m, n, gen, 0.05);
    c.start.beta = c.start.alpha * c.K;
    const Eigen::SelfAdjointEigenSolver<RowMatrix> eig(c.K);
    c.eta = 0.5 / eig.eigenvalues().maxCoeff();
    return c;
}

State run_engine(const Case& c, int level, int steps) {
    GDSettings s;
    s.eta = c.eta;
    s.tol = 0;
    s.max_steps = 1000000;
    DualGD::Start start;
    start.outer = c.outer;
    start.alpha = c.start.alpha;
    start.beta = c.start.beta;
    const simd::ThreadCap cap(level);  // read when the engine is built
    DualGD gd(c.K, c.y, std::move(start), s);
    gd.step(steps);
    State out;
    out.alpha = gd.alpha();
    out.beta = gd.beta();
    out.loss = gd.loss();
    out.grad_norm = gd.grad_norm();
    return out;
}

bool same_bits(const State& a, const State& b) {
    return a.alpha == b.alpha && a.beta == b.beta && a.loss == b.loss && a.grad_norm == b.grad_norm;
}

// The levels this build and CPU run: scalar and the 128-bit level (sse2, neon) everywhere
// simd::cpu_level() has it, avx and avx512 on x86 CPUs with them.
std::vector<int> levels() {
    std::vector<int> out;
    for (int l = simd::kScalar; l <= simd::cpu_level(); ++l) out.push_back(l);
    return out;
}

}  // namespace

TEST_CASE("dual_small: every SIMD level gives the plain loops' state, loss and gradient norm bit for bit") {
    std::printf("  levels 0..%d (cpu_level)\n", simd::cpu_level());
    const int ns[] = {6, 7, 9, 10, 11, 13, 16};
    std::int64_t flips = 0, moving = 0, cases = 0;
    for (const Index n : ns)
        for (Index m = 1; m <= 4; ++m)
            for (const int sign : {1, -1, 0}) {
                const Case c = make_case(n, m, sign, std::uint64_t(100 * n + 10 * m + sign + 1));
                const int steps = 400;  // below defaults::resync_every: the reference never resynchronises
                const State want = reference(c.K, c.y, c.outer, c.start, c.eta, steps);
                CHECK((want.alpha - c.start.alpha).cwiseAbs().maxCoeff() > 1e-6);  // the run moved
                CHECK(std::isfinite(want.loss));
                moving += want.grad_norm > 0;  // (a run whose neurons all died sits still: norm 0)
                flips += want.flips;
                ++cases;
                for (const int level : levels()) {
                    const bool ok = same_bits(run_engine(c, level, steps), want);
                    if (!ok) std::fprintf(stderr, "  n %ld m %ld sign %d level %d\n", long(n), long(m), sign, level);
                    CHECK(ok);
                }
            }
    CHECK(flips > cases);           // the runs change activation patterns
    CHECK(moving > cases * 3 / 4);  // and most still move at their end
}

TEST_CASE("dual_small: all levels agree over 3000 steps (resynchronisations included)") {
    for (const Index n : {8, 12, 15})
        for (const int sign : {1, 0}) {
            const Case c = make_case(n, 3, sign, std::uint64_t(7 * n + sign + 2));
            const State scalar = run_engine(c, simd::kScalar, 3000);
            CHECK(std::isfinite(scalar.loss) && scalar.grad_norm > 0);
            for (const int level : levels()) CHECK(same_bits(run_engine(c, level, 3000), scalar));
        }
}

namespace {

// The message of an unknown RELUCORE_SIMD ("" when the value is accepted).
std::string env_error(const char* value) {
    setenv("RELUCORE_SIMD", value, 1);
    try {
        (void)simd::level();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("RELUCORE_SIMD takes the level names of this architecture; an unknown one's error lists them") {
    const char* before = std::getenv("RELUCORE_SIMD");
    const std::string saved = before ? before : "";
#if defined(__ARM_NEON)
    const char* names[] = {"scalar", "neon"};
    const std::string listed = "RELUCORE_SIMD must be one of scalar, neon";
    const char* foreign = "sse2";
#else
    const char* names[] = {"scalar", "sse2", "avx", "avx512"};
    const std::string listed = "RELUCORE_SIMD must be one of scalar, sse2, avx, avx512";
    const char* foreign = "neon";
#endif
    CHECK(simd::kLevelCount == int(sizeof(names) / sizeof(names[0])));
    for (int l = 0; l < int(sizeof(names) / sizeof(names[0])); ++l) {
        CHECK(env_error(names[l]).empty());
        CHECK(simd::level() == std::min(l, simd::cpu_level()));
    }
    CHECK(env_error(foreign) == listed);
    CHECK(env_error("avx9") == listed);
    if (before)
        setenv("RELUCORE_SIMD", saved.c_str(), 1);
    else
        unsetenv("RELUCORE_SIMD");
}

RELUCORE_TEST_MAIN
