// The counter-based generator (random/counter.hpp) and the fused draw-and-Gram
// kernel (random/fused_gram.hpp): Random123's known answers, every SIMD path
// the CPU has gives bitwise the scalar numbers, variates do not depend on how
// a range is cut, the ziggurat's tables and redraw rate, and the fused K is the
// Gram matrix of the kept X.
#include "check.hpp"

#include "relucore/random/counter.hpp"
#include "relucore/random/fused_gram.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace relucore;
using namespace relucore_test;

namespace {

std::vector<CounterPath> paths_here() {
    std::vector<CounterPath> p{CounterPath::scalar};
#if defined(RELUCORE_SIMD_DISPATCH)
    if (simd::has_avx2()) p.push_back(CounterPath::avx2);
    if (simd::has_avx512f()) p.push_back(CounterPath::avx512);
#endif
    return p;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

}  // namespace

TEST_CASE("Philox4x32-10 gives Random123's known-answer vectors") {
    const Counter4x32 zero = philox4x32_10({0, 0, 0, 0}, {0, 0});
    CHECK(zero == (Counter4x32{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
    const Counter4x32 ones = philox4x32_10({~0u, ~0u, ~0u, ~0u}, {~0u, ~0u});
    CHECK(ones == (Counter4x32{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
    const Counter4x32 pi =
        philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u});
    CHECK(pi == (Counter4x32{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST_CASE("every path gives the scalar words, across a 2^32 carry of the counter") {
    const std::uint64_t key = 0x0123456789abcdefULL, stream = 0xfedcba9876543210ULL;
    for (std::uint64_t block0 : {std::uint64_t{0}, std::uint64_t{5}, std::uint64_t{0xFFFFFFF0u} - 3}) {
        const std::int64_t count = 77;
        std::vector<std::uint64_t> a0(count), b0(count);
        CounterStream(key, stream, CounterPath::scalar).words(block0, count, a0.data(), b0.data());
        const std::uint64_t j = block0 + 30;
        const Counter4x32 ref =
            philox4x32_10({static_cast<std::uint32_t>(j), static_cast<std::uint32_t>(j >> 32),
                           static_cast<std::uint32_t>(stream), static_cast<std::uint32_t>(stream >> 32)},
                          {static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32)});
        CHECK(a0[30] == (ref[0] | (static_cast<std::uint64_t>(ref[1]) << 32)));
        CHECK(b0[30] == (ref[2] | (static_cast<std::uint64_t>(ref[3]) << 32)));
        for (CounterPath p : paths_here()) {
            std::vector<std::uint64_t> a(count), b(count);
            CounterStream(key, stream, p).words(block0, count, a.data(), b.data());
            CHECK(a == a0);
            CHECK(b == b0);
        }
    }
}

TEST_CASE("normals, uniforms and Rademacher: bitwise the same on every path and however the range is cut") {
    const std::int64_t count = 1001;
    for (CounterPath p : paths_here()) {
        const CounterStream s(42, 7, p), ref(42, 7, CounterPath::scalar);
        std::vector<double> whole(count), scalar(count), cut(count);
        for (int law = 0; law < 3; ++law) {
            draw_variates(s, static_cast<ZLaw>(law), 3, count, whole.data());
            draw_variates(ref, static_cast<ZLaw>(law), 3, count, scalar.data());
            CHECK(same_bits(whole, scalar));
            std::int64_t k = 0;
            for (std::int64_t piece : {1, 2, 129, 5, 300, 64, 1000}) {
                const std::int64_t c = std::min(piece, count - k);
                draw_variates(s, static_cast<ZLaw>(law), 3 + static_cast<std::uint64_t>(k), c, cut.data() + k);
                k += c;
            }
            CHECK(k == count);
            CHECK(same_bits(whole, cut));
        }
    }
}

TEST_CASE("ziggurat: tables against libm, the redraws' share, the accepted path") {
    // zig_exp against libm's exp (the reference here) on [-700, 0]
    double worst = 0;
    for (int k = 0; k <= 70000; ++k) {
        const double y = -0.01 * k, e = std::exp(y);
        worst = std::max(worst, std::abs(detail::zig_exp(y) - e) / e);
    }
    CHECK(worst < 1e-15);
    // layers: decreasing edges, each of area V (rectangle x_i (f(x_{i+1}) - f(x_i)) = V), base of area V
    const auto& t = detail::zig_tables();
    CHECK(t.x[0] > t.x[1] && t.x[255] > 0 && t.x[256] == 0);
    double area_err = std::abs(t.x[0] * std::exp(-0.5 * t.x[1] * t.x[1]) - detail::zig_v);
    for (int i = 1; i < 256; ++i) {
        CHECK(t.x[i + 1] < t.x[i]);
        const double area = t.x[i] * (std::exp(-0.5 * t.x[i + 1] * t.x[i + 1]) - std::exp(-0.5 * t.x[i] * t.x[i]));
        area_err = std::max(area_err, std::abs(area - detail::zig_v));
    }
    CHECK(area_err < 1e-14);  // 5e-12 with the paper's 12-digit V
    // the share of rejected words: 1 - 256 sum_i (x_{i+1} / x_i) / 256 over the layers, binomial test
    double accept = 0;
    for (int i = 0; i < 256; ++i) accept += t.r[i] / 256;
    const CounterStream s(9, 1, CounterPath::scalar);
    const std::int64_t N = 1 << 20;
    std::vector<std::uint64_t> a(N / 2), b(N / 2);
    s.words(0, N / 2, a.data(), b.data());
    std::int64_t rejected = 0;
    double z;
    for (std::int64_t j = 0; j < N / 2; ++j)
        rejected +=
            !detail::zig_fast(a[static_cast<size_t>(j)], t, z) + !detail::zig_fast(b[static_cast<size_t>(j)], t, z);
    const double p = 1 - accept, sd = std::sqrt(p * (1 - p) * static_cast<double>(N));
    std::printf("  ziggurat: %lld of %lld words redrawn (expected %.0f +- %.0f)\n", static_cast<long long>(rejected),
                static_cast<long long>(N), p * static_cast<double>(N), sd);
    CHECK(p > 0.005 && p < 0.02);
    CHECK(std::abs(static_cast<double>(rejected) - p * static_cast<double>(N)) < 4 * sd);
}

TEST_CASE("the fused K is the Gram matrix of the kept X, whatever the block width") {
    const Index n = 7, d = 1037;
    std::vector<double> scale(static_cast<std::size_t>(d));
    for (Index t = 0; t < d; ++t) scale[static_cast<std::size_t>(t)] = 1.0 / std::sqrt(1.0 + static_cast<double>(t));
    const CounterStream s(99, 3);
    for (int law = 0; law < 3; ++law) {
        std::vector<double> K(n * n), X(n * d), K2(n * n), X2(n * d), Kb(n * n);
        fused_draw_gram(s, static_cast<ZLaw>(law), n, d, scale.data(), K.data(), X.data());
        fused_draw_gram(s, static_cast<ZLaw>(law), n, d, scale.data(), K2.data(), X2.data(), 40);
        fused_draw_gram(s, static_cast<ZLaw>(law), n, d, scale.data(), Kb.data());
        CHECK(same_bits(X, X2));
        CHECK(same_bits(K, Kb));  // the same blocks, from a buffer instead of X
        std::vector<double> row(static_cast<std::size_t>(d));
        draw_variates(s, static_cast<ZLaw>(law), 2 * static_cast<std::uint64_t>(d), d, row.data());
        bool row_ok = true;
        for (std::size_t t = 0; t < row.size(); ++t) row_ok = row_ok && X[2 * row.size() + t] == row[t] * scale[t];
        CHECK(row_ok);
        const RowMatrix ref = gram_matrix(ConstMatrixMap(X.data(), n, d));
        CHECK_CLOSE(ConstMatrixMap(K.data(), n, n), ref, 1e-12, 1e-12);
        CHECK_CLOSE(ConstMatrixMap(K2.data(), n, n), ref, 1e-12, 1e-12);
    }
}

TEST_CASE("Rademacher z with unit scales: K from the sign bits is the float sum, bit for bit") {
    for (Index n : {1, 3, 9}) {
        for (Index d : {1, 63, 64, 65, 127, 1000, 1029}) {
            const CounterStream s(5 + static_cast<std::uint64_t>(d), 2);
            std::vector<double> ones(static_cast<std::size_t>(d), 1.0);
            std::vector<double> K(n * n), X(n * d), Kf(n * n), Xf(n * d);
            fused_draw_gram(s, ZLaw::rademacher, n, d, nullptr, K.data(), X.data());
            fused_draw_gram(s, ZLaw::rademacher, n, d, ones.data(), Kf.data(), Xf.data(), 40);
            CHECK(same_bits(X, Xf));
            CHECK(same_bits(K, Kf));
        }
    }
}

RELUCORE_TEST_MAIN
