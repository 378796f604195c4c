// The mean-field engine's step on a batch of B samples for any input
// dimension (meanfield/weight_gd.hpp; single-sample steps with d <= 3 take the
// fused kernels of meanfield/fused.hpp instead), written as two matrix
// products per block of neurons. With the bias as a coordinate (x~ = (1, x),
// v_i = (b_i, w_i), D = d + 1 entries) and the neurons of a block as columns:
//
//     forward   Z = X~_B V                   (B x D times D x n: z_qi = v_i^T x~_q)
//               r_qi = relu(z_qi),  h(x_q) += sum_i a_i r_qi  (per chunk, meanfield::lane_sum)
//     backward  da_i = sum_q r_qi g_q,   S_qi = 1[r_qi > 0] g_q,
//               G = X~_B^T S             (D x B times B x n: row 0 the bias
//                                         gradients, rows 1..d those of w)
//
// with g_q the residual factors of the step; the update itself (decay, step,
// outer layer) is elementwise. Z and S share the rows of relu(z) that the
// engine keeps (S overwrites r once da is formed).
//
// The full batch in order with D >= kPackedMinDim goes, on a CPU with
// AVX-512F, to relucore's own kernels on X~ packed once (blas::gemm_nt_packed
// and blas::gemm_packed with the neurons as rows, as DenseGD uses them; a BLAS
// re-packs X~ at every call), under the rule of blas::packed_products_available.
// Otherwise the products go to the registered BLAS (linalg/blas.hpp) when one is
// registered and the block's products are large enough for it
// (blas::products_use_blas_by_size with the block's neurons, D and B); below
// that, and without a BLAS, to the loops below, which sum in the order of the
// engine's earlier per-neuron loops (z_qi = b_i + w_i1 x_q1 + ... in
// increasing coordinate, G in increasing sample), so their results are
// bitwise those. Blocks have a fixed width (kBlock neurons), whatever the
// thread count: a result does not depend on it, on one machine with one BLAS.
// A BLAS sums in its own order (with FMA where the CPU has it): results on
// the two paths agree to rounding.
#pragma once

#include "relucore/core/types.hpp"
#include "relucore/linalg/blas.hpp"
#include "relucore/meanfield/fused.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <vector>

namespace relucore {
namespace meanfield {

/// The activation and output of a chunk of n neurons whose pre-activations are z:
/// relu in place, and the chunk's sum of a_i relu(z_i) in meanfield::lane_sum's
/// order (the fused kernels' lanes). The one forward of the engine: the steps'
/// (DenseStep::forward) and WeightGD::predict's.
inline Scalar relu_chunk_sum(const Scalar* __restrict a, Scalar* __restrict z, Index n) {
    Scalar acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    Index i = 0;
    for (; i + 8 <= n; i += 8)
        for (Index l = 0; l < 8; ++l) {
            const Scalar r = z[i + l] > 0 ? z[i + l] : Scalar(0);
            z[i + l] = r;
            acc[l] += a[i + l] * r;
        }
    for (; i < n; ++i) {
        z[i] = z[i] > 0 ? z[i] : Scalar(0);
        acc[i & 7] += a[i] * z[i];
    }
    return lane_total(acc);
}

/// Where the engine keeps the state a DenseStep works on: rows of `stride`
/// doubles, a (N), v (D rows: b, w_1..w_d, contiguous), z (B rows of relu(z)).
struct DenseLayout {
    Scalar* a = nullptr;
    Scalar* v = nullptr;
    Scalar* z = nullptr;
    const Scalar* xb = nullptr;  // the M rows (1, x_j), row-major M x D
    Index stride = 0, N = 0, D = 0, B = 0, M = 0;
};

/// The scalars of an update: theta <- decay theta - s grad (outer and bias only when trained).
struct DenseUpdate {
    Scalar step = 0, decay = 1;
    bool outer = false, bias = false;
};

class DenseStep {
public:
    static constexpr Index kBlock = 8 * kChunk;  // neurons per block (fixed: results do not depend on threads)

    DenseStep() = default;
    /// Allocates every buffer of n_threads threads (the steps allocate nothing).
    /// loops_only: never a BLAS (the engine's fused single-sample kernels sum
    /// in the loops' order, and a forward pass must round the same whichever computed it).
    DenseStep(const DenseLayout& L, int n_threads, bool loops_only) : L_(L), loops_only_(loops_only) {
        blocks_ = (L.N + kBlock - 1) / kBlock;
        const auto T = static_cast<std::size_t>(std::max(1, n_threads));
        scratch_size_ = static_cast<std::size_t>((1 + L.D) * kBlock);
        scratch_.assign(T * scratch_size_, 0.0);
        if (L.B < L.M) gather_.assign(2 * T * static_cast<std::size_t>(L.B * L.D), 0.0);
        // The full batch on relucore's AVX-512 kernels (X~ packed once), where DenseGD uses them.
        packed_ = !loops_only && L.B == L.M && L.D >= kPackedMinDim && L.M * kBlock <= kMaxTransposed &&
                  blas::packed_products_available(std::min(L.N, kBlock), L.M, L.D);
        if (packed_) {
            blas::pack_x(ConstMatrixMap(L.xb, L.M, L.D), packed_x_);
            transposed_size_ = static_cast<std::size_t>((L.D + L.B) * kBlock);
            transposed_.assign(T * transposed_size_, 0.0);
        }
    }

    Index blocks() const { return blocks_; }
    Index block_begin(Index blk) const { return blk * kBlock; }
    Index block_end(Index blk) const { return std::min(L_.N, (blk + 1) * kBlock); }

    /// The rows x~_q of a batch as one B x D row-major block: Xb itself for the
    /// full batch in order, else gathered into buffer `which` (0, 1) of thread tid.
    const Scalar* batch_rows(const Scalar* Xb, const std::int64_t* batch, int tid, int which) {
        bool in_order = L_.B == L_.M;
        for (Index q = 0; in_order && q < L_.B; ++q) in_order = batch[q] == q;
        if (in_order) return Xb;
        if (gather_.empty()) return nullptr;  // a full batch out of order: the loops read rows by index
        Scalar* out = gather_.data() + static_cast<std::ptrdiff_t>(2 * tid + which) * L_.B * L_.D;
        for (Index q = 0; q < L_.B; ++q) std::copy(Xb + batch[q] * L_.D, Xb + (batch[q] + 1) * L_.D, out + q * L_.D);
        return out;
    }

    /// Forward pass of block blk: relu(z) into the z rows and the chunk sums
    /// sum_i a_i relu(z_qi) into part[c * B + q]. rows: batch_rows() (or null).
    void forward(Index blk, const Scalar* Xb, const std::int64_t* batch, const Scalar* rows, Scalar* part, int tid) {
        const Index i0 = block_begin(blk), n = block_end(blk) - i0, B = L_.B, D = L_.D, ld = L_.stride;
        const blas::Library* lib = blas_for(n);
        if (rows == L_.xb && packed_) {
            // Neurons as rows: Z^T (n x B) = V^T (n x D) X~^T, then Z^T back into the z rows.
            Scalar* vt = transposed(tid);
            Scalar* zt = vt + D * kBlock;
            via_transposes(L_.v + i0, D, vt, zt, n, L_.z + i0, B,
                           [&] { blas::gemm_nt_packed(ConstMatrixMap(vt, n, D), packed_x_, MatrixMap(zt, n, B)); });
        } else if (rows && lib) {
            blas::gemm_rows(lib, L_.v + i0, ld, rows, D, L_.z + i0, ld, n, B, D);
        } else {
            for (Index q = 0; q < B; ++q) {
                const Scalar* x = rows ? rows + q * D : Xb + batch[q] * D;
                Scalar* __restrict z = L_.z + q * ld + i0;
                const Scalar* __restrict b = L_.v + i0;
                for (Index i = 0; i < n; ++i) z[i] = b[i];
                for (Index k = 1; k < D; ++k) {
                    const Scalar xk = x[k];
                    const Scalar* __restrict w = L_.v + k * ld + i0;
                    for (Index i = 0; i < n; ++i) z[i] += w[i] * xk;
                }
            }
        }
        const Scalar* __restrict a = L_.a;
        for (Index q = 0; q < B; ++q) {
            Scalar* __restrict z = L_.z + q * ld;
            for (Index c0 = i0; c0 < i0 + n; c0 += kChunk) {
                const Index c1 = std::min(i0 + n, c0 + kChunk);
                part[(c0 / kChunk) * B + q] = relu_chunk_sum(a + c0, z + c0, c1 - c0);
            }
        }
    }

    /// Update of block blk from the residual factors g (B) of the batch whose
    /// forward pass the z rows hold (noise aside: the engine adds it after).
    void update(Index blk, const Scalar* Xb, const std::int64_t* batch, const Scalar* rows, const Scalar* g,
                const DenseUpdate& u, int tid) {
        const Index i0 = block_begin(blk), n = block_end(blk) - i0, B = L_.B, D = L_.D, ld = L_.stride;
        Scalar* __restrict da = thread_scratch(tid);
        Scalar* __restrict G = da + kBlock;  // D rows of kBlock
        std::fill(da, da + n, 0.0);
        for (Index q = 0; q < B; ++q) {
            const Scalar gq = g[q];
            Scalar* __restrict z = L_.z + q * ld + i0;
            for (Index i = 0; i < n; ++i) {
                const Scalar r = z[i];
                da[i] += std::max(r, Scalar(0)) * gq;
                z[i] = (r > 0 ? Scalar(1) : Scalar(0)) * gq;
            }
        }
        const blas::Library* lib = blas_for(n);
        if (rows == L_.xb && packed_) {
            // G^T (n x D) = S^T (n x B) X~, then G^T into the rows of G (stride kBlock).
            Scalar* gt = transposed(tid);
            Scalar* st = gt + D * kBlock;
            via_transposes(
                L_.z + i0, B, st, gt, n, G, D,
                [&] { blas::gemm_packed(ConstMatrixMap(st, n, B), packed_x_, MatrixMap(gt, n, D)); }, kBlock);
        } else if (rows && lib) {
            blas::gemm_rows_tn(lib, rows, D, L_.z + i0, ld, G, kBlock, n, B, D);
        } else {
            std::fill(G, G + D * kBlock, 0.0);
            for (Index q = 0; q < B; ++q) {
                const Scalar* x = rows ? rows + q * D : Xb + batch[q] * D;
                const Scalar* __restrict s = L_.z + q * ld + i0;
                for (Index k = 0; k < D; ++k) {
                    const Scalar xk = x[k];
                    Scalar* __restrict gk = G + k * kBlock;
                    for (Index i = 0; i < n; ++i) gk[i] += s[i] * xk;
                }
            }
        }
        // grad_w = a G_w and grad_b = a G_b use the old a: w and b first.
        const Scalar st = u.step, decay = u.decay;
        Scalar* __restrict a = L_.a + i0;
        for (Index k = u.bias ? 0 : 1; k < D; ++k) {
            Scalar* __restrict w = L_.v + k * ld + i0;
            const Scalar* __restrict gk = G + k * kBlock;
            for (Index i = 0; i < n; ++i) w[i] = decay * w[i] - st * a[i] * gk[i];
        }
        if (u.outer)
            for (Index i = 0; i < n; ++i) a[i] = decay * a[i] - st * da[i];
    }

private:
    // A product on the packed kernels with the block's neurons as rows: the r_in
    // rows of `in` (stride L_.stride, n neurons each) transposed into tin (n x r_in),
    // product() writing tout (n x r_out), then tout transposed into the r_out rows
    // of `out` (stride ld_out, default L_.stride). Copies only: no rounding.
    template <class Product>
    void via_transposes(const Scalar* in, Index r_in, Scalar* tin, const Scalar* tout, Index n, Scalar* out,
                        Index r_out, Product&& product, Index ld_out = 0) const {
        const Index ld = L_.stride;
        if (ld_out == 0) ld_out = ld;
        for (Index k = 0; k < r_in; ++k)
            for (Index i = 0; i < n; ++i) tin[i * r_in + k] = in[k * ld + i];
        product();
        for (Index k = 0; k < r_out; ++k)
            for (Index i = 0; i < n; ++i) out[k * ld_out + i] = tout[i * r_out + k];
    }

    // The BLAS for a block of n neurons, or null for the loops.
    const blas::Library* blas_for(Index n) const {
        const blas::Library* lib = blas::registered_blas();
        const bool fits = L_.stride <= Index(INT_MAX) && L_.B <= Index(INT_MAX) && L_.D <= Index(INT_MAX);
        return !loops_only_ && lib && lib->dgemm && fits && blas::products_use_blas_by_size(n, L_.D, L_.B) ? lib
                                                                                                           : nullptr;
    }
    Scalar* thread_scratch(int tid) { return scratch_.data() + static_cast<std::size_t>(tid) * scratch_size_; }
    Scalar* transposed(int tid) { return transposed_.data() + static_cast<std::size_t>(tid) * transposed_size_; }
    // The packed kernels from D = kPackedMinDim on (below, their inner loops are too
    // short: 1-D inputs ran 1.7x slower on them than on the BLAS), with at most
    // kMaxTransposed entries of Z^T per thread (M kBlock).
    static constexpr Index kPackedMinDim = 32;
    static constexpr Index kMaxTransposed = Index(1) << 21;

    DenseLayout L_;
    bool loops_only_ = false;
    Index blocks_ = 0;
    std::size_t scratch_size_ = 0;
    std::vector<Scalar> scratch_, gather_;
    bool packed_ = false;  // the full batch on blas::gemm_nt_packed / gemm_packed
    blas::PackedX packed_x_;
    std::size_t transposed_size_ = 0;
    std::vector<Scalar> transposed_;  // per thread: V^T or G^T (kBlock x D), then Z^T or S^T (kBlock x B)
};

}  // namespace meanfield
}  // namespace relucore
