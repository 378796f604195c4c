// Weight-space (noisy, stochastic) gradient descent for a wide two-layer ReLU
// network with bias and a trainable outer layer (Liang et al. 2026):
//
//     h(x) = kappa * sum_{i=1..N} a_i relu(w_i^T x + b_i),     theta_i = (a_i, w_i, b_i),
//
// with the output scale kappa = c/N, c in {1, sqrt(N), N} (OutputScale), and
// the objective
//
//     L(Theta) = (1/M) sum_j (h(x_j) - y_j)^2 + (lambda/N) sum_i ||theta_i||^2
//
// (the regulariser runs over the trained coordinates only). One step at the
// global iteration t draws a batch B_t of |B| = batch_size sample indices
// (uniform, without replacement; the full batch uses every index, in order)
// and moves every neuron by
//
//     theta_i <- theta_i - s grad_{theta_i} L_B(Theta) + sqrt(4 (s/N) T) xi_i,
//     L_B = (1/|B|) sum_{j in B} (h(x_j) - y_j)^2 + (lambda/N) sum_i ||theta_i||^2,
//
// i.e. plain SGD with step s on the sampled objective plus Gaussian noise of
// temperature T = 1/beta (xi_i ~ N(0, I) on the trained coordinates): the
// Euler-Maruyama step of the paper's Langevin dynamics (docs/math.md §11 derives
// it; s = 1 at N = 1000 is the paper's s_N = 1e-3). grad sigma uses the strict
// ReLU derivative 1[w^T x + b > 0].
//
// Randomness (the batch of step t, the noise of neuron i at step t, the
// initial parameters) comes from counter-based generators (meanfield/noise.hpp) keyed
// by (seed, step, neuron), so results are bitwise independent of the thread
// count and of how a run is split into calls. The forward pass h(x_j) is a sum
// over neurons taken in a fixed order: within a chunk of kChunk neurons (a
// constant) eight interleaved lanes (meanfield::lane_sum), then the chunks in
// order.
//
// Threads: one OpenMP team for the whole run (thread count per call, no
// global OpenMP state), each thread owning a fixed range of blocks; one
// barrier per step separates the chunk sums from the residuals, which every
// thread then computes identically. Cancellation and records happen at
// sync points (every kCheckEvery steps and at record/snapshot steps).
//
// Parameters are stored structure-of-arrays (rows a, b, w_1..w_d and the
// fused path's relu(z) row, 64-byte aligned, in one arena); all buffers are
// allocated in the constructor, the step loop allocates nothing. For
// single-sample SGD with d <= 3 the update of step t and the forward pass of
// step t + 1 are fused into one sweep over the neurons (meanfield/fused.hpp),
// with scalar, SSE2, AVX and (noiseless) AVX-512F paths chosen at run time,
// capped by RELUCORE_SIMD (simd.hpp); no fused path uses FMA, so all give
// bitwise the same numbers. Every other step (mini-batches, the full batch,
// any d) takes blocks of neurons on the weight-space step kernel that
// train(engine="weights") uses (gd/weight_step.hpp, through
// meanfield/dense_step.hpp): the packed kernels, a registered BLAS
// or Eigen's products, which round differently (results agree to rounding).
// Threads own whole blocks of DenseStep::kBlock neurons.
#pragma once

#include "relucore/core/parallel.hpp"
#include "relucore/core/types.hpp"
#include "relucore/defaults.hpp"
#include "relucore/gd/run.hpp"
#include "relucore/meanfield/dense_step.hpp"
#include "relucore/meanfield/fused.hpp"
#include "relucore/meanfield/noise.hpp"
#include "relucore/meanfield/settings.hpp"
#include "relucore/random/rng.hpp"
#include "relucore/simd.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#if defined(RELUCORE_WITH_OPENMP)
#include <omp.h>
#endif

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

class WeightGD {
public:
    static constexpr Index kChunk = meanfield::kChunk;  // neurons per work unit (fixed: sets the sum order)
    static constexpr std::int64_t kCheckEvery = 1024;   // steps between cancellation checks

    // X: M x d inputs and y: M labels (both copied), the initial neurons by name.
    WeightGD(const ConstMatrixRef& X, const ConstVectorRef& y, const WeightGDStart& start,
             const WeightGDSettings& settings)
        : WeightGD(X, y, start.theta(settings.bias, X.cols()), settings, detail::PackedTheta{}) {}

private:
    WeightGD(const ConstMatrixRef& X, const ConstVectorRef& y, const ConstMatrixRef& theta0, const WeightGDSettings& s,
             detail::PackedTheta)
        : y_(y), settings_(s) {
        settings_.validate();
        Xb_.resize(X.rows(), X.cols() + 1);
        Xb_.col(0).setOnes();
        Xb_.rightCols(X.cols()) = X;
        M_ = X.rows();
        d_ = X.cols();
        N_ = theta0.rows();
        P_ = d_ + (settings_.bias ? 2 : 1);
        if (M_ < 1 || d_ < 1) throw std::invalid_argument("X must have at least one row and one column");
        if (y.size() != M_) throw std::invalid_argument("y must have one entry per row of X");
        if (N_ < 1) throw std::invalid_argument("at least one neuron is needed");
        if (theta0.cols() != P_) throw std::invalid_argument("theta0 must have d + 2 columns (d + 1 without bias)");
        if (settings_.batch_size > M_) throw std::invalid_argument("batch_size must not exceed the number of samples");
        B_ = settings_.batch_size;
        kappa_ = settings_.output_scale_factor(N_);
        // One arena for the rows a, b, w_1..w_d, z (see row()).
        stride_ = (N_ + 7) / 8 * 8;
        while ((stride_ * 8) % 4096 < 512 || (stride_ * 8) % 4096 > 3584) stride_ += 8;
        soa_.assign(static_cast<size_t>((3 + d_) * stride_ + 8), 0.0);
        soa_off_ = static_cast<Index>((64 - reinterpret_cast<std::uintptr_t>(soa_.data()) % 64) % 64 / sizeof(Scalar));
        set_theta(theta0);
        n_chunks_ = (N_ + kChunk - 1) / kChunk;
        partial_.assign(static_cast<size_t>(2 * n_chunks_ * B_), 0.0);
        const Index n_blocks = (N_ + meanfield::DenseStep::kBlock - 1) / meanfield::DenseStep::kBlock;
        max_threads_ = settings_.n_threads > 0 ? settings_.n_threads : default_threads();
        max_threads_ = static_cast<int>(std::max<Index>(1, std::min<Index>(max_threads_, n_blocks)));
        if (!fused()) {
            // The bias a coordinate where it is trained: v = (b, w), x~ = (1, x); else v = w, x~ = x.
            const bool b = settings_.bias;
            meanfield::DenseLayout layout;
            layout.a = arow(), layout.v = b ? brow() : wrow(0), layout.x = Xb_.data() + (b ? 0 : 1);
            layout.x_stride = d_ + 1, layout.stride = stride_, layout.N = N_, layout.D = d_ + (b ? 1 : 0);
            layout.B = B_, layout.M = M_;
            dense_ = meanfield::DenseStep(layout, max_threads_);
        }
        const auto T = static_cast<size_t>(max_threads_);
        perm_.resize(T * static_cast<size_t>(M_));
        swaps_.resize(T * static_cast<size_t>(B_));
        batch_.resize(2 * T * static_cast<size_t>(B_));
        g_.resize(T * static_cast<size_t>(B_));
        h_.resize(T * static_cast<size_t>(2 * B_));
        scratch_.resize(T * scratch_size());
        words_.resize(T * words_size());
        decay_ = 1 - 2 * settings_.step * settings_.weight_decay / static_cast<Scalar>(N_);
        noise_sd_ = std::sqrt(4 * (settings_.step / static_cast<Scalar>(N_)) * settings_.temperature);
        simd_ = simd_level();
        philox_keys_ = PhiloxKeys(settings_.key);
    }

public:
    // The widest SIMD path of the fused kernels: the best the CPU supports,
    // capped by the environment variable RELUCORE_SIMD (scalar, sse2, avx,
    // avx512; read when an engine is built). All paths give bitwise the same
    // numbers; the variable exists to test that and to time the paths.
    static constexpr int kSimdScalar = simd::kScalar, kSimdSse2 = simd::kSse2, kSimdAvx = simd::kAvx,
                         kSimdAvx512 = simd::kAvx512;
    static int simd_level() { return simd::level(); }
    int simd() const { return simd_; }

    WeightGD(const WeightGD&) = delete;  // the arena's alignment offset is tied to its buffer
    WeightGD& operator=(const WeightGD&) = delete;
    WeightGD(WeightGD&&) = default;
    WeightGD& operator=(WeightGD&&) = default;

    Index N() const { return N_; }
    Index P() const { return P_; }
    std::int64_t steps_taken() const { return t_; }

    void set_theta(const ConstMatrixRef& theta) {
        if (theta.rows() != N_ || theta.cols() != P_) throw std::invalid_argument("theta has the wrong shape");
        for (Index i = 0; i < N_; ++i) {
            arow()[i] = theta(i, 0);
            for (Index k = 0; k < d_; ++k) wrow(k)[i] = theta(i, 1 + k);
            brow()[i] = settings_.bias ? theta(i, d_ + 1) : 0.0;
        }
    }

    void theta_row(Index i, Scalar* out) const {
        out[0] = arow()[i];
        for (Index k = 0; k < d_; ++k) out[1 + k] = wrow(k)[i];
        if (settings_.bias) out[d_ + 1] = brow()[i];
    }

    void theta(MatrixRef out) const {
        if (out.rows() != N_ || out.cols() != P_) throw std::invalid_argument("theta output has the wrong shape");
        for (Index i = 0; i < N_; ++i) theta_row(i, &out(i, 0));
    }

    // The output bias and the sample weights (WeightGDLoss of settings.hpp), set before a run.
    void set_output_bias(Scalar c0) { loss_.set_output_bias(c0); }
    void set_sample_weights(const ConstVectorRef& v) { loss_.set_sample_weights(v, M_); }
    const WeightGDLoss& loss_options() const { return loss_; }
    Scalar output_bias() const { return loss_.output_bias; }
    // h(x) for a point x (d entries): chunk_forward() per chunk, the chunks in order (the fused
    // steps' forward; the batch steps' products round differently, to the last bits).
    Scalar predict(const Scalar* x) const {
        Scalar total = 0;
        for (Index c = 0; c < n_chunks_; ++c) total += chunk_forward(c, x, pred_z_.data());
        return loss_.has_output_bias ? kappa_ * total + loss_.output_bias : kappa_ * total;
    }

    // L(Theta) on the full data set (its data term reduced as settings().reduction).
    Scalar objective() const {
        Scalar fit = 0;
        for (Index j = 0; j < M_; ++j) {
            const Scalar r = predict(xrow(j)) - y_[j];
            fit += loss_.sample_weights.size() > 0 ? loss_.sample_weights[j] * r * r : r * r;
        }
        Scalar reg = 0;
        for (Index i = 0; i < N_; ++i) {
            Scalar q = 0;
            if (settings_.train_outer) q += arow()[i] * arow()[i];
            for (Index k = 0; k < d_; ++k) q += wrow(k)[i] * wrow(k)[i];
            if (settings_.bias) q += brow()[i] * brow()[i];
            reg += q;
        }
        return settings_.reduced(fit, M_) + settings_.weight_decay / static_cast<Scalar>(N_) * reg;
    }

    // Runs steps t = start, ..., start + iters - 1 (start is the global step
    // number of the current state; the generator is keyed by it). Records at
    // every t in [start, start + iters) that is a multiple of record_every or a
    // snapshot step, and at the final state when record_final. samples, when
    // given, is an iters x batch_size array of sample indices to use instead
    // of drawing them.
    WeightGDSummary run(std::int64_t start, std::int64_t iters, bool record_final, WeightGDRecord* rec = nullptr,
                        const std::int64_t* samples = nullptr) {
        if (start < 0 || iters < 0) throw std::invalid_argument("start and iters must be >= 0");
        if (samples)
            for (std::int64_t q = 0; q < iters * B_; ++q) {
                if (samples[q] < 0 || samples[q] >= M_) throw std::invalid_argument("sample index out of range");
                if (samples[q] != q % B_ && !fused()) dense_.allow_out_of_order();  // a full batch out of order
            }
        t_ = start;
        const std::int64_t end = start + iters;
        last_history_ = -1;
        bool stop = false;
        bool cancelled = false;
        bool diverged = false;
#if defined(RELUCORE_WITH_OPENMP)
        const int T = max_threads_;
#pragma omp parallel num_threads(T) if (T > 1)
#endif
        {
#if defined(RELUCORE_WITH_OPENMP)
            const int tid = omp_get_thread_num();
            const int nth = omp_get_num_threads();
#else
            const int tid = 0;
            const int nth = 1;
#endif
            // Whole blocks of neurons per thread (the chunks of the fused path: the same neurons).
            const Index nb = (N_ + meanfield::DenseStep::kBlock - 1) / meanfield::DenseStep::kBlock;
            const Index b0 = nb * tid / nth, b1 = nb * (tid + 1) / nth;
            const Index per = meanfield::DenseStep::kBlock / kChunk;
            const Index c0 = std::min(n_chunks_, b0 * per), c1 = std::min(n_chunks_, b1 * per);
            ThreadBuffers tb = buffers(tid);
            auto fixed_row = [&](std::int64_t u) { return samples ? samples + (u - start) * B_ : nullptr; };
            // Prologue: the batch and forward pass of step `start`.
            draw_batch(start, tb, tb.batch, start < end ? fixed_row(start) : nullptr);
            int cur = 0;  // the gather buffer of the current batch's rows
            if (fused()) {
                // The fused kernels' forward: relu(z) of the current step in the z row.
                for (Index c = c0; c < c1; ++c)
                    partials(start)[c] = chunk_forward(c, xrow(tb.batch[0]), zrow() + c * kChunk);
            } else {
                tb.kernel = &dense_.batch_kernel(tb.batch, tid, cur);
                for (Index blk = b0; blk < b1; ++blk) dense_.forward(blk, *tb.kernel, partials(start), tid);
            }
            std::int64_t next_sync = start;
            for (std::int64_t t = start;; ++t) {
                if (t == next_sync) {
                    const bool at_record = rec && t < end && wants_record(*rec, t);
#if defined(RELUCORE_WITH_OPENMP)
                    if (nth > 1) {  // the same branch on every thread of the team
#pragma omp barrier
                    }
#endif
                    if (tid == 0) {
                        loss_.output_bias = tb.c0;  // every thread's copy is the same
                        if (at_record) record(*rec, t);
                        if (settings_.cancel && settings_.cancel->load(std::memory_order_relaxed)) cancelled = true;
                        stop = cancelled || t == end;
                        t_ = t;
                    }
#if defined(RELUCORE_WITH_OPENMP)
                    if (nth > 1) {  // the same branch on every thread of the team
#pragma omp barrier
                    }
#endif
                    if (stop) break;
                    next_sync = next_event(t + 1, start, end, rec);
                }
                // The next batch (the last step looks ahead at its own: harmless, recomputed by the next run).
                if (t + 1 < end)
                    draw_batch(t + 1, tb, tb.batch_next, fixed_row(t + 1));
                else
                    std::copy(tb.batch, tb.batch + B_, tb.batch_next);
                if (!fused()) tb.kernel_next = &dense_.batch_kernel(tb.batch_next, tid, 1 - cur);
#if defined(RELUCORE_WITH_OPENMP)
                if (nth > 1) {  // the same branch on every thread of the team
#pragma omp barrier
                }
#endif
                if (!step(t, tb, tid, b0, b1, c0, c1)) {
                    // Every thread sees the same residuals, hence stops at the same t.
                    if (tid == 0) {
                        diverged = true;
                        t_ = t;
                        loss_.output_bias = tb.c0;
                    }
                    break;
                }
                std::swap(tb.batch, tb.batch_next);
                std::swap(tb.kernel, tb.kernel_next);
                cur = 1 - cur;
            }
        }
        WeightGDSummary out;
        out.nit = t_;
        out.status = diverged ? Status::diverged : cancelled ? Status::cancelled : Status::completed;
        if (rec && record_final && last_history_ != t_) record(*rec, t_, /*final_state=*/true);
        out.objective = objective();
        return out;
    }

private:
    struct ThreadBuffers {
        std::int64_t* perm;
        std::int64_t* swaps;
        std::int64_t* batch;       // sample indices of the current step
        std::int64_t* batch_next;  // ... and of the next one
        Scalar* g;
        Scalar* h;  // the batch's predictions, then its labels (B each)
        Scalar* scratch;
        std::uint64_t* words;
        const WeightStep* kernel = nullptr;       // the batch's products (DenseStep::batch_kernel)
        const WeightStep* kernel_next = nullptr;  // ... and the next batch's
        Scalar c0 = 0;                            // this thread's copy of the output bias
    };

    // Per-thread scratch, rows of kChunk: the noise (noise_rows(): P rounded
    // up to even). Words for the noise live in words_ (noise_rows() rows).
    Index noise_rows() const { return 2 * ((P_ + 1) / 2); }
    Scalar* noise_buf(const ThreadBuffers& tb) const { return tb.scratch; }
    size_t scratch_size() const { return static_cast<size_t>(noise_rows() * kChunk); }
    size_t words_size() const { return static_cast<size_t>(noise_rows() * kChunk); }

    ThreadBuffers buffers(int tid) {
        const auto t = static_cast<size_t>(tid);
        const auto M = static_cast<size_t>(M_), B = static_cast<size_t>(B_);
        ThreadBuffers tb{perm_.data() + t * M,
                         swaps_.data() + t * B,
                         batch_.data() + 2 * t * B,
                         batch_.data() + (2 * t + 1) * B,
                         g_.data() + t * B,
                         h_.data() + 2 * t * B,
                         scratch_.data() + t * scratch_size(),
                         words_.data() + t * words_size()};
        for (Index j = 0; j < M_; ++j) tb.perm[j] = j;
        tb.c0 = loss_.output_bias;
        return tb;
    }

    std::int64_t next_event(std::int64_t u, std::int64_t start, std::int64_t end, const WeightGDRecord* rec) const {
        return next_sync_step(settings_, rec, u, start, end, kCheckEvery);
    }

    bool wants_record(const WeightGDRecord& rec, std::int64_t t) const { return records_at(settings_, rec, t); }

    void record(WeightGDRecord& rec, std::int64_t t, bool final_state = false) {
        const bool hist = (final_state || (settings_.record_every > 0 && t % settings_.record_every == 0));
        if (hist) last_history_ = t;
        if (hist && rec.count < rec.capacity) {
            if (rec.steps) rec.steps[rec.count] = t;
            if (rec.objective) rec.objective[rec.count] = objective();
            if (rec.trajectories)
                for (Index q = 0; q < rec.n_track; ++q)
                    theta_row(static_cast<Index>(rec.track[q]), rec.trajectories + (rec.count * rec.n_track + q) * P_);
            ++rec.count;
        }
        for (Index s = 0; s < rec.n_snapshots; ++s)
            if (rec.snapshot_steps[s] == t && rec.snapshots) {
                for (Index i = 0; i < N_; ++i) theta_row(i, rec.snapshots + (s * N_ + i) * P_);
                if (rec.snapshot_taken) rec.snapshot_taken[s] = 1;
            }
    }

    // The batch of step t into out (identical on every thread): meanfield::draw_batch of noise.hpp.
    void draw_batch(std::int64_t t, ThreadBuffers& tb, std::int64_t* out, const std::int64_t* fixed) const {
        meanfield::draw_batch(settings_.key, t, M_, B_, fixed, tb.perm, tb.swaps, out);
    }

    // Whether the steps take the fused single-sample kernels (meanfield/fused.hpp), else DenseStep.
    bool fused() const { return B_ == 1 && d_ <= 3; }

    // The forward of chunk c at x (d entries) into z (its n neurons): z_i = b_i + w_i1 x_1 + ... in
    // increasing coordinate, then meanfield::relu_chunk_sum (relu(z) left in z): the fused kernels'
    // order, for their first step and for predict().
    Scalar chunk_forward(Index c, const Scalar* x, Scalar* __restrict z) const {
        const Index i0 = c * kChunk, n = std::min(N_, i0 + kChunk) - i0;
        for (Index i = 0; i < n; ++i) z[i] = brow()[i0 + i];
        for (Index k = 0; k < d_; ++k) {
            const Scalar xk = x[k];
            const Scalar* __restrict w = wrow(k) + i0;
            for (Index i = 0; i < n; ++i) z[i] += w[i] * xk;
        }
        return meanfield::relu_chunk_sum(arow() + i0, z, n);
    }

    Scalar* partials(std::int64_t t) { return partial_.data() + static_cast<size_t>((t & 1) * n_chunks_ * B_); }

    // Residual factors g_q = f kappa (h(x_q) - y_q) of step t, f = reduction_factor() over the batch
    // (2 / B for the mean), and the output bias's step; false when some h is not finite or too large.
    bool residuals(std::int64_t t, ThreadBuffers& tb) {
        const Scalar* part = partials(t);
        const Scalar coef = settings_.residual_coefficient(kappa_, B_);
        Eigen::Map<Vector> h(tb.h, B_), yb(tb.h + B_, B_), g(tb.g, B_);
        Scalar r = 0;  // sum_q (h_q - y_q)
        for (Index q = 0; q < B_; ++q) {
            Scalar total = 0;
            for (Index c = 0; c < n_chunks_; ++c) total += part[c * B_ + q];
            h[q] = kappa_ * total;
            if (loss_.has_output_bias) h[q] += tb.c0;
            if (!std::isfinite(h[q]) || std::abs(h[q]) > settings_.divergence_bound) return false;
            yb[q] = y_[tb.batch[q]];
            r += loss_.weight(tb.batch[q]) * (h[q] - yb[q]);
        }
        // g = dL/dh of the square loss (gd/model.hpp: h - y), times f kappa: L_B's derivative in the engine's
        // parameters (kappa a_i are train's outer weights); dL_B/dc0 = f sum_q (h_q - y_q).
        loss_from_predictions(h, yb, ModelSpec{}, g);
        for (Index q = 0; q < B_; ++q) g[q] *= coef;
        if (loss_.sample_weights.size() > 0)
            for (Index q = 0; q < B_; ++q) g[q] *= loss_.sample_weights[tb.batch[q]];
        if (loss_.has_output_bias && settings_.train_outer)
            tb.c0 -= settings_.step * (settings_.residual_coefficient(1, B_) * r);
        return true;
    }

    void chunk_noise(std::int64_t t, Index c, Scalar* xi) const {
        const Index i0 = c * kChunk;
        meanfield::chunk_noise(t, i0, std::min(N_, i0 + kChunk) - i0, P_, philox_keys_, counter_path_for(simd_), xi);
    }

    // Adds the noise of step t to chunk c (after its deterministic update).
    void add_noise(std::int64_t t, Index c, const ThreadBuffers& tb) const {
        const Index i0 = c * kChunk, n = std::min(N_, i0 + kChunk) - i0;
        const Scalar sd = noise_sd_;
        Scalar* __restrict xi = noise_buf(tb);
        chunk_noise(t, c, xi);
        if (settings_.train_outer)
            for (Index i = 0; i < n; ++i) arow()[i0 + i] += sd * xi[i];
        for (Index k = 0; k < d_; ++k) {
            Scalar* __restrict w = wrow(k) + i0;
            for (Index i = 0; i < n; ++i) w[i] += sd * xi[(1 + k) * kChunk + i];
        }
        if (settings_.bias)
            for (Index i = 0; i < n; ++i) brow()[i0 + i] += sd * xi[(d_ + 1) * kChunk + i];
    }

    // Single-sample step fused with the next step's forward pass (one sweep
    // over the neurons instead of d + 6), for d = D known at compile time:
    // see meanfield/fused.hpp. The widest path first (AVX), then SSE2 for
    // what remains of the chunk, then one by one; every path gives the same
    // numbers.
    template <int D, bool Outer, bool Bias, bool Noisy>
    void fused_chunk(std::int64_t t, Index c, const ThreadBuffers& tb, const Scalar* __restrict xn, Scalar* part_next) {
        const Scalar s = settings_.step, decay = decay_, sd = noise_sd_, g0 = tb.g[0];
        const Index i0 = c * kChunk, n = std::min(N_, i0 + kChunk) - i0;
        const Scalar* __restrict x = xrow(tb.batch[0]);
        Scalar* __restrict xi = noise_buf(tb);
        Scalar* __restrict a = arow() + i0;
        Scalar* __restrict b = brow() + i0;
        Scalar* __restrict z = zrow() + i0;
        Scalar* w[array_extent<D>];
        for (int k = 0; k < D; ++k) w[k] = wrow(k) + i0;
        Scalar xk[array_extent<D>], xnk[array_extent<D>];
        for (int k = 0; k < D; ++k) {
            xk[k] = x[k];
            xnk[k] = xn[k];
        }
        if (Noisy) chunk_noise(t, c, xi);
        Scalar lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // see meanfield::lane_sum
        Index i = 0;
#if defined(RELUCORE_SIMD_DISPATCH)
        if (simd_ >= kSimdAvx)
            i = meanfield::fused_avx<D, Outer, Bias, Noisy>(n, a, b, z, w, lanes, xi, xk, xnk, s, decay, g0, sd);
#endif
#if defined(__SSE2__)
        if (simd_ >= kSimdSse2)
            i = meanfield::fused_sse2<D, Outer, Bias, Noisy>(i, n, a, b, z, w, lanes, xi, xk, xnk, s, decay, g0, sd);
#endif
        meanfield::fused_scalar<D, Outer, Bias, Noisy>(i, n, a, b, z, w, lanes, xi, xk, xnk, s, decay, g0, sd);
        part_next[c] = meanfield::lane_total(lanes);
    }

    template <int D, bool Outer, bool Bias, bool Noisy>
    void fused_range(std::int64_t t, Index c0, Index c1, const ThreadBuffers& tb, const Scalar* xn, Scalar* pn) {
#if defined(RELUCORE_SIMD_DISPATCH)
        if (!Noisy && simd_ >= kSimdAvx512) {  // all chunks in one call
            if (c0 >= c1) return;
            const Scalar* x = xrow(tb.batch[0]);
            Scalar xk[array_extent<D>], xnk[array_extent<D>];
            Scalar* wb[array_extent<D>];
            for (int k = 0; k < D; ++k) {
                xk[k] = x[k];
                xnk[k] = xn[k];
                wb[k] = wrow(k);
            }
            meanfield::fused_avx512<D, Outer, Bias>(c0 * kChunk, std::min(N_, c1 * kChunk), arow(), brow(), zrow(), wb,
                                                    xk, xnk, settings_.step, decay_, tb.g[0], pn + c0);
            return;
        }
#endif
        for (Index c = c0; c < c1; ++c) fused_chunk<D, Outer, Bias, Noisy>(t, c, tb, xn, pn);
    }

    template <int D, bool Noisy>
    void fused_dispatch2(std::int64_t t, Index c0, Index c1, const ThreadBuffers& tb, const Scalar* xn, Scalar* pn) {
        const bool o = settings_.train_outer, b = settings_.bias;
        if (o && b)
            fused_range<D, true, true, Noisy>(t, c0, c1, tb, xn, pn);
        else if (o)
            fused_range<D, true, false, Noisy>(t, c0, c1, tb, xn, pn);
        else if (b)
            fused_range<D, false, true, Noisy>(t, c0, c1, tb, xn, pn);
        else
            fused_range<D, false, false, Noisy>(t, c0, c1, tb, xn, pn);
    }

    template <int D>
    void fused_dispatch(std::int64_t t, Index c0, Index c1, const ThreadBuffers& tb, const Scalar* xn, Scalar* pn) {
        if (noise_sd_ > 0)
            fused_dispatch2<D, true>(t, c0, c1, tb, xn, pn);
        else
            fused_dispatch2<D, false>(t, c0, c1, tb, xn, pn);
    }

    // Step t on the blocks [b0, b1) (chunks [c0, c1)) after the barrier:
    // residuals from the partial sums of step t, the update, and the forward
    // pass of step t + 1 on batch_next. false when the residuals are not finite.
    bool step(std::int64_t t, ThreadBuffers& tb, int tid, Index b0, Index b1, Index c0, Index c1) {
        if (!residuals(t, tb)) return false;
        Scalar* pn = partials(t + 1);
        const Scalar* xn = xrow(tb.batch_next[0]);
        if (B_ == 1 && d_ == 1)
            fused_dispatch<1>(t, c0, c1, tb, xn, pn);
        else if (B_ == 1 && d_ == 2)
            fused_dispatch<2>(t, c0, c1, tb, xn, pn);
        else if (B_ == 1 && d_ == 3)
            fused_dispatch<3>(t, c0, c1, tb, xn, pn);
        else {
            meanfield::DenseUpdate u;
            u.step = settings_.step, u.decay = decay_, u.outer = settings_.train_outer;
            for (Index blk = b0; blk < b1; ++blk) {
                dense_.update(blk, *tb.kernel, tb.g, u, tid);
                if (noise_sd_ > 0) {
                    const Index per = meanfield::DenseStep::kBlock / kChunk;
                    for (Index c = blk * per; c < std::min(n_chunks_, (blk + 1) * per); ++c) add_noise(t, c, tb);
                }
                dense_.forward(blk, *tb.kernel_next, pn, tid);
            }
        }
        return true;
    }

    RowMatrix Xb_;  // M x (d + 1): the rows (1, x_j)
    const Scalar* xrow(std::int64_t j) const { return Xb_.data() + j * (d_ + 1) + 1; }
    meanfield::DenseStep dense_;
    Vector y_;
    WeightGDSettings settings_;
    Index M_ = 0, d_ = 0, N_ = 0, P_ = 0, B_ = 1, n_chunks_ = 0;
    Scalar kappa_ = 1;
    Scalar decay_ = 1, noise_sd_ = 0;     // 1 - 2 s lambda / N and sqrt(4 (s/N) T)
    PhiloxKeys philox_keys_{Key2{0, 0}};  // the round keys of settings_.key
    int simd_ = kSimdScalar;
    // Structure-of-arrays state in one arena, rows of stride_ doubles
    // starting on 64-byte boundaries: a, b, w_1 .. w_d, then the row of
    // relu(z) of the current step (the fused path's; DenseStep keeps its own beta). stride_ >= N is a multiple of 8 whose
    // byte size is not close to a multiple of 4096, so that the rows do not
    // alias in the L1 cache (4K aliasing slows the fused sweep otherwise).
    std::vector<Scalar> soa_;
    Index soa_off_ = 0, stride_ = 0;
    Scalar* row(Index r) const { return const_cast<Scalar*>(soa_.data()) + soa_off_ + r * stride_; }
    Scalar* arow() const { return row(0); }
    Scalar* brow() const { return row(1); }
    Scalar* wrow(Index k) const { return row(2 + k); }
    Scalar* zrow() const { return row(2 + d_); }
    std::vector<Scalar> partial_;  // 2 x n_chunks x B (double-buffered by step parity)
    mutable std::vector<Scalar> pred_z_ = std::vector<Scalar>(kChunk);  // predict()'s pre-activations of a chunk
    int max_threads_ = 1;
    std::vector<std::int64_t> perm_, swaps_, batch_;
    std::vector<Scalar> g_, h_, scratch_;
    std::vector<std::uint64_t> words_;
    std::int64_t t_ = 0, last_history_ = -1;
    WeightGDLoss loss_;
};

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
