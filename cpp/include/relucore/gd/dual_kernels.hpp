// The product of the dual step, d_beta_k = K d_alpha_k, for n > 16 (the
// padded kernels of DualGD cover n <= 16): one neuron, or every neuron of the
// step in one pass over K tile by tile, vectorised with AVX or AVX-512F chosen
// at run time (simd.hpp; RELUCORE_SIMD caps the level).
//
// Every entry j of every product is summed exactly as the plain loop
// `acc[j] += c_i * K(i, j)` does it: from the value already in acc, over the
// rows i with c_i != 0 in increasing i, one rounded multiply then one rounded
// add per term (no fused multiply-add). The vector paths only put several j
// (and several neurons) side by side, so all paths give bitwise the same result
// (tests/gd/test_dual_kernels.py).
#pragma once

#include "relucore/core/abi.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <type_traits>
#include <vector>

#include "relucore/core/types.hpp"
#include "relucore/simd.hpp"

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {
namespace dual_kernels {

/// acc[j] += c_i K_ij for j < width over the rows i < n with c_i = da_i != 0,
/// in increasing i (rows stride apart). Stride and width are Index or
/// std::integral_constant (compile-time, for DualGD's padded kernels).
template <class Stride, class Width>
RELUCORE_NO_FP_CONTRACT inline void add_active_rows_plain(const Scalar* __restrict K, Stride stride, Index n,
                                                          Width width, const Scalar* __restrict da,
                                                          Scalar* __restrict acc) {
    RELUCORE_NO_FP_CONTRACT_BODY
    for (Index i = 0; i < n; ++i) {
        const Scalar c = da[i];
        if (c == 0) continue;
        const Scalar* __restrict Ki = K + i * stride;
        for (Index j = 0; j < width; ++j) acc[j] += c * Ki[j];
    }
}

/// The rows of K the products read, one list per neuron q < lists(): rows(q)[r]
/// (increasing: the rows with a non-zero coefficient), coefs(q)[r], count[q] of
/// them. Sized once (resize), refilled without allocation before every product.
struct ActiveRows {
    std::vector<Index> count;   ///< entries of each list
    std::vector<Index> cursor;  ///< per list: the first entry not yet summed (kernel scratch)
    std::vector<Scalar*> acc;   ///< per list: the product it adds to (kernel scratch)

    void resize(Index lists, Index n) {
        n_ = n;
        const auto size = static_cast<std::size_t>(lists);
        row_.assign(size * static_cast<std::size_t>(n), 0);
        coef_.assign(size * static_cast<std::size_t>(n), 0);
        count.assign(size, 0);
        cursor.assign(size, 0);
        acc.assign(size, nullptr);
    }
    /// Two lists of n rows (add_active_rows, add_active_rows2).
    void resize(Index n) { resize(2, n); }
    Index lists() const { return static_cast<Index>(count.size()); }
    const Index* rows(int q) const { return row_.data() + static_cast<std::size_t>(q) * static_cast<std::size_t>(n_); }
    const Scalar* coefs(int q) const {
        return coef_.data() + static_cast<std::size_t>(q) * static_cast<std::size_t>(n_);
    }
    /// Fills list q from the n coefficients da (n <= the n of resize).
    void gather(int q, Index n, const Scalar* da) {
        Index c = 0;
        Index* rows = row_.data() + static_cast<std::size_t>(q) * static_cast<std::size_t>(n_);
        Scalar* co = coef_.data() + static_cast<std::size_t>(q) * static_cast<std::size_t>(n_);
        for (Index i = 0; i < n; ++i) {
            rows[c] = i;
            co[c] = da[i];
            c += da[i] != 0;  // branch-free: the entry is kept only when non-zero
        }
        count[static_cast<std::size_t>(q)] = c;
    }

private:
    Index n_ = 0;
    std::vector<Index> row_;
    std::vector<Scalar> coef_;
};

/// Bytes of K a tile of rows x columns occupies at most: the tile stays in the
/// L1 data cache (48 KB on recent x86 cores) beside the lists while every
/// neuron's rows in it stream past, so K is read from memory once per product
/// of all neurons. 16 KB (32 rows of a 64-column AVX-512 block) is the fastest
/// of the sizes tried between 8 and 512 KB (bench/HISTORY.md).
constexpr Index kTileBytes = 16384;  // 16 KB

/// Rows of a tile of K for a block of w columns.
constexpr Index tile_rows(Index w) {
    return std::max<Index>(1, kTileBytes / (w * static_cast<Index>(sizeof(Scalar))));
}

/// Whether K (n x n) is larger than a core's L2 cache (2 MB: n > 512): only
/// then does summing every neuron in one pass, tile by tile
/// (add_active_rows_all), pay over one or two neurons per pass, each of which
/// reads K from memory again. Below, per-neuron passes let the caller's work
/// on one neuron's product overlap the next product (DualGD's gradient norm,
/// a serial chain of n m additions, is slower when it waits for all
/// products).
constexpr Index kTiledMinRows = 513;
constexpr bool tiles_pay(Index n) {
    return n >= kTiledMinRows;
}

namespace detail {

#if defined(RELUCORE_SIMD_DISPATCH)

// NAME<L>(K, stride, list, neurons, j0, width): the columns [j0, j0 + a
// multiple of L * LANES) of the products of the first `neurons` lists,
// list.acc[q] += K da_q. Per block of columns and per tile of rows (at most
// kTileBytes of K), each neuron's sums stay in L vector registers while its
// active rows in the tile stream past, so the tile is read from memory once
// for all neurons; the sums go back to acc between tiles (a store and a load:
// the same values). Returns the first column left. One body, instantiated per
// instruction set (a target attribute cannot be a template argument); no FMA
// contraction (RELUCORE_NO_FP_CONTRACT and RELUCORE_NO_FP_CONTRACT_BODY).
#define RELUCORE_DUAL_ROWS(NAME, TARGET, V, LANES, LOAD, STORE, SET1, MUL, ADD)                                    \
    template <int L, bool Tiled>                                                                                   \
    __attribute__((target(TARGET), always_inline)) RELUCORE_NO_FP_CONTRACT inline Index NAME(                      \
        const Scalar* __restrict K, Index stride, Index n, ActiveRows& list, int neurons, Index j0, Index width) { \
        RELUCORE_NO_FP_CONTRACT_BODY                                                                               \
        constexpr Index lanes = (LANES), w = lanes * L;                                                            \
        const Index tile = Tiled ? tile_rows(w) : n;                                                               \
        const Index j1 = j0 + (width - j0) / w * w;                                                                \
        for (Index j = j0; j < j1; j += w) {                                                                       \
            if (Tiled)                                                                                             \
                for (int q = 0; q < neurons; ++q) list.cursor[static_cast<std::size_t>(q)] = 0;                    \
            for (Index i0 = 0; i0 < n; i0 += tile) {                                                               \
                const Index i1 = std::min(n, i0 + tile);                                                           \
                for (int q = 0; q < neurons; ++q) {                                                                \
                    const auto qs = static_cast<std::size_t>(q);                                                   \
                    const Index* __restrict rows = list.rows(q);                                                   \
                    const Scalar* __restrict coef = list.coefs(q);                                                 \
                    const Index count = list.count[qs];                                                            \
                    Index r = Tiled ? list.cursor[qs] : 0;                                                         \
                    if (r == count || (Tiled && rows[r] >= i1)) continue;                                          \
                    Scalar* __restrict out = list.acc[qs] + j;                                                     \
                    V s[array_extent<L>];                                                                          \
                    for (Index l = 0; l < L; ++l) s[l] = LOAD(out + l * lanes);                                    \
                    for (; r < count && (!Tiled || rows[r] < i1); ++r) {                                           \
                        const Scalar* __restrict Ki = K + rows[r] * stride + j;                                    \
                        const V c = SET1(coef[r]);                                                                 \
                        for (Index l = 0; l < L; ++l) s[l] = ADD(s[l], MUL(c, LOAD(Ki + l * lanes)));              \
                    }                                                                                              \
                    for (Index l = 0; l < L; ++l) STORE(out + l * lanes, s[l]);                                    \
                    if (Tiled) list.cursor[qs] = r;                                                                \
                }                                                                                                  \
            }                                                                                                      \
        }                                                                                                          \
        return j1;                                                                                                 \
    }

RELUCORE_DUAL_ROWS(add_rows_block_avx, "avx", __m256d, 4, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_set1_pd,
                   _mm256_mul_pd, _mm256_add_pd)
RELUCORE_DUAL_ROWS(add_rows_block_avx512, "avx512f", __m512d, 8, _mm512_loadu_pd, _mm512_storeu_pd, _mm512_set1_pd,
                   _mm512_mul_pd, _mm512_add_pd)
#undef RELUCORE_DUAL_ROWS

// The tiled pass (n > 512, every neuron) sums kWideBlocks vectors per neuron side by side: each
// is a chain of dependent adds (the order of every sum is fixed), so more chains keep the
// adders busy where a row's four would wait on the latency of the add; the narrower blocks
// take the columns left.
constexpr int kWideBlocks = 8;

template <bool Tiled>
__attribute__((target("avx"))) RELUCORE_NO_FP_CONTRACT inline Index add_rows_avx(const Scalar* K, Index stride, Index n,
                                                                                 ActiveRows& list, int neurons) {
    Index j = 0;
    if constexpr (Tiled) j = add_rows_block_avx<kWideBlocks, Tiled>(K, stride, n, list, neurons, j, n);
    j = add_rows_block_avx<4, Tiled>(K, stride, n, list, neurons, j, n);
    return add_rows_block_avx<1, Tiled>(K, stride, n, list, neurons, j, n);
}

template <bool Tiled>
__attribute__((target("avx512f"))) RELUCORE_NO_FP_CONTRACT inline Index add_rows_avx512(const Scalar* K, Index stride,
                                                                                        Index n, ActiveRows& list,
                                                                                        int neurons) {
    Index j = 0;
    if constexpr (Tiled) j = add_rows_block_avx512<kWideBlocks, Tiled>(K, stride, n, list, neurons, j, n);
    j = add_rows_block_avx512<4, Tiled>(K, stride, n, list, neurons, j, n);
    j = add_rows_block_avx512<1, Tiled>(K, stride, n, list, neurons, j, n);
    return add_rows_block_avx<1, Tiled>(K, stride, n, list, neurons, j, n);
}

#endif

/// The columns [j0, n) left by the vector paths (all of them on the scalar
/// level), row by row of each list.
inline void add_rows_tail(const Scalar* __restrict K, Index stride, Index n, const ActiveRows& list, int neurons,
                          Index j0) {
    for (int q = 0; q < neurons; ++q) {
        const auto qs = static_cast<std::size_t>(q);
        Scalar* __restrict out = list.acc[qs];
        const Index* rows = list.rows(q);
        const Scalar* coef = list.coefs(q);
        for (Index r = 0; r < list.count[qs]; ++r) {
            const Scalar* __restrict Ki = K + rows[r] * stride;
            const Scalar c = coef[r];
            for (Index j = j0; j < n; ++j) out[j] += c * Ki[j];
        }
    }
}

/// list.acc[q] += K da_q for the q < neurons lists already gathered.
inline void add_gathered(const Scalar* K, Index stride, Index n, int neurons, int level, ActiveRows& list) {
    Index j = 0;
#if defined(RELUCORE_SIMD_DISPATCH)
    const bool tiled = tiles_pay(n);  // below, the cursors would only cost time
    if (level >= simd::kAvx512)
        j = tiled ? add_rows_avx512<true>(K, stride, n, list, neurons)
                  : add_rows_avx512<false>(K, stride, n, list, neurons);
    else if (level >= simd::kAvx)
        j = tiled ? add_rows_avx<true>(K, stride, n, list, neurons) : add_rows_avx<false>(K, stride, n, list, neurons);
#else
    (void)level;
#endif
    add_rows_tail(K, stride, n, list, neurons, j);
}

}  // namespace detail

/// acc[j] += sum over i < n with da_i != 0 (increasing i) of da_i K_ij, for
/// j < n; K row-major with row stride `stride`. `level` is a simd level
/// (simd::level(), read once by the caller): kAvx and kAvx512 take the vector
/// paths, any lower level scalar loops; all give the same bits. `list` is
/// scratch space for at least one list of n rows (ActiveRows::resize).
inline void add_active_rows(const Scalar* K, Index stride, Index n, const Scalar* da, Scalar* acc, int level,
                            ActiveRows& list) {
    list.gather(0, n, da);
    list.acc[0] = acc;
    detail::add_gathered(K, stride, n, 1, level, list);
}

/// add_active_rows() for two neurons in one pass over K: acc0 += K da0 and
/// acc1 += K da1 (each bitwise as two separate calls).
inline void add_active_rows2(const Scalar* K, Index stride, Index n, const Scalar* da0, const Scalar* da1, Scalar* acc0,
                             Scalar* acc1, int level, ActiveRows& list) {
    list.gather(0, n, da0);
    list.gather(1, n, da1);
    list.acc[0] = acc0;
    list.acc[1] = acc1;
    detail::add_gathered(K, stride, n, 2, level, list);
}

/// add_active_rows() for every neuron k < m at once: acc_k += K da_k, with da_k
/// the row k of da (row stride da_stride) and acc_k that of acc (acc_stride).
/// Bitwise as m separate calls (each entry summed in the same order); K is read
/// from memory once for all of them, a tile at a time, where m separate calls
/// read it m times. `list` needs m lists of n rows.
inline void add_active_rows_all(const Scalar* K, Index stride, Index n, Index m, const Scalar* da, Index da_stride,
                                Scalar* acc, Index acc_stride, int level, ActiveRows& list) {
    for (Index k = 0; k < m; ++k) {
        list.gather(static_cast<int>(k), n, da + k * da_stride);
        list.acc[static_cast<std::size_t>(k)] = acc + k * acc_stride;
    }
    detail::add_gathered(K, stride, n, static_cast<int>(m), level, list);
}

namespace detail {

/// DualGD's gradient norm sqrt(sq) / eta where sq = sum_k d_beta_k . d_alpha_k (d_beta = K d_alpha,
/// rows of d_beta stride d_beta.cols() >= n) under- or overflowed: the sum recomputed with d_alpha
/// and d_beta divided by their largest entries. Out of line: never compiled into a vector step
/// (an AVX-512 target allows FMA, which would contract q's sum under clang).
__attribute__((noinline)) inline Scalar rescaled_grad_norm(const RowMatrix& d_alpha, const RowMatrix& d_beta, Scalar sq,
                                                           Scalar eta) {
    const Index m = d_alpha.rows();
    const Index n = d_alpha.cols();
    const Index stride = d_beta.cols();
    // A step of exactly zero (the run sits on a fixed point, as a run that converged exactly
    // does with tol = 0; every step then comes here with sq = 0): d_beta = K d_alpha is zero
    // too (the products add only rows with a non-zero coefficient), so the norm is 0, what
    // the scan below finds, without its chain of maxima. NaN != 0: a NaN step goes on.
    const Scalar* da = d_alpha.data();
    Index first = 0;
    while (first < m * n && da[first] == 0) ++first;
    if (first == m * n) return 0;
    Scalar ca = 0, cb = 0;
    for (Index k = 0; k < m; ++k)
        for (Index j = 0; j < n; ++j) {
            ca = std::max(ca, std::abs(d_alpha(k, j)));
            cb = std::max(cb, std::abs(d_beta.data()[k * stride + j]));
        }
    // A non-finite step is left to the divergence check; a zero one has norm 0.
    if (!std::isfinite(ca) || !std::isfinite(cb)) return std::sqrt(std::max<Scalar>(sq, 0)) / eta;
    if (ca == 0 || cb == 0) return 0;
    Scalar q = 0;
    for (Index k = 0; k < m; ++k)
        for (Index j = 0; j < n; ++j) q += (d_beta.data()[k * stride + j] / cb) * (d_alpha(k, j) / ca);
    return std::sqrt(std::max<Scalar>(q, 0)) * std::sqrt(ca) * std::sqrt(cb) / eta;
}

}  // namespace detail

/// d_beta_k = K d_alpha_k, the product of DualGD's step, for a fixed K (which
/// must outlive it). n <= 16: on a copy of K whose rows are zero-padded to an
/// even width known at compile time (times_padded), so the sums stay in
/// registers and the loops unroll (runtime-length loops spent most of a step
/// on loop control for n ~ 10; the padding lanes add c * 0 and are never
/// read). n > 16: add_active_rows (one neuron), add_active_rows2 (two) or
/// add_active_rows_all (every neuron, where tiles_pay). All bitwise alike:
/// from db = 0, c_i K_i summed over the rows with c_i = da_i != 0 in
/// increasing i. Products write width() >= n entries of db.
class GramProduct {
public:
    /// Sizes the scratch space for m neurons (allocates; the products do not).
    void setup(const ConstMatrixRef& K, Index m) {
        K_ = K.data();
        stride_ = K.outerStride();
        n_ = K.rows();
        padded_n_ = n_ <= 16 ? (n_ + 1) / 2 * 2 : 0;
        simd_level_ = simd::level();
        if (padded_n_ == 0) active_.resize(m, n_);
        if (padded_n_ > 0) {
            K_pad_ = RowMatrix::Zero(n_, padded_n_);
            K_pad_.leftCols(n_) = K;
        }
        padded_ = padded_product(padded_n_);
    }
    Index padded_n() const { return padded_n_; }                    ///< 0 for n > 16
    const Scalar* padded_data() const { return K_pad_.data(); }     ///< K_pad (n x padded_n()), n <= 16
    int simd_level() const { return simd_level_; }                  ///< simd::level() at setup()
    Index width() const { return padded_n_ > 0 ? padded_n_ : n_; }  ///< entries a product writes

    /// db = K da.
    void times(const Scalar* __restrict da, Scalar* __restrict db) const {
        if (padded_) return (this->*padded_)(da, db);
        for (Index j = 0; j < n_; ++j) db[j] = 0;
        add_active_rows(K_, stride_, n_, da, db, simd_level_, active_);
    }

    /// times() for two neurons in one pass over K (n > 16), bitwise as two calls.
    void times2(const Scalar* da0, const Scalar* da1, Scalar* db0, Scalar* db1) const {
        for (Index j = 0; j < n_; ++j) db0[j] = db1[j] = 0;
        add_active_rows2(K_, stride_, n_, da0, da1, db0, db1, simd_level_, active_);
    }

    /// times() for the m rows of da (stride n) into those of db (stride
    /// db_stride) in one pass over K, tile by tile (n > 16), bitwise as m calls.
    void times_all(Index m, const Scalar* da, Scalar* db, Index db_stride) const {
        for (Index k = 0; k < m; ++k)
            for (Index j = 0; j < n_; ++j) db[k * db_stride + j] = 0;
        add_active_rows_all(K_, stride_, n_, m, da, n_, db, db_stride, simd_level_, active_);
    }

    /// times() for n <= 16 with the padded width NP = padded_n() known at compile time.
    template <int NP>
    RELUCORE_NO_FP_CONTRACT void times_padded(const Scalar* __restrict da, Scalar* __restrict db) const {
        using Width = std::integral_constant<Index, NP>;
        Scalar acc[array_extent<NP>];
        for (int j = 0; j < NP; ++j) acc[j] = 0;
        add_active_rows_plain(K_pad_.data(), Width{}, n_, Width{}, da, acc);
        for (int j = 0; j < NP; ++j) db[j] = acc[j];
    }

private:
    using Padded = void (GramProduct::*)(const Scalar*, Scalar*) const;
    /// times_padded<np>, chosen once (a switch per product cost time at n ~ 10); null for n > 16.
    static Padded padded_product(Index np) {
        switch (np) {
            case 2:
                return &GramProduct::times_padded<2>;
            case 4:
                return &GramProduct::times_padded<4>;
            case 6:
                return &GramProduct::times_padded<6>;
            case 8:
                return &GramProduct::times_padded<8>;
            case 10:
                return &GramProduct::times_padded<10>;
            case 12:
                return &GramProduct::times_padded<12>;
            case 14:
                return &GramProduct::times_padded<14>;
            case 16:
                return &GramProduct::times_padded<16>;
            default:
                return nullptr;
        }
    }

    Padded padded_ = nullptr;
    const Scalar* K_ = nullptr;
    Index stride_ = 0;
    Index n_ = 0;
    RowMatrix K_pad_;            // K with rows padded to padded_n_ (n <= 16 only)
    Index padded_n_ = 0;         // 0: the products read K directly
    int simd_level_ = 0;         // simd::level() at setup: the path of the kernels above
    mutable ActiveRows active_;  // their scratch lists, one per neuron (n > 16)
};

}  // namespace dual_kernels
}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
