// The mean-field engine's step on a batch of B samples for any input
// dimension (meanfield/weight_gd.hpp; single-sample steps with d <= 3 take the
// fused kernels of meanfield/fused.hpp instead), per block of neurons on the
// weight-space step kernel of gd/weight_step.hpp, the one shared with
// train(engine="weights"). With the bias as a coordinate (x~ = (1, x),
// v_i = (b_i, w_i), D = d + 1 entries; without bias x~ = x, v_i = w_i, D = d)
// and the neurons of a block as rows:
//
//     forward   beta = V X~_B^T              (WeightStep::project: beta_iq = v_i^T x~_q)
//               h(x_q) += sum_i a_i relu(beta_iq)   (per chunk, meanfield::lane_total's lanes)
//     backward  coeff_iq = -s a_i relu'(beta_iq) g_q,   d_V = coeff X~_B
//                                        (WeightStep::backward: dual_step_coefficients of gd/model.hpp)
//               da_i = sum_q relu(beta_iq) g_q        (outer_gradient_sums of gd/model.hpp)
//
// with g_q the residual factors of the step; the update v <- decay v + d_V,
// a <- decay a - s da is elementwise. The engine keeps its parameters by
// coordinate (rows a, b, w_1..w_d: the fused kernels' layout); a block's V is
// transposed into neurons as rows for the products and d_V back (copies, no
// rounding). The products follow WeightStep's rule: relucore's packed kernels
// on X~ packed once for the full batch in order where
// blas::packed_products_available allows, else blas::gemm_nt / blas::gemm (a
// registered BLAS where the products are large enough, else Eigen's
// per-neuron products). Blocks have a fixed width (kBlock neurons), whatever
// the thread count: a result does not depend on it, on one machine with one BLAS.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/types.hpp"
#include "relucore/gd/model.hpp"
#include "relucore/gd/weight_step.hpp"
#include "relucore/meanfield/fused.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {
namespace meanfield {

/// The activation and output of a chunk of n neurons whose pre-activations are z:
/// relu in place, and the chunk's sum of a_i relu(z_i) in meanfield::lane_sum's
/// order (the fused kernels' lanes): the forward of the fused path and of
/// WeightGD::predict.
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
/// doubles, a (N) and the D coordinate rows of v (b, w_1..w_d with bias, else
/// w_1..w_d; contiguous from v), and X~ (M x D, the rows x~_j).
struct DenseLayout {
    Scalar* a = nullptr;
    Scalar* v = nullptr;
    const Scalar* x = nullptr;  // X~: M rows of D contiguous entries
    Index x_stride = 0;         // between the rows of X~
    Index stride = 0, N = 0, D = 0, B = 0, M = 0;
};

/// The scalars of an update: theta <- decay theta - s grad (outer only when trained).
struct DenseUpdate {
    Scalar step = 0, decay = 1;
    bool outer = false;
};

class DenseStep {
public:
    static constexpr Index kBlock = 8 * kChunk;  // neurons per block (fixed: results do not depend on threads)

    DenseStep() = default;
    /// Allocates every buffer of n_threads threads (the steps allocate nothing;
    /// a full batch out of order gathers its rows into buffers made by
    /// allow_out_of_order()).
    DenseStep(const DenseLayout& L, int n_threads) : L_(L) {
        T_ = std::max(1, n_threads);
        blocks_ = (L.N + kBlock - 1) / kBlock;
        rows_ = std::min(L.N, kBlock);
        beta_.assign(static_cast<std::size_t>(L.N * L.B), 0.0);
        const auto T = static_cast<std::size_t>(T_);
        scratch_size_ = static_cast<std::size_t>(rows_ * (L.D + L.B + 1) + 8 * L.B);
        scratch_.assign(T * scratch_size_, 0.0);
        full_.emplace_back(x_view(), rows_);
        if (L.B < L.M) make_gather();
    }

    DenseStep(DenseStep&&) = default;
    DenseStep& operator=(DenseStep&&) = default;

    Index blocks() const { return blocks_; }
    Index block_begin(Index blk) const { return blk * kBlock; }
    Index block_end(Index blk) const { return std::min(L_.N, (blk + 1) * kBlock); }

    /// Makes the gather buffers of a full batch taken out of order (given
    /// samples); once per engine, outside the steps.
    void allow_out_of_order() {
        if (gathered_.empty()) make_gather();
    }

    /// The kernel of a batch: the full batch in order on X~ itself, else its
    /// rows gathered into buffer `which` (0, 1) of thread tid.
    const WeightStep& batch_kernel(const std::int64_t* batch, int tid, int which) {
        bool in_order = L_.B == L_.M;
        for (Index q = 0; in_order && q < L_.B; ++q) in_order = batch[q] == q;
        if (in_order) return full_.front();
        const std::size_t slot = 2 * static_cast<std::size_t>(tid) + static_cast<std::size_t>(which);
        Scalar* out = gather_.data() + static_cast<std::ptrdiff_t>(slot) * L_.B * L_.D;
        for (Index q = 0; q < L_.B; ++q) {
            const Scalar* x = L_.x + batch[q] * L_.x_stride;
            std::copy(x, x + L_.D, out + q * L_.D);
        }
        return gathered_[slot];
    }

    /// Forward pass of block blk on the batch of `kernel`: beta of its neurons
    /// and the chunk sums sum_i a_i relu(beta_iq) into part[c * B + q].
    void forward(Index blk, const WeightStep& kernel, Scalar* part, int tid) {
        const Index i0 = block_begin(blk), n = block_end(blk) - i0, B = L_.B, D = L_.D, ld = L_.stride;
        Scalar* __restrict vt = thread_scratch(tid);  // n x D: the block's V, neurons as rows
        Scalar* beta = beta_.data() + i0 * B;
        if (kernel.single()) {  // one example: V read by coordinate in place
            kernel.project_one(ByCoordinate(L_.v + i0, n, D, Eigen::OuterStride<>(ld)), VectorMap(beta, n));
        } else {
            for (Index k = 0; k < D; ++k) {
                const Scalar* __restrict v = L_.v + k * ld + i0;
                for (Index i = 0; i < n; ++i) vt[i * D + k] = v[i];
            }
            kernel.project(ConstMatrixMap(vt, n, D), MatrixMap(beta, n, B));
        }
        Scalar* __restrict acc = vt + rows_ * (D + B + 1);  // 8 lanes of B sums
        for (Index c0 = i0; c0 < i0 + n; c0 += kChunk) {
            const Index c1 = std::min(i0 + n, c0 + kChunk);
            if (B == 1) {  // beta is one row: relu in place (the masks read relu(beta) > 0, the same)
                part[c0 / kChunk] = relu_chunk_sum(L_.a + c0, beta_.data() + c0, c1 - c0);
                continue;
            }
            std::fill(acc, acc + 8 * B, 0.0);
            // Lane l sums the neurons i = l mod 8 of the chunk in increasing i (relu_chunk_sum's order).
            for (Index i = c0; i < c1; ++i) {
                const Scalar ai = L_.a[i];
                const Scalar* __restrict b = beta_.data() + i * B;
                Scalar* __restrict lane = acc + ((i - c0) & 7) * B;
                for (Index q = 0; q < B; ++q) lane[q] += ai * (b[q] > 0 ? b[q] : Scalar(0));
            }
            Scalar* __restrict out = part + (c0 / kChunk) * B;
            for (Index q = 0; q < B; ++q) {
                const Scalar l[8] = {acc[q],         acc[B + q],     acc[2 * B + q], acc[3 * B + q],
                                     acc[4 * B + q], acc[5 * B + q], acc[6 * B + q], acc[7 * B + q]};
                out[q] = lane_total(l);
            }
        }
    }

    /// Update of block blk from the residual factors g (B) of the batch of
    /// `kernel`, whose forward pass beta holds (noise aside: the engine adds it after).
    void update(Index blk, const WeightStep& kernel, const Scalar* g, const DenseUpdate& u, int tid) {
        const Index i0 = block_begin(blk), n = block_end(blk) - i0, B = L_.B, D = L_.D, ld = L_.stride;
        const ModelSpec spec;               // relu, the residual factors g given
        Scalar* d_v = thread_scratch(tid);  // n x D
        Scalar* coeff = d_v + rows_ * D;    // n x B
        Scalar* da = coeff + rows_ * B;     // n
        const ConstMatrixMap beta(beta_.data() + i0 * B, n, B);
        const Eigen::Map<const Vector> a(L_.a + i0, n), gv(g, B);
        // The outer layer's gradient uses beta and the old a: before anything moves.
        if (u.outer) outer_gradient_sums(beta.data(), B, 0, n, g, spec, da);
        // d_V neurons as rows (di = D, dk = 1), or for one example by coordinate (di = 1, dk = n).
        Index di = D, dk = 1;
        if (kernel.single()) {
            MatrixMap c(coeff, n, 1);
            dual_step_coefficients(beta, a, gv, u.step, spec, c);
            kernel.step_one(c.col(0), Eigen::Map<Eigen::MatrixXd>(d_v, n, D));
            di = 1, dk = n;
        } else {
            kernel.backward(beta, a, gv, u.step, spec, MatrixMap(coeff, n, B), MatrixMap(d_v, n, D));
        }
        const Scalar decay = u.decay;
        for (Index k = 0; k < D; ++k) {
            Scalar* __restrict v = L_.v + k * ld + i0;
            const Scalar* __restrict dv = d_v + k * dk;
            for (Index i = 0; i < n; ++i) v[i] = decay * v[i] + dv[i * di];
        }
        if (u.outer) {
            Scalar* __restrict ab = L_.a + i0;
            const Scalar st = u.step;
            for (Index i = 0; i < n; ++i) ab[i] = decay * ab[i] - st * da[i];
        }
    }

private:
    // The coordinate rows of a block's V as an n x D matrix (column k: coordinate k of its neurons).
    using ByCoordinate = Eigen::Map<const Eigen::MatrixXd, 0, Eigen::OuterStride<>>;

    ConstMatrixRef x_view() const {
        return Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>>(L_.x, L_.M, L_.D,
                                                                    Eigen::OuterStride<>(L_.x_stride));
    }

    // Two gather buffers per thread (B x D each) and the kernels on them (never packed: they change every step).
    void make_gather() {
        const auto T = static_cast<std::size_t>(T_);
        gather_.assign(2 * T * static_cast<std::size_t>(L_.B * L_.D), 0.0);
        gathered_.clear();
        gathered_.reserve(2 * T);
        for (std::size_t s = 0; s < 2 * T; ++s)
            gathered_.emplace_back(
                ConstMatrixMap(gather_.data() + static_cast<std::ptrdiff_t>(s) * L_.B * L_.D, L_.B, L_.D), rows_,
                /*pack=*/false);
    }

    Scalar* thread_scratch(int tid) { return scratch_.data() + static_cast<std::size_t>(tid) * scratch_size_; }

    DenseLayout L_;
    int T_ = 1;
    Index blocks_ = 0, rows_ = 0;
    std::vector<Scalar> beta_;  // N x B: the current batch's pre-activations, neurons as rows
    std::size_t scratch_size_ = 0;
    std::vector<Scalar> scratch_;  // per thread: V^T or d_V (rows_ x D), coeff (rows_ x B), da (rows_), lanes (8 x B)
    std::vector<Scalar> gather_;
    std::vector<WeightStep> full_;      // the kernel on X~ (one entry)
    std::vector<WeightStep> gathered_;  // the kernels on the gather buffers
};

}  // namespace meanfield
}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
