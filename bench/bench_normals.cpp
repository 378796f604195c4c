// CPU time of the counter streams' normals (random/counter.hpp) by path, in cache, and of
// their parts on AVX-512: Philox4x32-10 blocks alone (random/philox32.hpp), the accepted
// path of the ziggurat from words in registers, and the redraw of the rejected words
// (random/normals_avx512.hpp); numbers in bench/HISTORY.md. Checks first that every path
// gives bitwise the scalar normals. From the root:
//   g++ -std=c++17 -O2 -Icpp/include bench/bench_normals.cpp -o /tmp/bench_normals && /tmp/bench_normals
#include "relucore/random/counter.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <vector>

using namespace relucore;

namespace {

constexpr long kTotal = 1L << 24;  // normals per timing

template <class F>
double best_cpu_ns(F&& f, long per_call_units) {  // best of 7: CPU ns per unit
    double best = 1e30;
    for (int rep = 0; rep < 7; ++rep) {
        const std::clock_t t0 = std::clock();
        f(rep);
        best = std::min(best, double(std::clock() - t0) / CLOCKS_PER_SEC);
    }
    return best / double(per_call_units) * 1e9;
}

#if defined(RELUCORE_SIMD_DISPATCH)
__attribute__((target("avx512f"), noinline)) std::uint64_t philox_only(const detail::CounterKeys& k, std::uint64_t j0,
                                                                       long blocks) {
    __m512i acc = _mm512_setzero_si512();
    const __m512i lanes = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
    for (long j = 0; j < blocks; j += 32) {
        __m512i blk[4], a[4], b[4];
        for (std::size_t g = 0; g < 4; ++g)
            blk[g] = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(j0 + std::uint64_t(j) + 8 * g)), lanes);
        detail::philox_lanes_avx512<4>(k, blk, a, b);
        for (std::size_t g = 0; g < 4; ++g) acc = _mm512_xor_si512(acc, _mm512_xor_si512(a[g], b[g]));
    }
    alignas(64) std::uint64_t out[8];
    _mm512_store_si512(out, acc);
    return out[0];
}
#endif

}  // namespace

int main() {
    std::vector<double> a(100000), b(100000);
    for (std::uint64_t start : {0ULL, 3ULL, 3ULL * 0xFFFFFFFFULL - 301})
        for (CounterPath p : {CounterPath::avx2, CounterPath::avx512}) {
            CounterStream(11, 2, CounterPath::scalar).normals(start, 99999, a.data());
            CounterStream(11, 2, p).normals(start, 99999, b.data());
            if (std::memcmp(a.data(), b.data(), 99999 * sizeof(double)) != 0) {
                std::printf("path %s differs from the scalar path\n", counter_path_name(p));
                return 1;
            }
        }
    std::printf("normals, CPU ns per normal (best of 7, %ld normals a timing)\n", kTotal);
    for (long per_call : {128L, 4096L}) {
        std::vector<double> out(static_cast<size_t>(per_call));
        for (CounterPath p : {CounterPath::scalar, CounterPath::avx2, CounterPath::avx512}) {
            const double ns = best_cpu_ns(
                [&](int rep) {
                    const CounterStream s(5, std::uint64_t(rep), p);
                    for (long i = 0; i < kTotal; i += per_call) s.normals(std::uint64_t(i), per_call, out.data());
                },
                kTotal);
            std::printf("  %-6s %5ld per call: %.3f ns (%.0f M/s)\n", counter_path_name(p), per_call, ns, 1e3 / ns);
        }
    }
#if defined(RELUCORE_SIMD_DISPATCH)
    if (!simd::has_avx512dq()) return 0;
    const detail::CounterKeys k = detail::counter_keys(5, 1);
    std::vector<double> out(4096);
    std::vector<std::int64_t> rp(4096);
    std::vector<std::uint64_t> rw(4096), ri(4096), rs(4096, 1);
    std::uint64_t sink = 0;
    long nrej = 0;
    const double philox = best_cpu_ns(
        [&](int) {
            for (long i = 0; i < kTotal; i += 4096) sink += philox_only(k, std::uint64_t(i) / 2, 2048);
        },
        kTotal / 2);
    const double fast = best_cpu_ns(
        [&](int) {
            nrej = 0;
            for (long i = 0; i < kTotal; i += 4096)
                nrej += detail::normals_fast_avx512(k, std::uint64_t(i), 4096, out.data(), rp.data(), rw.data());
        },
        kTotal);
    const double both = best_cpu_ns(
        [&](int) {
            for (long i = 0; i < kTotal; i += 4096) {
                const std::int64_t n =
                    detail::normals_fast_avx512(k, std::uint64_t(i), 4096, out.data(), rp.data(), rw.data());
                for (std::int64_t r = 0; r < n; ++r) ri[size_t(r)] = std::uint64_t(i + rp[size_t(r)]);
                detail::zig_redraw_avx512(k, out.data(), detail::ZigRejects{rp.data(), ri.data(), rs.data(), rw.data()},
                                          n);
            }
        },
        kTotal);
    std::printf(
        "AVX-512 parts: Philox4x32-10 block %.3f ns (%.3f ns per 64-bit word); words + accepted path %.3f ns per\n"
        "normal (rejected %.2f %%); + vector redraw %.3f ns per normal [%llu]\n",
        philox, philox / 2, fast, 100.0 * double(nrej) / double(kTotal), both, (unsigned long long)(sink & 1));
#endif
    return 0;
}
