// A vectorised counter-based generator: Philox4x32-10 keyed by
// (key, stream, counter), with uniform, Rademacher and normal variates.
//
// Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as
// easy as 1, 2, 3", SC'11) maps a 128-bit counter under a 64-bit key through
// ten rounds of 32x32->64-bit products; it passes TestU01's BigCrush in the
// paper's Table 2 and is the function of Random123's philox4x32 (the
// known-answer vectors in tests/random/ are Random123's; the function, its
// keys and the AVX-512F kernel are in random/philox32.hpp). Its products have
// an AVX2 form (vpmuludq: four 32x32->64 products per instruction): eight
// blocks at once on AVX2 (one per 32-bit lane), and on AVX-512F eight per
// vector with one block per 64-bit lane (a full product per lane). On AVX-512F
// with AVX-512DQ the normals are made from words kept in registers
// (random/normals_avx512.hpp).
//
// Layout. Block j of (key, stream) is
//     philox4x32_10(counter = (lo j, hi j, lo stream, hi stream), key = (lo key, hi key)),
// four 32-bit words w0..w3, read as two 64-bit words a_j = w0 + 2^32 w1 and
// b_j = w2 + 2^32 w3. The variates with index i of (key, stream) are:
//   * uniform i:    (v >> 11) 2^-53 in [0, 1), v = a_j for i = 2j, b_j for i = 2j + 1;
//   * Rademacher i: 1 - 2 bit, the bit (i mod 128) of (a_j, b_j), j = i / 128
//                   (bits 0..63 from a_j, 64..127 from b_j);
//   * normal i:     the ziggurat normal (random/ziggurat.hpp) of the word v of
//                   uniform i, i < 2^47; the few words the ziggurat rejects
//                   (about 1.2 %) are redrawn from the words of blocks
//                   2^63 + tag 2^62 + k 2^47 + i (attempt or tail try k < 2^15,
//                   tag 0 for the layers, 1 for the tail), which no variate uses.
// So every variate is a pure function of (key, stream, index): a range of
// indices gives the same numbers however it is cut into calls, on any thread.
//
// Paths: scalar, AVX2 and AVX-512F, chosen at run time (counter_path();
// the environment variable RELUCORE_SIMD of simd.hpp caps it: scalar or sse2
// give the scalar path, avx the AVX2 path). The Philox words are integers;
// the conversions perform the same IEEE operations on every path, so all
// paths give bitwise the same numbers.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/random/normals_avx512.hpp"
#include "relucore/random/philox32.hpp"
#include "relucore/random/rng.hpp"
#include "relucore/random/ziggurat.hpp"
#include "relucore/simd.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

// The code paths of the generator, narrowest first.
enum class CounterPath : int { scalar = 0, avx2 = 1, avx512 = 2 };

// The widest path the CPU supports within a SIMD level of simd.hpp (a level
// already read, e.g. by an engine when it is built).
inline CounterPath counter_path_for(int level) {
#if defined(RELUCORE_SIMD_DISPATCH)
    // (the AVX-512F path finishes its remainders with the AVX2 code)
    if (level >= simd::kAvx512 && simd::has_avx512f() && simd::has_avx2()) return CounterPath::avx512;
    if (level >= simd::kAvx && simd::has_avx2()) return CounterPath::avx2;
#else
    (void)level;
#endif
    return CounterPath::scalar;
}

// The widest path the CPU supports, capped by RELUCORE_SIMD (read on every
// call: call once per batch of work).
inline CounterPath counter_path() {
    return counter_path_for(simd::level());
}

inline const char* counter_path_name(CounterPath p) {
    return p == CounterPath::avx512 ? "avx512" : p == CounterPath::avx2 ? "avx2" : "scalar";
}

namespace detail {

#if defined(RELUCORE_SIMD_DISPATCH)
// One Philox4x32 round on eight blocks (block b in 32-bit lane b of c0..c3);
// the 32x32->64 products of the even and the odd lanes by vpmuludq.
__attribute__((target("avx2"), always_inline)) inline void philox_round_avx2(__m256i& c0, __m256i& c1, __m256i& c2,
                                                                             __m256i& c3, __m256i k0, __m256i k1) {
    const __m256i m0 = _mm256_set1_epi32(static_cast<int>(philox32_m0));
    const __m256i m1 = _mm256_set1_epi32(static_cast<int>(philox32_m1));
    const __m256i pe0 = _mm256_mul_epu32(c0, m0), po0 = _mm256_mul_epu32(_mm256_srli_epi64(c0, 32), m0);
    const __m256i pe1 = _mm256_mul_epu32(c2, m1), po1 = _mm256_mul_epu32(_mm256_srli_epi64(c2, 32), m1);
    const __m256i lo0 = _mm256_blend_epi32(pe0, _mm256_slli_epi64(po0, 32), 0xAA);
    const __m256i hi0 = _mm256_blend_epi32(_mm256_srli_epi64(pe0, 32), po0, 0xAA);
    const __m256i lo1 = _mm256_blend_epi32(pe1, _mm256_slli_epi64(po1, 32), 0xAA);
    const __m256i hi1 = _mm256_blend_epi32(_mm256_srli_epi64(pe1, 32), po1, 0xAA);
    c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), k0);
    c1 = lo1;
    c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), k1);
    c3 = lo0;
}

// Stores eight blocks as a and b words, in block order.
__attribute__((target("avx2"), always_inline)) inline void philox_store_avx2(__m256i c0, __m256i c1, __m256i c2,
                                                                             __m256i c3, std::uint64_t* a,
                                                                             std::uint64_t* b) {
    // (c0, c1) interleaved are the a words of blocks 0 1 | 4 5 and 2 3 | 6 7.
    const __m256i alo = _mm256_unpacklo_epi32(c0, c1), ahi = _mm256_unpackhi_epi32(c0, c1);
    const __m256i blo = _mm256_unpacklo_epi32(c2, c3), bhi = _mm256_unpackhi_epi32(c2, c3);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(a), _mm256_permute2x128_si256(alo, ahi, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(a + 4), _mm256_permute2x128_si256(alo, ahi, 0x31));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(b), _mm256_permute2x128_si256(blo, bhi, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(b + 4), _mm256_permute2x128_si256(blo, bhi, 0x31));
}

// Sixteen blocks per iteration as two independent groups of eight (their
// rounds interleave, hiding the products' latency). A group of blocks whose
// low counter word would wrap is done by the scalar code. Returns the blocks done.
__attribute__((target("avx2"))) inline std::int64_t counter_words_avx2(const CounterKeys& k, std::uint64_t block0,
                                                                       std::int64_t count, std::uint64_t* a,
                                                                       std::uint64_t* b) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), eight = _mm256_set1_epi32(8);
    std::int64_t i = 0;
    for (; i + 16 <= count; i += 16) {
        const std::uint64_t j = block0 + static_cast<std::uint64_t>(i);
        if (static_cast<std::uint32_t>(j) > 0xFFFFFFFFu - 15u) {
            counter_words_scalar(k, j, 16, a + i, b + i);
            continue;
        }
        __m256i x0 = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(j))), lanes);
        __m256i y0 = _mm256_add_epi32(x0, eight);
        __m256i x1 = _mm256_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(j >> 32))), y1 = x1;
        __m256i x2 = _mm256_set1_epi32(static_cast<int>(k.s0)), y2 = x2;
        __m256i x3 = _mm256_set1_epi32(static_cast<int>(k.s1)), y3 = x3;
        for (int round = 0; round < 10; ++round) {
            const __m256i k0 = _mm256_set1_epi32(static_cast<int>(k.k0[round]));
            const __m256i k1 = _mm256_set1_epi32(static_cast<int>(k.k1[round]));
            philox_round_avx2(x0, x1, x2, x3, k0, k1);
            philox_round_avx2(y0, y1, y2, y3, k0, k1);
        }
        philox_store_avx2(x0, x1, x2, x3, a + i, b + i);
        philox_store_avx2(y0, y1, y2, y3, a + i + 8, b + i + 8);
    }
    return i;
}

#endif

}  // namespace detail

namespace detail {
// v[m][q] = 1 - 2 (bit q of m): the Rademacher variates of a nibble.
struct RademacherNibbles {
    double v[16][4];
    constexpr RademacherNibbles() : v{} {
        for (int m = 0; m < 16; ++m)
            for (int q = 0; q < 4; ++q) v[m][q] = 1.0 - 2.0 * ((m >> q) & 1);
    }
};

#if defined(RELUCORE_SIMD_DISPATCH)
// out[8 q + k] = 1 - 2 (bit k of bytes[q]), q < nbytes: eight variates per masked blend.
__attribute__((target("avx512f"))) inline void rademacher_bytes_avx512(const std::uint8_t* bytes, std::int64_t nbytes,
                                                                       double* out) {
    const __m512d plus = _mm512_set1_pd(1.0), minus = _mm512_set1_pd(-1.0);
    for (std::int64_t q = 0; q < nbytes; ++q)
        _mm512_storeu_pd(out + 8 * q, _mm512_mask_blend_pd(static_cast<__mmask8>(bytes[q]), plus, minus));
}
#endif
}  // namespace detail

inline const detail::RademacherNibbles& rademacher_nibbles() {
    static constexpr detail::RademacherNibbles table{};
    return table;
}

// The variates of one (key, stream); see the top of this file for the layout.
class CounterStream {
public:
    CounterStream(std::uint64_t key, std::uint64_t stream, CounterPath path = counter_path())
        : keys_(detail::counter_keys(key, stream)), path_(path) {}

    CounterPath path() const { return path_; }

    // Normals have indices below 2^47 (the blocks from 2^63 up hold the ziggurat's redraws).
    static constexpr std::uint64_t kMaxNormals = std::uint64_t(1) << 47;

    // a[i], b[i] = the 64-bit words of block block0 + i, i < count.
    void words(std::uint64_t block0, std::int64_t count, std::uint64_t* a, std::uint64_t* b) const {
        std::int64_t i = 0;
#if defined(RELUCORE_SIMD_DISPATCH)
        if (path_ == CounterPath::avx512) i = detail::counter_words_avx512(keys_, block0, count, a, b);
        if (path_ != CounterPath::scalar)
            i += detail::counter_words_avx2(keys_, block0 + static_cast<std::uint64_t>(i), count - i, a + i, b + i);
#endif
        detail::counter_words_scalar(keys_, block0 + static_cast<std::uint64_t>(i), count - i, a + i, b + i);
    }

    // out[k] = normal start + k, k < count (start + count <= kMaxNormals).
    void normals(std::uint64_t start, std::int64_t count, double* out) const {
#if defined(RELUCORE_SIMD_DISPATCH)
        if (path_ == CounterPath::avx512 && simd::has_avx512dq() && count >= 32) {
            const std::int64_t head = static_cast<std::int64_t>(start & 1u);  // to an even index
            if (head) normals_words(start, 1, out);
            std::int64_t k = head;
            RejectBuffer buf;
            while (count - k >= 16) {
                const std::int64_t m = std::min<std::int64_t>(kBody, (count - k) & ~std::int64_t(15));
                const std::uint64_t s = start + static_cast<std::uint64_t>(k);
                flush(buf, out, buf.add(keys_, s, m, out + k, k));
                buf.n = 0;
                k += m;
            }
            if (k < count)
                flush(buf, out, buf.add_short(keys_, start + static_cast<std::uint64_t>(k), count - k, out + k, k));
            return;
        }
#endif
        normals_words(start, count, out);
    }

    // out[k] = uniform start + k in [0, 1), k < count.
    void uniforms(std::uint64_t start, std::int64_t count, double* out) const {
        for_each_word(start, count,
                      [&](std::int64_t k, std::uint64_t w) { out[k] = static_cast<double>(w >> 11) * 0x1.0p-53; });
    }

    // out[k] = scale (2 u - 1) with u = uniform start + k: uniform on [-scale, scale).
    void symmetric_uniforms(std::uint64_t start, std::int64_t count, double scale, double* out) const {
        for_each_word(start, count, [&](std::int64_t k, std::uint64_t w) {
            out[k] = (2.0 * (static_cast<double>(w >> 11) * 0x1.0p-53) - 1.0) * scale;
        });
    }

    // out[k] = Rademacher variate start + k (+1 or -1), k < count.
    void rademacher(std::uint64_t start, std::int64_t count, double* out) const {
#if defined(RELUCORE_SIMD_DISPATCH)
        if (path_ == CounterPath::avx512 && count >= 128) {  // whole bytes of the words by masked blends
            const std::int64_t head = static_cast<std::int64_t>((8u - (start & 7u)) & 7u);
            const std::int64_t body = (count - head) & ~std::int64_t(7);
            rademacher_generic(start, head, out);
            const std::uint64_t s =
                start + static_cast<std::uint64_t>(head);  // variate s is bit s mod 64 of word s / 64
            const std::int64_t nwords =
                static_cast<std::int64_t>((s + static_cast<std::uint64_t>(body) - 1) / 64 - s / 64 + 1);
            const std::int64_t skip = static_cast<std::int64_t>((s & 63u) / 8);
            std::int64_t done = 0;  // bytes stored
            word_chunks(s / 64, nwords, [&](std::int64_t k, const std::uint64_t* w, std::int64_t m) {
                const auto* bytes = reinterpret_cast<const std::uint8_t*>(w);
                const std::int64_t from = k == 0 ? skip : 0, to = std::min<std::int64_t>(8 * m, body / 8 - done + from);
                detail::rademacher_bytes_avx512(bytes + from, to - from, out + head + 8 * done);
                done += to - from;
            });
            rademacher_generic(s + static_cast<std::uint64_t>(body), count - head - body, out + head + body);
            return;
        }
#endif
        rademacher_generic(start, count, out);
    }

private:
    void rademacher_generic(std::uint64_t start, std::int64_t count, double* out) const {
        alignas(64) std::uint64_t a[kChunk], b[kChunk];
        std::int64_t k = 0;
        while (k < count) {
            const std::uint64_t i = start + static_cast<std::uint64_t>(k);
            const std::uint64_t j0 = i >> 7;
            const std::uint64_t last = (i + static_cast<std::uint64_t>(count - k) - 1) >> 7;
            const std::int64_t nb = static_cast<std::int64_t>(std::min<std::uint64_t>(kChunk, last - j0 + 1));
            words(j0, nb, a, b);
            const std::int64_t end = std::min<std::int64_t>(
                count, k + static_cast<std::int64_t>((j0 + static_cast<std::uint64_t>(nb)) * 128 - i));
            while (k < end) {
                const std::uint64_t bit = (start + static_cast<std::uint64_t>(k)) - (j0 << 7);
                const std::uint64_t blk = bit >> 7, pos = bit & 127u;
                const std::uint64_t w = (pos < 64 ? a[blk] : b[blk]) >> (pos & 63u);
                if ((pos & 3u) == 0 && end - k >= 4) {  // four variates from a nibble
                    const double* v = rademacher_nibbles().v[w & 15u];
                    for (int q = 0; q < 4; ++q) out[k + q] = v[q];
                    k += 4;
                } else {
                    out[k++] = 1.0 - 2.0 * static_cast<double>(w & 1u);
                }
            }
        }
    }

    static constexpr std::int64_t kChunk = 256;      // blocks per batch (on the stack)
    static constexpr std::int64_t kShortChunk = 16;  // blocks per batch of a short draw
    static constexpr std::int64_t kShort = 16;       // words of a short draw (at most kShortChunk blocks)

    static constexpr std::int64_t kBody = 1024;  // normals per batch of the AVX-512 path

#if defined(RELUCORE_SIMD_DISPATCH)
    friend void counter_normal_rows(std::uint64_t, std::uint64_t, std::int64_t, std::uint64_t, std::int64_t,
                                    CounterPath, double*, std::int64_t);

    // The rejected normals of up to kBody normals, for one vector redraw.
    struct RejectBuffer {
        alignas(64) std::int64_t pos[kBody];
        alignas(64) std::uint64_t idx[kBody], stream[kBody], word[kBody];
        std::int64_t n = 0;
        // The accepted path of normals s .. s + m - 1 (s even, m a multiple of 16) of the
        // stream of keys into dst; rejects recorded at out offsets pos0 + k. Returns n.
        std::int64_t add(const detail::CounterKeys& keys, std::uint64_t s, std::int64_t m, double* dst,
                         std::int64_t pos0) {
            const std::int64_t n0 = n;
            n += detail::normals_fast_avx512(keys, s, m, dst, pos + n0, word + n0);
            return finish(keys, s, n0, pos0);
        }
        // The same for m < 16 normals: one group of 16 drawn, m kept.
        std::int64_t add_short(const detail::CounterKeys& keys, std::uint64_t s, std::int64_t m, double* dst,
                               std::int64_t pos0) {
            alignas(64) double group[16];
            const std::int64_t n0 = n, n1 = n + detail::normals_fast_avx512(keys, s, 16, group, pos + n0, word + n0);
            std::copy(group, group + m, dst);
            for (std::int64_t r = n0; r < n1; ++r)
                if (pos[r] < m) {
                    pos[n] = pos[r];
                    word[n++] = word[r];
                }
            return finish(keys, s, n0, pos0);
        }

    private:
        // Completes the rejects from n0 on: their normal indices and stream, offsets into out.
        std::int64_t finish(const detail::CounterKeys& keys, std::uint64_t s, std::int64_t n0, std::int64_t pos0) {
            const std::uint64_t st = keys.s0 | (static_cast<std::uint64_t>(keys.s1) << 32);
            for (std::int64_t r = n0; r < n; ++r) {
                idx[r] = s + static_cast<std::uint64_t>(pos[r]);
                stream[r] = st;
                pos[r] += pos0;
            }
            return n;
        }
    };

    // Redraws buf's n rejects into out: vector layer attempts, the tails by the scalar code.
    void flush(RejectBuffer& buf, double* out, std::int64_t n) const {
        const detail::ZigRejects rej{buf.pos, buf.idx, buf.stream, buf.word};
        const std::int64_t nscalar = detail::zig_redraw_avx512(keys_, out, rej, n);
        for (std::int64_t r = 0; r < nscalar; ++r) {
            detail::CounterKeys k = keys_;
            k.s0 = static_cast<std::uint32_t>(buf.stream[r]);
            k.s1 = static_cast<std::uint32_t>(buf.stream[r] >> 32);
            out[buf.pos[r]] = slow_normal(k, buf.word[r], buf.idx[r]);
        }
    }
#endif

    // normals() from words stored in chunks, transformed by the stream's path.
    void normals_words(std::uint64_t start, std::int64_t count, double* out) const {
        if (count <= kShort) return normals_words_in<kShortChunk>(start, count, out);
        normals_words_in<kChunk>(start, count, out);
    }
    template <std::int64_t Chunk>
    void normals_words_in(std::uint64_t start, std::int64_t count, double* out) const {
        std::int64_t rej[static_cast<std::size_t>(2 * Chunk)];
        word_chunks_in<Chunk>(start, count, [&](std::int64_t k, const std::uint64_t* w, std::int64_t m) {
            const std::int64_t nrej = ziggurat_fast(w, out + k, m, rej);
            for (std::int64_t r = 0; r < nrej; ++r)
                out[k + rej[r]] = slow_normal(keys_, w[rej[r]], start + static_cast<std::uint64_t>(k + rej[r]));
        });
    }

    // Normal idx (first word w) of the stream of keys k when the accepted path rejects w:
    // the scalar redraws.
    static double slow_normal(const detail::CounterKeys& k, std::uint64_t w, std::uint64_t idx) {
        return detail::zig_normal_slow(
            w, [&](std::uint32_t att, std::uint32_t tag, std::uint64_t& wa, std::uint64_t& wb) {
                detail::counter_words_scalar(k, detail::counter_retry_block(idx, att, tag), 1, &wa, &wb);
            });
    }

    // The accepted path of the ziggurat on w[0..m) by the stream's path; the
    // rejected indices into rej, their count returned.
    std::int64_t ziggurat_fast(const std::uint64_t* w, double* z, std::int64_t m, std::int64_t* rej) const {
        std::int64_t k = 0, nrej = 0;
#if defined(RELUCORE_SIMD_DISPATCH)
        if (path_ == CounterPath::avx512 && simd::has_avx512dq()) k = detail::zig_fast_avx512(w, z, k, m, rej, nrej);
        if (path_ != CounterPath::scalar) k = detail::zig_fast_avx2(w, z, k, m, rej, nrej);
#endif
        return detail::zig_fast_scalar(w, z, k, m, rej, nrej);
    }

    // f(k, w, m) chunk by chunk: w[q] is the 64-bit word of index start + k + q
    // (two per block: a_j, b_j), q < m, until k + m = count.
    // A short draw (a single normal or uniform of a chi-square's rejection sampler: the
    // Gram sampler makes two per diagonal entry) works in a chunk of kShortChunk blocks,
    // not in kChunk's 12 KB of stack; the words are the same whatever the chunk.
    template <class F>
    void word_chunks(std::uint64_t start, std::int64_t count, F&& f) const {
        if (count <= kShort) return word_chunks_in<kShortChunk>(start, count, std::forward<F>(f));
        word_chunks_in<kChunk>(start, count, std::forward<F>(f));
    }
    template <std::int64_t Chunk, class F>
    void word_chunks_in(std::uint64_t start, std::int64_t count, F&& f) const {
        constexpr auto blocks = static_cast<std::size_t>(Chunk);
        alignas(64) std::uint64_t a[blocks], b[blocks], w[2 * blocks];
        std::int64_t k = 0;
        while (k < count) {
            const std::uint64_t i = start + static_cast<std::uint64_t>(k);
            const std::uint64_t j0 = i >> 1;
            const std::uint64_t last = (i + static_cast<std::uint64_t>(count - k) - 1) >> 1;
            const std::int64_t nb = static_cast<std::int64_t>(std::min<std::uint64_t>(Chunk, last - j0 + 1));
            words(j0, nb, a, b);
            for (std::int64_t p = 0; p < nb; ++p) {
                w[2 * p] = a[p];
                w[2 * p + 1] = b[p];
            }
            const std::int64_t off = static_cast<std::int64_t>(i - 2 * j0);
            const std::int64_t m = std::min<std::int64_t>(count - k, 2 * nb - off);
            f(k, w + off, m);
            k += m;
        }
    }

    // f(k, w) for k < count with w the 64-bit word of index start + k.
    template <class F>
    void for_each_word(std::uint64_t start, std::int64_t count, F&& f) const {
        word_chunks(start, count, [&](std::int64_t k, const std::uint64_t* w, std::int64_t m) {
            for (std::int64_t q = 0; q < m; ++q) f(k + q, w[q]);
        });
    }

    detail::CounterKeys keys_;
    CounterPath path_;
};

// out[q ld + k] = normal start + k of (key, stream0 + q), q < rows, k < count
// (start + count <= CounterStream::kMaxNormals): the same numbers as one
// CounterStream::normals call per row, with the rejected normals of all rows
// redrawn together on the AVX-512 path (short rows, as the mean-field noise's,
// then fill the redraw's vectors).
#if defined(RELUCORE_SIMD_DISPATCH)
inline void counter_normal_rows(std::uint64_t key, std::uint64_t stream0, std::int64_t rows, std::uint64_t start,
                                std::int64_t count, CounterPath path, double* out, std::int64_t ld) {
    const std::int64_t head = static_cast<std::int64_t>(start & 1u);
    const std::int64_t body = (count - head) & ~std::int64_t(15);
    if (!(path == CounterPath::avx512 && simd::has_avx512dq()) || body < 16 || body + 16 > CounterStream::kBody) {
        for (std::int64_t q = 0; q < rows; ++q)
            CounterStream(key, stream0 + static_cast<std::uint64_t>(q), path).normals(start, count, out + q * ld);
        return;
    }
    const CounterStream first(key, stream0, path);
    CounterStream::RejectBuffer buf;
    for (std::int64_t q = 0; q < rows; ++q) {
        const CounterStream s(key, stream0 + static_cast<std::uint64_t>(q), path);
        double* row = out + q * ld;
        if (head) s.normals_words(start, 1, row);
        if (buf.n + body + 16 > CounterStream::kBody) {
            first.flush(buf, out, buf.n);
            buf.n = 0;
        }
        buf.add(s.keys_, start + static_cast<std::uint64_t>(head), body, row + head, q * ld + head);
        if (head + body < count)
            buf.add_short(s.keys_, start + static_cast<std::uint64_t>(head + body), count - head - body,
                          row + head + body, q * ld + head + body);
    }
    first.flush(buf, out, buf.n);
}
#else
inline void counter_normal_rows(std::uint64_t key, std::uint64_t stream0, std::int64_t rows, std::uint64_t start,
                                std::int64_t count, CounterPath path, double* out, std::int64_t ld) {
    for (std::int64_t q = 0; q < rows; ++q)
        CounterStream(key, stream0 + static_cast<std::uint64_t>(q), path).normals(start, count, out + q * ld);
}
#endif

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
