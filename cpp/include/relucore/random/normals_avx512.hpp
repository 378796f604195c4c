// Ziggurat normals of the counter streams (random/counter.hpp) on AVX-512F
// with AVX-512DQ: the Philox words are made in registers (random/philox32.hpp,
// one block per 64-bit lane), turned into normals by the accepted path of the
// ziggurat (random/ziggurat.hpp) and stored in index order, so no word ever
// goes through memory; the rejected words (about 1.2 %) are then redrawn eight
// at a time: the redraw blocks of all eight by one vector Philox, the wedge
// test with a vector exp that performs the scalar zig_exp's operations in the
// same order (no FMA: compiled with fp-contract off). A normal whose redraw
// reaches the tail (layer 0) is left to the scalar code, which recomputes it
// from its first word. Every accepted value is the same IEEE expression as on
// the scalar path, so the normals are bitwise those of the scalar code.
//
// Normal i of a stream is the ziggurat normal of word i: a_j for i = 2j, b_j
// for i = 2j + 1 (block j); a rejected normal i redraws from the blocks
// counter_retry_block(i, attempt, tag) below.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/random/philox32.hpp"
#include "relucore/random/ziggurat.hpp"
#include "relucore/simd.hpp"

#include <cstddef>
#include <cstdint>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {
namespace detail {

// The block of fresh words for attempt att (tag 0) or tail try att (tag 1)
// of normal idx (< 2^47): 2^63 + tag 2^62 + (att mod 2^15) 2^47 + idx.
inline std::uint64_t counter_retry_block(std::uint64_t idx, std::uint32_t att, std::uint32_t tag) {
    return (std::uint64_t(1) << 63) | (static_cast<std::uint64_t>(tag) << 62) |
           (static_cast<std::uint64_t>(att & 0x7FFFu) << 47) | idx;
}

#if defined(RELUCORE_SIMD_DISPATCH)
RELUCORE_AVX512_WARNINGS_OFF  // simd.hpp

// The accepted path of zig_fast on eight words: z (signed), x = |z| = u x_i,
// and the lanes rejected (u >= r_i) in bad.
struct Zig8 {
    __m512d z, x;
    __mmask8 bad;
};

__attribute__((target("avx512f,avx512dq"), always_inline)) inline Zig8 zig8_avx512(__m512i v, const ZigguratTables& t) {
    const __m512i layer = _mm512_and_si512(v, _mm512_set1_epi64(255));
    // (w >> 11) < 2^53 converts exactly; times 2^-53 exactly: top53(w) 2^-53 of the scalar code
    const __m512d u = _mm512_mul_pd(_mm512_cvtepu64_pd(_mm512_srli_epi64(v, 11)), _mm512_set1_pd(0x1.0p-53));
    const __m512d x = _mm512_mul_pd(u, _mm512_i64gather_pd(layer, t.x, 8));
    const __m512i sign =
        _mm512_and_si512(_mm512_slli_epi64(v, 55), _mm512_set1_epi64(static_cast<long long>(1ULL << 63)));
    const __m512d z = _mm512_castsi512_pd(_mm512_xor_si512(_mm512_castpd_si512(x), sign));
    return Zig8{z, x, _mm512_cmp_pd_mask(u, _mm512_i64gather_pd(layer, t.r, 8), _CMP_NLT_UQ)};
}

// zig_fast_avx2 (ziggurat.hpp) eight words at a time.
__attribute__((target("avx512f,avx512dq"))) inline std::int64_t zig_fast_avx512(const std::uint64_t* w, double* z,
                                                                                std::int64_t k0, std::int64_t n,
                                                                                std::int64_t* rej, std::int64_t& nrej) {
    const ZigguratTables& t = zig_tables();
    std::int64_t k = k0;
    for (; k + 8 <= n; k += 8) {
        const Zig8 zz = zig8_avx512(_mm512_loadu_si512(w + k), t);
        _mm512_storeu_pd(z + k, zz.z);
        if (zz.bad)
            for (int q = 0; q < 8; ++q)
                if (zz.bad & (1u << q)) rej[nrej++] = k + q;
    }
    return k;
}

// zig_exp on eight arguments in (-700, 0]: the same operations in the same order.
__attribute__((target("avx512f,avx512dq"), always_inline)) inline __m512d zig_exp_avx512(__m512d y) {
    const __m512d magic = _mm512_set1_pd(6755399441055744.0);
    const __m512d k = _mm512_sub_pd(_mm512_add_pd(_mm512_mul_pd(y, _mm512_set1_pd(1.4426950408889634)), magic), magic);
    const __m512d r = _mm512_sub_pd(_mm512_sub_pd(y, _mm512_mul_pd(k, _mm512_set1_pd(6.93147180369123816490e-01))),
                                    _mm512_mul_pd(k, _mm512_set1_pd(1.90821492927058770002e-10)));
    __m512d e = _mm512_set1_pd(exp_coefficients[0]);
    for (std::size_t j = 1; j < sizeof(exp_coefficients) / sizeof(double); ++j)
        e = _mm512_add_pd(_mm512_mul_pd(e, r), _mm512_set1_pd(exp_coefficients[j]));
    const __m512i bits = _mm512_slli_epi64(_mm512_add_epi64(_mm512_cvttpd_epi64(k), _mm512_set1_epi64(1023)), 52);
    return _mm512_mul_pd(e, _mm512_castsi512_pd(bits));
}

// G groups of eight blocks j .. j + 8 G - 1 into out[0 .. 16 G) (normal 2 (j + l)
// from a, 2 (j + l) + 1 from b); the positions (pos0 + offset) and words of
// rejected normals appended to rp, rw.
template <std::size_t G>
__attribute__((target("avx512f,avx512dq"), always_inline)) inline void normals_groups_avx512(
    const CounterKeys& k, const ZigguratTables& t, std::uint64_t j, double* out, std::int64_t pos0, std::int64_t* rp,
    std::uint64_t* rw, std::int64_t& nrej) {
    const __m512i lanes = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
    const __m512i first = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11),
                  second = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
    __m512i blk[G], a[G], b[G];
#pragma GCC unroll 8
    for (std::size_t g = 0; g < G; ++g) {
        const std::uint64_t first_block = j + 8u * g;
        blk[g] = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(first_block)), lanes);
    }
    philox_lanes_avx512<G>(k, blk, a, b);
#pragma GCC unroll 8
    for (std::size_t g = 0; g < G; ++g) {
        const Zig8 za = zig8_avx512(a[g], t), zb = zig8_avx512(b[g], t);
        _mm512_storeu_pd(out + 16 * g, _mm512_permutex2var_pd(za.z, first, zb.z));
        _mm512_storeu_pd(out + 16 * g + 8, _mm512_permutex2var_pd(za.z, second, zb.z));
        if (za.bad | zb.bad) {
            alignas(64) std::uint64_t wa[8], wb[8];
            _mm512_store_si512(wa, a[g]);
            _mm512_store_si512(wb, b[g]);
            for (int q = 0; q < 8; ++q) {
                const std::int64_t p = pos0 + 16 * static_cast<std::int64_t>(g) + 2 * static_cast<std::int64_t>(q);
                if (za.bad & (1u << q)) rp[nrej] = p, rw[nrej++] = wa[q];
                if (zb.bad & (1u << q)) rp[nrej] = p + 1, rw[nrej++] = wb[q];
            }
        }
    }
}

// The accepted path of normals start .. start + count - 1 (start even, count a
// multiple of 16) into out[0 .. count); rejected positions k (normal start + k)
// and their words appended to rp, rw (count entries at most). Returns their count.
__attribute__((target("avx512f,avx512dq"))) inline std::int64_t normals_fast_avx512(
    const CounterKeys& k, std::uint64_t start, std::int64_t count, double* out, std::int64_t* rp, std::uint64_t* rw) {
    const ZigguratTables& t = zig_tables();
    const std::uint64_t j0 = start >> 1;
    std::int64_t i = 0, nrej = 0;
    for (; i + 64 <= count; i += 64)
        normals_groups_avx512<4>(k, t, j0 + static_cast<std::uint64_t>(i / 2), out + i, i, rp, rw, nrej);
    for (; i + 16 <= count; i += 16)
        normals_groups_avx512<1>(k, t, j0 + static_cast<std::uint64_t>(i / 2), out + i, i, rp, rw, nrej);
    return nrej;
}

// Rejected normals: normal idx[r] of stream stream[r] (first word word[r]) goes to out[pos[r]].
struct ZigRejects {
    std::int64_t* pos;
    std::uint64_t *idx, *stream, *word;
};

// The rejected normals rej[0 .. n) by zig_normal_slow's layer attempts, eight lanes at a
// time, with the round keys of k (its stream words are not used). The normals that
// reach the tail are moved to the front of rej for the scalar code; returns their count.
__attribute__((target("avx512f,avx512dq"))) RELUCORE_NO_FP_CONTRACT inline std::int64_t zig_redraw_avx512(
    const CounterKeys& k, double* out, const ZigRejects& rej, std::int64_t n) {
    RELUCORE_NO_FP_CONTRACT_BODY
    const ZigguratTables& t = zig_tables();
    const __m512i low8 = _mm512_set1_epi64(255), one = _mm512_set1_epi64(1), att_mask = _mm512_set1_epi64(0x7FFF);
    const __m512i retry = _mm512_set1_epi64(static_cast<long long>(1ULL << 63));
    std::int64_t nscalar = 0;
    for (std::int64_t r0 = 0; r0 < n; r0 += 8) {
        const int m = static_cast<int>(n - r0 < 8 ? n - r0 : 8);
        __mmask8 active = static_cast<__mmask8>((1u << m) - 1u), tail = 0;
        const __m512i pos = _mm512_maskz_loadu_epi64(active, rej.pos + r0);
        const __m512i idx = _mm512_maskz_loadu_epi64(active, rej.idx + r0);
        const __m512i stream = _mm512_maskz_loadu_epi64(active, rej.stream + r0);
        const __m512i s0 = _mm512_and_si512(stream, _mm512_set1_epi64(0xFFFFFFFFLL)),
                      s1 = _mm512_srli_epi64(stream, 32);
        __m512i w = _mm512_maskz_loadu_epi64(active, rej.word + r0), att = _mm512_setzero_si512();
        while (active) {
            const Zig8 zz = zig8_avx512(w, t);
            _mm512_mask_i64scatter_pd(out, static_cast<__mmask8>(active & ~zz.bad), pos, zz.z, 8);
            active = static_cast<__mmask8>(active & zz.bad);
            const __m512i layer = _mm512_and_si512(w, low8);
            const __mmask8 now_tail = _mm512_mask_cmpeq_epi64_mask(active, layer, _mm512_setzero_si512());
            tail = static_cast<__mmask8>(tail | now_tail);
            active = static_cast<__mmask8>(active & ~now_tail);
            if (!active) break;
            // attempt att: the wedge uniform from b, the next word a
            __m512i blk[1], a[1], b[1];
            blk[0] =
                _mm512_or_si512(_mm512_or_si512(retry, _mm512_slli_epi64(_mm512_and_si512(att, att_mask), 47)), idx);
            philox_lanes_streams_avx512<1>(k, blk, s0, s1, a, b);
            const __m512d f0 = _mm512_i64gather_pd(layer, t.f, 8);
            const __m512d f1 = _mm512_i64gather_pd(_mm512_add_epi64(layer, one), t.f, 8);
            const __m512d ub =
                _mm512_mul_pd(_mm512_cvtepu64_pd(_mm512_srli_epi64(b[0], 11)), _mm512_set1_pd(0x1.0p-53));
            const __m512d lhs = _mm512_add_pd(f0, _mm512_mul_pd(ub, _mm512_sub_pd(f1, f0)));
            const __m512d y = _mm512_mul_pd(_mm512_mul_pd(_mm512_set1_pd(-0.5), zz.x), zz.x);
            const __mmask8 ok = _mm512_mask_cmp_pd_mask(active, lhs, zig_exp_avx512(y), _CMP_LT_OQ);
            _mm512_mask_i64scatter_pd(out, ok, pos, zz.z, 8);
            active = static_cast<__mmask8>(active & ~ok);
            w = _mm512_mask_blend_epi64(active, w, a[0]);
            att = _mm512_add_epi64(att, one);
        }
        for (int q = 0; q < m; ++q)
            if (tail & (1u << q)) {
                rej.pos[nscalar] = rej.pos[r0 + q];
                rej.idx[nscalar] = rej.idx[r0 + q];
                rej.stream[nscalar] = rej.stream[r0 + q];
                rej.word[nscalar++] = rej.word[r0 + q];
            }
    }
    return nscalar;
}

RELUCORE_AVX512_WARNINGS_ON
#endif

}  // namespace detail
}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
