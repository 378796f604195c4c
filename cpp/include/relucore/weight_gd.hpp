// Weight-space (noisy, stochastic) gradient descent for a wide two-layer ReLU
// network with bias and a trainable outer layer (SPEC §10, Liang et al. 2026):
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
// temperature T = 1/beta (xi_i ~ N(0, I) on the trained coordinates). Written
// out for the mean-field scale kappa = 1/N this is SPEC §10's update
//
//     theta_i <- theta_i - (s/N) [2 (h(x_j) - y_j) grad sigma(x_j; theta_i) + 2 lambda theta_i]
//                + sqrt(4 (s/N) / beta) xi_i,
//
// the Euler-Maruyama discretisation, with time step s/N, of the Langevin
// dynamics d theta = -2 grad Psi dt + sqrt(4/beta) dB whose law solves the
// paper's Wasserstein flow (drift 2 grad Psi, diffusion 2/beta). The paper's
// "step size s_N = 1e-3" at N = 1000 is s = 1 here. grad sigma uses the strict
// ReLU derivative 1[w^T x + b > 0].
//
// Randomness (the batch of step t, the noise of neuron i at step t, the
// initial parameters) comes from the counter-based generator of rng.hpp keyed
// by (seed, step, neuron), so results are bitwise independent of the thread
// count and of how a run is split into calls. The forward pass h(x_j) is a sum
// over neurons taken in a fixed order: per-chunk partial sums (chunks of
// kChunk neurons, a constant) added chunk by chunk.
//
// Parameters are stored structure-of-arrays (a[N], W[d][N], b[N]) so that the
// per-step loops run over contiguous neuron ranges and vectorise; all buffers
// are allocated in the constructor, the step loop allocates nothing.
#pragma once

#include "relucore/parallel.hpp"
#include "relucore/rng.hpp"
#include "relucore/run.hpp"
#include "relucore/types.hpp"

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

// The factor kappa in front of the sum over neurons.
enum class OutputScale : int {
    inv_n = 0,       // 1/N: the mean-field scaling (c = 1)
    inv_sqrt_n = 1,  // 1/sqrt(N) (c = sqrt(N))
    one = 2,         // 1 (c = N)
};

// 1[z > 0] as a 0/1 factor. Written as a select of constants multiplying the
// value (not as a conditional value) so that GCC if-converts and vectorises
// the loops that use it.
inline Scalar step_fn(Scalar z) { return z > 0 ? Scalar(1) : Scalar(0); }

inline Scalar output_scale_factor(OutputScale s, Index N) {
    switch (s) {
        case OutputScale::inv_n: return Scalar(1) / static_cast<Scalar>(N);
        case OutputScale::inv_sqrt_n: return Scalar(1) / std::sqrt(static_cast<Scalar>(N));
        case OutputScale::one: return Scalar(1);
    }
    throw std::invalid_argument("unknown output scale");
}

struct WeightGDSettings {
    Scalar step = 0;          // s > 0 (see the update above)
    Scalar weight_decay = 0;  // lambda >= 0
    Scalar temperature = 0;   // 1/beta >= 0; 0: no noise
    OutputScale scale = OutputScale::inv_n;
    bool bias = true;         // false: b_i = 0 and theta_i = (a_i, w_i)
    bool train_outer = true;  // false: a_i stay at their initial values
    Index batch_size = 1;     // 1 .. M; M is full-batch GD (no sampling)
    std::int64_t record_every = 0;  // objective and tracked neurons every k steps (0: never)
    Key2 key{0, 0};           // the generator's key (the seed)
    int n_threads = 1;        // <= 0: default_threads()
    // The run is declared diverged when some h(x_j) of a step is not finite or
    // exceeds this in absolute value.
    Scalar divergence_bound = 1e100;
    // Set to true by another thread to stop the run at the next check point
    // (every kCheckEvery steps).
    const std::atomic<bool>* cancel = nullptr;

    void validate() const {
        if (!(step > 0) || !std::isfinite(step)) throw std::invalid_argument("step must be positive and finite");
        if (!(weight_decay >= 0) || !std::isfinite(weight_decay))
            throw std::invalid_argument("weight_decay must be >= 0 and finite");
        if (!(temperature >= 0) || !std::isfinite(temperature))
            throw std::invalid_argument("temperature must be >= 0 and finite");
        if (batch_size < 1) throw std::invalid_argument("batch_size must be >= 1");
        if (record_every < 0) throw std::invalid_argument("record_every must be >= 0");
        if (!(divergence_bound > 0)) throw std::invalid_argument("divergence_bound must be positive");
    }
};

// Caller-owned output buffers of a run (null pointers: not recorded).
//   history:      steps[r], objective[r] for r < capacity; trajectories[r] is
//                 an n_track x P block holding the tracked neurons' theta.
//   snapshots:    snapshot_steps (any order), snapshots[s] an N x P block
//                 written when the run reaches step snapshot_steps[s];
//                 snapshot_taken[s] set to 1 then.
struct WeightGDRecord {
    std::int64_t* steps = nullptr;
    Scalar* objective = nullptr;
    Scalar* trajectories = nullptr;
    std::int64_t capacity = 0;
    std::int64_t count = 0;
    const std::int64_t* track = nullptr;
    Index n_track = 0;
    const std::int64_t* snapshot_steps = nullptr;
    Scalar* snapshots = nullptr;
    std::uint8_t* snapshot_taken = nullptr;
    Index n_snapshots = 0;
};

struct WeightGDSummary {
    Status status = Status::max_steps;  // max_steps: all requested steps ran
    std::int64_t nit = 0;               // global step count at the end
    Scalar objective = 0;               // L at the final state
};

class WeightGD {
public:
    static constexpr Index kChunk = 128;            // neurons per work unit (fixed: sets the sum order)
    static constexpr std::int64_t kCheckEvery = 1024;  // steps between cancellation checks

    // X: M x d inputs, y: M labels, theta0: N x P initial parameters with
    // columns (a, w_1..w_d, b) (P = d + 2) or (a, w_1..w_d) without bias.
    WeightGD(ConstMatrixRef X, ConstVectorRef y, ConstMatrixRef theta0, const WeightGDSettings& settings)
        : X_(X), y_(y), settings_(settings) {
        settings_.validate();
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
        kappa_ = output_scale_factor(settings_.scale, N_);
        a_.resize(N_);
        W_.resize(d_, N_);
        b_ = Vector::Zero(N_);
        set_theta(theta0);
        n_chunks_ = (N_ + kChunk - 1) / kChunk;
        Z_.resize(B_, N_);
        partial_.assign(static_cast<size_t>(2 * n_chunks_ * B_), 0.0);
        max_threads_ = settings_.n_threads > 0 ? settings_.n_threads : default_threads();
        max_threads_ = static_cast<int>(std::max<Index>(1, std::min<Index>(max_threads_, n_chunks_)));
        const auto T = static_cast<size_t>(max_threads_);
        perm_.resize(T * static_cast<size_t>(M_));
        swaps_.resize(T * static_cast<size_t>(B_));
        batch_.resize(T * static_cast<size_t>(B_));
        g_.resize(T * static_cast<size_t>(B_));
        scratch_.resize(T * static_cast<size_t>((d_ + 2) * kChunk + P_));
    }

    Index N() const { return N_; }
    Index P() const { return P_; }
    std::int64_t steps_taken() const { return t_; }

    void set_theta(ConstMatrixRef theta) {
        if (theta.rows() != N_ || theta.cols() != P_) throw std::invalid_argument("theta has the wrong shape");
        for (Index i = 0; i < N_; ++i) {
            a_[i] = theta(i, 0);
            for (Index k = 0; k < d_; ++k) W_(k, i) = theta(i, 1 + k);
            b_[i] = settings_.bias ? theta(i, d_ + 1) : 0.0;
        }
    }

    void theta_row(Index i, Scalar* out) const {
        out[0] = a_[i];
        for (Index k = 0; k < d_; ++k) out[1 + k] = W_(k, i);
        if (settings_.bias) out[d_ + 1] = b_[i];
    }

    void theta(MatrixRef out) const {
        if (out.rows() != N_ || out.cols() != P_) throw std::invalid_argument("theta output has the wrong shape");
        for (Index i = 0; i < N_; ++i) theta_row(i, &out(i, 0));
    }

    // h(x_j) for every row of X (fixed summation order).
    Scalar predict(const Scalar* x) const {
        Scalar total = 0;
        for (Index c = 0; c < n_chunks_; ++c) {
            const Index i0 = c * kChunk, i1 = std::min(N_, i0 + kChunk);
            Scalar s = 0;
            for (Index i = i0; i < i1; ++i) {
                Scalar z = b_[i];
                for (Index k = 0; k < d_; ++k) z += W_(k, i) * x[k];
                s += a_[i] * (z > 0 ? z : 0);
            }
            total += s;
        }
        return kappa_ * total;
    }

    // L(Theta) on the full data set.
    Scalar objective() const {
        Scalar fit = 0;
        for (Index j = 0; j < M_; ++j) {
            const Scalar r = predict(&X_(j, 0)) - y_[j];
            fit += r * r;
        }
        Scalar reg = 0;
        for (Index i = 0; i < N_; ++i) {
            Scalar q = 0;
            if (settings_.train_outer) q += a_[i] * a_[i];
            for (Index k = 0; k < d_; ++k) q += W_(k, i) * W_(k, i);
            if (settings_.bias) q += b_[i] * b_[i];
            reg += q;
        }
        return fit / static_cast<Scalar>(M_) + settings_.weight_decay / static_cast<Scalar>(N_) * reg;
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
            for (std::int64_t q = 0; q < iters * B_; ++q)
                if (samples[q] < 0 || samples[q] >= M_) throw std::invalid_argument("sample index out of range");
        t_ = start;
        const std::int64_t end = start + iters;
        last_history_ = -1;
        bool stop = false;
        bool cancelled = false;
        bool diverged = false;
        const int T = max_threads_;
#if defined(RELUCORE_WITH_OPENMP)
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
            const Index c0 = n_chunks_ * tid / nth, c1 = n_chunks_ * (tid + 1) / nth;
            ThreadBuffers tb = buffers(tid);
            std::int64_t next_sync = start;
            for (std::int64_t t = start;; ++t) {
                if (t == next_sync) {
                    const bool at_record = rec && t < end && wants_record(*rec, t);
#if defined(RELUCORE_WITH_OPENMP)
#pragma omp barrier
#endif
                    if (tid == 0) {
                        if (at_record) record(*rec, t);
                        if (settings_.cancel && settings_.cancel->load(std::memory_order_relaxed)) cancelled = true;
                        stop = cancelled || t == end;
                        t_ = t;
                    }
#if defined(RELUCORE_WITH_OPENMP)
#pragma omp barrier
#endif
                    if (stop) break;
                    next_sync = next_event(t + 1, start, end, rec);
                }
                const std::int64_t* fixed = samples ? samples + (t - start) * B_ : nullptr;
                if (!step(t, tb, c0, c1, fixed)) {
                    // Every thread sees the same residuals, hence stops at the same t.
                    if (tid == 0) {
                        diverged = true;
                        t_ = t;
                    }
                    break;
                }
            }
        }
        WeightGDSummary out;
        out.nit = t_;
        out.status = diverged ? Status::diverged : cancelled ? Status::cancelled : Status::max_steps;
        if (rec && record_final && last_history_ != t_) record(*rec, t_, /*final_state=*/true);
        out.objective = objective();
        return out;
    }

private:
    struct ThreadBuffers {
        std::int64_t* perm;
        std::int64_t* swaps;
        std::int64_t* batch;
        Scalar* g;
        Scalar* scratch;
    };

    ThreadBuffers buffers(int tid) {
        const auto t = static_cast<size_t>(tid);
        ThreadBuffers tb{perm_.data() + t * M_, swaps_.data() + t * B_, batch_.data() + t * B_, g_.data() + t * B_,
                         scratch_.data() + t * static_cast<size_t>((d_ + 2) * kChunk + P_)};
        for (Index j = 0; j < M_; ++j) tb.perm[j] = j;
        return tb;
    }

    bool wants_record(const WeightGDRecord& rec, std::int64_t t) const {
        if (settings_.record_every > 0 && t % settings_.record_every == 0 && rec.capacity > 0) return true;
        for (Index s = 0; s < rec.n_snapshots; ++s)
            if (rec.snapshot_steps[s] == t) return true;
        return false;
    }

    // The first step >= u at which the threads must meet: a record, a
    // snapshot, a cancellation check or the end.
    std::int64_t next_event(std::int64_t u, std::int64_t start, std::int64_t end, const WeightGDRecord* rec) const {
        std::int64_t next = std::min(end, start + ((u - start + kCheckEvery - 1) / kCheckEvery) * kCheckEvery);
        if (rec) {
            const std::int64_t k = settings_.record_every;
            if (k > 0 && rec->capacity > 0) next = std::min(next, ((u + k - 1) / k) * k);
            for (Index s = 0; s < rec->n_snapshots; ++s)
                if (rec->snapshot_steps[s] >= u) next = std::min(next, rec->snapshot_steps[s]);
        }
        return next;
    }

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

    // The batch of step t in tb.batch (identical on every thread).
    void draw_batch(std::int64_t t, ThreadBuffers& tb, const std::int64_t* fixed) const {
        if (fixed) {
            std::copy(fixed, fixed + B_, tb.batch);
            return;
        }
        if (B_ == M_) {
            for (Index j = 0; j < M_; ++j) tb.batch[j] = j;
            return;
        }
        const CounterRng rng(settings_.key);
        // Partial Fisher-Yates on the identity permutation, undone afterwards.
        for (Index k = 0; k < B_; ++k) {
            const double u = rng.uniform(static_cast<std::uint64_t>(t), 0, RngStream::sample, static_cast<std::uint64_t>(k));
            const std::int64_t j = k + CounterRng::to_index(u, M_ - k);
            tb.swaps[k] = j;
            std::swap(tb.perm[k], tb.perm[j]);
            tb.batch[k] = tb.perm[k];
        }
        for (Index k = B_ - 1; k >= 0; --k) std::swap(tb.perm[k], tb.perm[tb.swaps[k]]);
    }

    // One step on chunks [c0, c1); false when the residuals are not finite.
    bool step(std::int64_t t, ThreadBuffers& tb, Index c0, Index c1, const std::int64_t* fixed) {
        draw_batch(t, tb, fixed);
        Scalar* part = partial_.data() + static_cast<size_t>((t & 1) * n_chunks_ * B_);
        // Phase 1: pre-activations of my neurons and their chunk sums.
        for (Index c = c0; c < c1; ++c) {
            const Index i0 = c * kChunk, i1 = std::min(N_, i0 + kChunk);
            for (Index q = 0; q < B_; ++q) {
                const Scalar* x = &X_(tb.batch[q], 0);
                Scalar* z = &Z_(q, 0);
                const Scalar* bb = b_.data();
                for (Index i = i0; i < i1; ++i) z[i] = bb[i];
                for (Index k = 0; k < d_; ++k) {
                    const Scalar xk = x[k];
                    const Scalar* w = &W_(k, 0);
                    for (Index i = i0; i < i1; ++i) z[i] += w[i] * xk;
                }
                // Four fixed lanes: an order that does not depend on the compiler.
                Scalar acc[4] = {0, 0, 0, 0};
                const Scalar* a = a_.data();
                Index i = i0;
                for (; i + 4 <= i1; i += 4)
                    for (int l = 0; l < 4; ++l) {
                        const Scalar zz = z[i + l];
                        acc[l] += a[i + l] * std::max(zz, Scalar(0));
                    }
                for (; i < i1; ++i) acc[0] += a[i] * std::max(z[i], Scalar(0));
                part[c * B_ + q] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
            }
        }
#if defined(RELUCORE_WITH_OPENMP)
#pragma omp barrier
#endif
        // Residuals, computed redundantly (and identically) by every thread.
        const Scalar coef = 2 * kappa_ / static_cast<Scalar>(B_);
        for (Index q = 0; q < B_; ++q) {
            Scalar total = 0;
            for (Index c = 0; c < n_chunks_; ++c) total += part[c * B_ + q];
            const Scalar h = kappa_ * total;
            if (!std::isfinite(h) || std::abs(h) > settings_.divergence_bound) return false;
            tb.g[q] = coef * (h - y_[tb.batch[q]]);
        }
        // Phase 2: update my neurons.
        const Scalar s = settings_.step;
        const Scalar decay = 1 - 2 * s * settings_.weight_decay / static_cast<Scalar>(N_);
        const Scalar noise_sd = std::sqrt(4 * (s / static_cast<Scalar>(N_)) * settings_.temperature);
        const bool outer = settings_.train_outer, bias = settings_.bias;
        Scalar* da = tb.scratch;
        Scalar* db = da + kChunk;
        Scalar* dw = db + kChunk;  // d x kChunk
        Scalar* xi = dw + d_ * kChunk;
        for (Index c = c0; c < c1; ++c) {
            const Index i0 = c * kChunk, n = std::min(N_, i0 + kChunk) - i0;
            Scalar* __restrict a = a_.data() + i0;
            Scalar* __restrict b = b_.data() + i0;
            if (B_ == 1) {
                // Single sample: c_i = s g a_i 1[z_i > 0] is the common factor of the w and b steps.
                const Scalar gs = s * tb.g[0];
                const Scalar* __restrict x = &X_(tb.batch[0], 0);
                const Scalar* __restrict z = &Z_(0, i0);
                Scalar* __restrict ci = db;
                // Branch-free masks (a 0/1 factor) so that the loops vectorise.
                for (Index i = 0; i < n; ++i) ci[i] = step_fn(z[i]) * (gs * a[i]);
                if (outer)
                    for (Index i = 0; i < n; ++i) a[i] = decay * a[i] - gs * std::max(z[i], Scalar(0));
                for (Index k = 0; k < d_; ++k) {
                    Scalar* __restrict w = &W_(k, i0);
                    const Scalar xk = x[k];
                    for (Index i = 0; i < n; ++i) w[i] = decay * w[i] - ci[i] * xk;
                }
                if (bias)
                    for (Index i = 0; i < n; ++i) b[i] = decay * b[i] - ci[i];
                if (noise_sd > 0) add_noise(t, i0, n, noise_sd, xi);
                continue;
            }
            std::fill(da, da + n, 0.0);
            std::fill(db, db + n, 0.0);
            std::fill(dw, dw + d_ * kChunk, 0.0);
            for (Index q = 0; q < B_; ++q) {
                const Scalar gq = tb.g[q];
                const Scalar* x = &X_(tb.batch[q], 0);
                const Scalar* z = &Z_(q, i0);
                for (Index i = 0; i < n; ++i) {
                    da[i] += std::max(z[i], Scalar(0)) * gq;
                    db[i] += step_fn(z[i]) * gq;
                }
                for (Index k = 0; k < d_; ++k) {
                    const Scalar xk = x[k];
                    Scalar* dwk = dw + k * kChunk;
                    for (Index i = 0; i < n; ++i) dwk[i] += step_fn(z[i]) * (gq * xk);
                }
            }
            // grad_w = a * dw, grad_b = a * db use the old a: update w, b first.
            for (Index k = 0; k < d_; ++k) {
                Scalar* w = &W_(k, i0);
                const Scalar* dwk = dw + k * kChunk;
                for (Index i = 0; i < n; ++i) w[i] = decay * w[i] - s * a[i] * dwk[i];
            }
            if (bias)
                for (Index i = 0; i < n; ++i) b[i] = decay * b[i] - s * a[i] * db[i];
            if (outer)
                for (Index i = 0; i < n; ++i) a[i] = decay * a[i] - s * da[i];
            if (noise_sd > 0) add_noise(t, i0, n, noise_sd, xi);
        }
        return true;
    }

    // Langevin noise of step t on neurons i0 .. i0+n-1 (trained coordinates only).
    void add_noise(std::int64_t t, Index i0, Index n, Scalar sd, Scalar* xi) {
        const CounterRng rng(settings_.key);
        for (Index i = i0; i < i0 + n; ++i) {
            rng.normals(static_cast<std::uint64_t>(t), static_cast<std::uint64_t>(i), RngStream::noise, xi,
                        static_cast<int>(P_));
            if (settings_.train_outer) a_[i] += sd * xi[0];
            for (Index k = 0; k < d_; ++k) W_(k, i) += sd * xi[1 + k];
            if (settings_.bias) b_[i] += sd * xi[d_ + 1];
        }
    }

    RowMatrix X_;
    Vector y_;
    WeightGDSettings settings_;
    Index M_ = 0, d_ = 0, N_ = 0, P_ = 0, B_ = 1, n_chunks_ = 0;
    Scalar kappa_ = 1;
    Vector a_, b_;
    RowMatrix W_;  // d x N
    RowMatrix Z_;  // B x N pre-activations of the current step
    std::vector<Scalar> partial_;  // 2 x n_chunks x B (double-buffered by step parity)
    int max_threads_ = 1;
    std::vector<std::int64_t> perm_, swaps_, batch_;
    std::vector<Scalar> g_, scratch_;
    std::int64_t t_ = 0;
    std::int64_t last_history_ = -1;
};

// Initial parameters theta_i ~ N(0, scale^2 I_P) from the init stream of the
// generator (neuron i uses counter (0, i, init, .)); with fixed_outer the
// outer weights are instead random signs a_i = +-1 (from the same stream's
// normals: the sign of the first one).
inline void weight_gd_init(MatrixRef theta, Scalar scale, Key2 key, bool fixed_outer) {
    const CounterRng rng(key);
    const Index P = theta.cols();
    std::vector<double> z(static_cast<size_t>(P));
    for (Index i = 0; i < theta.rows(); ++i) {
        rng.normals(0, static_cast<std::uint64_t>(i), RngStream::init, z.data(), static_cast<int>(P));
        for (Index q = 0; q < P; ++q) theta(i, q) = scale * z[static_cast<size_t>(q)];
        if (fixed_outer) theta(i, 0) = z[0] >= 0 ? 1.0 : -1.0;
    }
}

}  // namespace relucore
