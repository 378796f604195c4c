// Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as
// easy as 1, 2, 3", SC'11): the constants, the round keys of a (key, stream)
// of random/counter.hpp, the scalar blocks, and an AVX-512F kernel that holds
// one block per 64-bit lane.
//
// One block per 64-bit lane: each of the four 32-bit words of eight blocks sits
// in the low half of a 64-bit lane of its own vector, so a round's two
// 32x32->64-bit products are one vpmuludq each with the full product in the
// lane (high half by a shift, low half in place: vpmuludq reads only the low
// 32 bits, so the upper halves may hold anything until the final assembly),
// and the two three-way XORs are one vpternlogq each: six instructions per
// round for eight blocks. The lanes take arbitrary 64-bit block indices, so
// the same kernel serves consecutive blocks and the scattered redraw blocks of
// the ziggurat (random/normals_avx512.hpp). The words are integers: bitwise
// the scalar blocks.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/simd.hpp"

#include <array>
#include <cstddef>
#include <cstdint>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

using Counter4x32 = std::array<std::uint32_t, 4>;
using Key2x32 = std::array<std::uint32_t, 2>;

namespace detail {
constexpr std::uint32_t philox32_m0 = 0xD2511F53u, philox32_m1 = 0xCD9E8D57u;  // round multipliers
constexpr std::uint32_t philox32_w0 = 0x9E3779B9u, philox32_w1 = 0xBB67AE85u;  // key schedule increments
}  // namespace detail

// Philox4x32 with 10 rounds (Random123's philox4x32_R(10, c, k)).
inline Counter4x32 philox4x32_10(Counter4x32 c, Key2x32 k) {
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k[0] += detail::philox32_w0;
            k[1] += detail::philox32_w1;
        }
        const std::uint64_t p0 = static_cast<std::uint64_t>(detail::philox32_m0) * c[0];
        const std::uint64_t p1 = static_cast<std::uint64_t>(detail::philox32_m1) * c[2];
        c = Counter4x32{static_cast<std::uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<std::uint32_t>(p1),
                        static_cast<std::uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<std::uint32_t>(p0)};
    }
    return c;
}

namespace detail {

struct CounterKeys {
    std::uint32_t k0[10], k1[10];  // round keys
    std::uint32_t s0, s1;          // the stream's words
};

inline CounterKeys counter_keys(std::uint64_t key, std::uint64_t stream) {
    CounterKeys r{};
    std::uint32_t k0 = static_cast<std::uint32_t>(key), k1 = static_cast<std::uint32_t>(key >> 32);
    for (int round = 0; round < 10; ++round) {
        r.k0[round] = k0;
        r.k1[round] = k1;
        k0 += philox32_w0;
        k1 += philox32_w1;
    }
    r.s0 = static_cast<std::uint32_t>(stream);
    r.s1 = static_cast<std::uint32_t>(stream >> 32);
    return r;
}

// Blocks block0 .. block0 + count - 1 as 64-bit word pairs (a, b), one at a time.
inline void counter_words_scalar(const CounterKeys& k, std::uint64_t block0, std::int64_t count, std::uint64_t* a,
                                 std::uint64_t* b) {
    for (std::int64_t i = 0; i < count; ++i) {
        const std::uint64_t j = block0 + static_cast<std::uint64_t>(i);
        Counter4x32 c{static_cast<std::uint32_t>(j), static_cast<std::uint32_t>(j >> 32), k.s0, k.s1};
        for (int round = 0; round < 10; ++round) {
            const std::uint64_t p0 = static_cast<std::uint64_t>(philox32_m0) * c[0];
            const std::uint64_t p1 = static_cast<std::uint64_t>(philox32_m1) * c[2];
            c = Counter4x32{static_cast<std::uint32_t>(p1 >> 32) ^ c[1] ^ k.k0[round], static_cast<std::uint32_t>(p1),
                            static_cast<std::uint32_t>(p0 >> 32) ^ c[3] ^ k.k1[round], static_cast<std::uint32_t>(p0)};
        }
        a[i] = static_cast<std::uint64_t>(c[0]) | (static_cast<std::uint64_t>(c[1]) << 32);
        b[i] = static_cast<std::uint64_t>(c[2]) | (static_cast<std::uint64_t>(c[3]) << 32);
    }
}

#if defined(RELUCORE_SIMD_DISPATCH)
RELUCORE_AVX512_WARNINGS_OFF  // simd.hpp
// G groups of eight blocks: lane l of blk[g] is a block index, and lane l of
// a[g], b[g] receives that block's 64-bit words a = w0 + 2^32 w1 and
// b = w2 + 2^32 w3. The groups' rounds interleave (a round is a chain of
// about seven cycles; G = 4 keeps the two vector ports busy).
// The stream words s0, s1 (low 32 bits of each 64-bit lane) may differ between
// lanes: philox_lanes_avx512 below broadcasts those of k.
template <std::size_t G>
__attribute__((target("avx512f"), always_inline)) inline void philox_lanes_streams_avx512(const CounterKeys& k,
                                                                                          const __m512i* blk,
                                                                                          __m512i s0, __m512i s1,
                                                                                          __m512i* a, __m512i* b) {
    const __m512i m0 = _mm512_set1_epi64(static_cast<long long>(philox32_m0));
    const __m512i m1 = _mm512_set1_epi64(static_cast<long long>(philox32_m1));
    __m512i c0[G], c1[G], c2[G], c3[G];  // (loops unrolled so that these stay in registers)
#pragma GCC unroll 8
    for (std::size_t g = 0; g < G; ++g) {
        c0[g] = blk[g];
        c1[g] = _mm512_srli_epi64(blk[g], 32);
        c2[g] = s0;
        c3[g] = s1;
    }
#pragma GCC unroll 10
    for (int round = 0; round < 10; ++round) {
        const __m512i k0 = _mm512_set1_epi64(static_cast<long long>(k.k0[round]));
        const __m512i k1 = _mm512_set1_epi64(static_cast<long long>(k.k1[round]));
#pragma GCC unroll 8
        for (std::size_t g = 0; g < G; ++g) {
            const __m512i p0 = _mm512_mul_epu32(c0[g], m0), p1 = _mm512_mul_epu32(c2[g], m1);
            c0[g] = _mm512_ternarylogic_epi64(_mm512_srli_epi64(p1, 32), c1[g], k0, 0x96);  // three-way xor
            c1[g] = p1;
            c2[g] = _mm512_ternarylogic_epi64(_mm512_srli_epi64(p0, 32), c3[g], k1, 0x96);
            c3[g] = p0;
        }
    }
    constexpr __mmask16 high = 0xAAAA;  // the upper 32-bit halves of the 64-bit lanes
#pragma GCC unroll 8
    for (std::size_t g = 0; g < G; ++g) {
        a[g] = _mm512_mask_blend_epi32(high, c0[g], _mm512_slli_epi64(c1[g], 32));
        b[g] = _mm512_mask_blend_epi32(high, c2[g], _mm512_slli_epi64(c3[g], 32));
    }
}

template <std::size_t G>
__attribute__((target("avx512f"), always_inline)) inline void philox_lanes_avx512(const CounterKeys& k,
                                                                                  const __m512i* blk, __m512i* a,
                                                                                  __m512i* b) {
    philox_lanes_streams_avx512<G>(k, blk, _mm512_set1_epi64(static_cast<long long>(k.s0)),
                                   _mm512_set1_epi64(static_cast<long long>(k.s1)), a, b);
}

// Blocks block0 .. block0 + count - 1 as (a, b) words, thirty-two (then eight)
// at a time while that many remain. Returns the blocks done.
__attribute__((target("avx512f"))) inline std::int64_t counter_words_avx512(const CounterKeys& k, std::uint64_t block0,
                                                                            std::int64_t count, std::uint64_t* a,
                                                                            std::uint64_t* b) {
    const __m512i lanes = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
    std::int64_t i = 0;
    for (; i + 32 <= count; i += 32) {
        __m512i blk[4], va[4], vb[4];
#pragma GCC unroll 8
        for (std::size_t g = 0; g < 4; ++g) {
            const std::uint64_t first_block = block0 + static_cast<std::uint64_t>(i) + 8u * g;
            blk[g] = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(first_block)), lanes);
        }
        philox_lanes_avx512<4>(k, blk, va, vb);
#pragma GCC unroll 8
        for (std::size_t g = 0; g < 4; ++g) {
            _mm512_storeu_si512(a + i + 8 * static_cast<std::int64_t>(g), va[g]);
            _mm512_storeu_si512(b + i + 8 * static_cast<std::int64_t>(g), vb[g]);
        }
    }
    for (; i + 8 <= count; i += 8) {
        __m512i blk[1], va[1], vb[1];
        const std::uint64_t first_block = block0 + static_cast<std::uint64_t>(i);
        blk[0] = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(first_block)), lanes);
        philox_lanes_avx512<1>(k, blk, va, vb);
        _mm512_storeu_si512(a + i, va[0]);
        _mm512_storeu_si512(b + i, vb[0]);
    }
    return i;
}
RELUCORE_AVX512_WARNINGS_ON
#endif

}  // namespace detail
}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
