// random/rng.hpp: Philox4x64-10 against the known-answer vectors published
// with Random123 (Salmon et al. 2011), the numpy-compatible seeding against
// keys numpy's SeedSequence gives, the stream and counter layouts against
// their definitions, the polynomial log/sincos against libm, and the variates
// (uniforms, normals, chi-square) against their moments.
#include "check.hpp"

#include "relucore/random/rng.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

using namespace relucore;

namespace {

// Sample mean and variance of v.
void moments(const std::vector<double>& v, double& mean, double& var) {
    double s = 0, s2 = 0;
    for (double x : v) s += x;
    mean = s / static_cast<double>(v.size());
    for (double x : v) s2 += (x - mean) * (x - mean);
    var = s2 / static_cast<double>(v.size() - 1);
}

}  // namespace

TEST_CASE("Philox4x64-10 reproduces the Random123 known-answer vectors") {
    // (counter, key) -> output, from Random123's kat_vectors (also what numpy's Philox gives).
    CHECK(philox4x64_10(Counter4{0, 0, 0, 0}, Key2{0, 0}) ==
          (Counter4{0x16554d9eca36314cULL, 0xdb20fe9d672d0fdcULL, 0xd7e772cee186176bULL, 0x7e68b68aec7ba23bULL}));
    const std::uint64_t ones = ~std::uint64_t(0);
    CHECK(philox4x64_10(Counter4{ones, ones, ones, ones}, Key2{ones, ones}) ==
          (Counter4{0x87b092c3013fe90bULL, 0x438c3c67be8d0224ULL, 0x9cc7d7c69cd777b6ULL, 0xa09caebf594f0ba0ULL}));
    const Counter4 pi_ctr{0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL, 0xa4093822299f31d0ULL, 0x082efa98ec4e6c89ULL};
    const Key2 pi_key{0x452821e638d01377ULL, 0xbe5466cf34e90c6cULL};
    const Counter4 pi_out{0xa528f45403e61d95ULL, 0x38c72dbd566e9788ULL, 0xa5a1610e72fd18b5ULL, 0x57bd43b5e52b7fe6ULL};
    CHECK(philox4x64_10(pi_ctr, pi_key) == pi_out);
    // The precomputed round keys give the same function.
    CHECK(philox4x64_10(pi_ctr, PhiloxKeys(pi_key)) == pi_out);
}

TEST_CASE("seed_sequence_philox_key equals numpy's SeedSequence(...).generate_state(2, uint64)") {
    // Values printed by numpy 1.26/2.x: SeedSequence(entropy, spawn_key).generate_state(2, np.uint64).
    const std::uint32_t zero[] = {0};
    CHECK(seed_sequence_philox_key(zero, 1, nullptr, 0) == (Key2{0xdb2cd7e7b0f478beULL, 0xabf4641a2c71ba49ULL}));
    const std::uint32_t e12345[] = {12345};
    CHECK(seed_sequence_philox_key(e12345, 1, nullptr, 0) == (Key2{0xb5ae6482a03d837cULL, 0xbbe2996ffa1f7a2fULL}));
    const std::uint32_t e2026[] = {2026}, spawn[] = {3, 7};
    CHECK(seed_sequence_philox_key(e2026, 1, spawn, 2) == (Key2{0x01148b1e6ca5499fULL, 0xa9b0609d57056bc0ULL}));
}

TEST_CASE("PhiloxStream: numpy's raw words (philox of counters 1, 2, ...), uniform = top 53 bits") {
    const Key2 key{7, 11};
    PhiloxStream s(key);
    for (std::uint64_t block = 1; block <= 3; ++block) {
        const Counter4 expect = philox4x64_10(Counter4{block, 0, 0, 0}, key);
        for (int q = 0; q < 4; ++q) CHECK(s.next() == expect[q]);
    }
    PhiloxStream a(key), b(key);
    for (int i = 0; i < 10; ++i) CHECK(a.uniform() == static_cast<double>(b.next() >> 11) * 0x1.0p-53);
}

TEST_CASE("CounterRng: counter layout (step, neuron, stream, block) and the uniform of index k") {
    const CounterRng rng(3, 5);
    const Counter4 w = rng.block(9, 2, RngStream::init, 4);
    CHECK(w == philox4x64_10(Counter4{9, 2, static_cast<std::uint64_t>(RngStream::init), 4}, Key2{3, 5}));
    for (std::uint64_t k = 16; k < 20; ++k)
        CHECK(rng.uniform(9, 2, RngStream::init, k) == static_cast<double>(w[k % 4] >> 11) * 0x1.0p-53);
    CHECK(CounterRng::to_index(0.0, 7) == 0);
    CHECK(CounterRng::to_index(std::nextafter(1.0, 0.0), 7) == 6);
    CHECK(CounterRng::to_index(0.5, 7) == 3);
    // normals(): block j gives normals 4j .. 4j+3, whatever the count asked for.
    double six[6], eight[8];
    rng.normals(1, 0, RngStream::noise, six, 6);
    rng.normals(1, 0, RngStream::noise, eight, 8);
    for (int i = 0; i < 6; ++i) CHECK(six[i] == eight[i]);
}

TEST_CASE("the polynomial log and sincos of the Box-Muller transform agree with libm") {
    double worst_log = 0, worst_trig = 0;
    for (int i = 1; i <= 20000; ++i) {
        const double u = static_cast<double>(i) / 20000.0;  // (0, 1]
        const double ref = std::log(u);
        worst_log = std::max(worst_log, std::abs(detail::bm_log(u) - ref) / std::max(std::abs(ref), 1e-300));
        double s, c;
        detail::bm_sincos_2pi(u - 1.0 / 40000.0, s, c);  // [0, 1)
        const double t = 2 * M_PI * (u - 1.0 / 40000.0);
        worst_trig = std::max(worst_trig, std::max(std::abs(s - std::sin(t)), std::abs(c - std::cos(t))));
    }
    std::printf("  max relative log error %.2e, max sincos error %.2e\n", worst_log, worst_trig);
    CHECK(worst_log <= 1e-14);
    CHECK(worst_trig <= 1e-14);
}

TEST_CASE("variates: uniform, normal and chi-square moments (200000 draws, 6 standard errors)") {
    const std::size_t count = 200000;
    PhiloxStream s(Key2{2026, 1});
    std::vector<double> u(count), z(count);
    for (auto& v : u) v = s.uniform();
    s.normals(z.data(), static_cast<long>(count));
    double mean, var;
    moments(u, mean, var);
    const double se = 1 / std::sqrt(static_cast<double>(count));
    CHECK(std::abs(mean - 0.5) < 6 * se * std::sqrt(1.0 / 12));
    CHECK(std::abs(var - 1.0 / 12) < 6 * se * std::sqrt(1.0 / 180));  // Var of (U - 1/2)^2 is 1/180
    for (double v : u) CHECK(v >= 0.0 && v < 1.0);
    moments(z, mean, var);
    CHECK(std::abs(mean) < 6 * se);
    CHECK(std::abs(var - 1) < 6 * se * std::sqrt(2.0));
    // The tail mass beyond 3 standard deviations: 0.0026998 for a normal.
    double tail = 0;
    for (double v : z) tail += std::abs(v) > 3 ? 1 : 0;
    tail /= static_cast<double>(count);
    CHECK(std::abs(tail - 0.0026998) < 6 * std::sqrt(0.0027 / static_cast<double>(count)));
    // chi^2(k): mean k, variance 2k; k = 5 sums squares, k = 40 goes through Gamma(20).
    for (std::int64_t k : {5, 40}) {
        const std::size_t draws = 40000;
        std::vector<double> c(draws);
        for (auto& v : c) v = chi_square(k, s);
        moments(c, mean, var);
        const double kd = static_cast<double>(k);
        std::printf("  chi2(%lld): mean %.4f, variance %.4f\n", static_cast<long long>(k), mean, var);
        CHECK(std::abs(mean - kd) < 6 * std::sqrt(2 * kd / static_cast<double>(draws)));
        // Var of the sample variance ~ (mu4 - sigma^4) / N with mu4 = 12 k (k + 4) for chi^2(k).
        CHECK(std::abs(var - 2 * kd) < 6 * std::sqrt((12 * kd * (kd + 4) - 4 * kd * kd) / static_cast<double>(draws)));
    }
}

RELUCORE_TEST_MAIN
