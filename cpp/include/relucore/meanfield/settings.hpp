// Settings, record buffers and summary of a mean-field run
// (meanfield/weight_gd.hpp), and the output scale kappa.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/types.hpp"
#include "relucore/defaults.hpp"
#include "relucore/gd/run.hpp"
#include "relucore/random/rng.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

// The factor kappa in front of the sum over neurons.
enum class OutputScale : int {
    inv_n = 0,       // 1/N: the mean-field scaling (c = 1)
    inv_sqrt_n = 1,  // 1/sqrt(N) (c = sqrt(N))
    one = 2,         // 1 (c = N)
    given = 3,       // WeightGDSettings::kappa itself (any finite kappa > 0)
};

// 1[z > 0] as a 0/1 factor. Written as a select of constants multiplying the
// value (not as a conditional value) so that GCC if-converts and vectorises
// the loops that use it.
inline Scalar step_fn(Scalar z) {
    return z > 0 ? Scalar(1) : Scalar(0);
}

inline Scalar output_scale_factor(OutputScale s, Index N) {
    switch (s) {
        case OutputScale::inv_n:
            return Scalar(1) / static_cast<Scalar>(N);
        case OutputScale::inv_sqrt_n:
            return Scalar(1) / std::sqrt(static_cast<Scalar>(N));
        case OutputScale::one:
            return Scalar(1);
        case OutputScale::given:
            break;  // the value lives in WeightGDSettings::kappa
    }
    throw std::invalid_argument("unknown output scale");
}

struct WeightGDSettings {
    Scalar step = 0;          // s > 0 (see the update above)
    Scalar weight_decay = 0;  // lambda >= 0
    Scalar temperature = 0;   // 1/beta >= 0; 0: no noise
    OutputScale scale = OutputScale::inv_n;
    Scalar kappa = 1;         // the factor kappa when scale == OutputScale::given
    bool bias = true;         // false: b_i = 0 and theta_i = (a_i, w_i)
    bool train_outer = true;  // false: a_i stay at their initial values
    Index batch_size = 1;     // 1 .. M; M is full-batch GD (no sampling)
    // The data term of the objective over a batch B: 1/|B| sum (mean, the papers'), sum or 1/2 sum
    // of (h(x_j) - y_j)^2 (reduction_factor() of gd/model.hpp).
    Reduction reduction = Reduction::mean;
    std::int64_t record_every = defaults::record;  // objective and tracked neurons every k steps (0: never)
    Key2 key{0, 0};                                // the generator's key (the seed)
    int n_threads = 1;                             // <= 0: default_threads()
    // The run is declared diverged when some h(x_j) of a step is not finite or
    // exceeds this in absolute value.
    Scalar divergence_bound = defaults::meanfield_divergence_bound;
    // Set to true by another thread to stop the run at the next check point
    // (every kCheckEvery steps).
    const std::atomic<bool>* cancel = nullptr;

    /// The factor of dL_B/dh = f c (h - y) over a batch of n for an output factor c (the run's kappa,
    /// or 1 for the output bias): 2 c / n for the mean, written as before the reduction existed so
    /// that its numbers are unchanged.
    Scalar residual_coefficient(Scalar c, Index n) const {
        if (reduction == Reduction::mean) return 2 * c / static_cast<Scalar>(n);
        return c * reduction_factor(reduction, n);
    }
    /// The data term of n examples whose squared residuals sum to sum_sq.
    Scalar reduced(Scalar sum_sq, Index n) const {
        if (reduction == Reduction::mean) return sum_sq / static_cast<Scalar>(n);
        return sum_sq * (reduction_factor(reduction, n) / 2);
    }

    void validate() const {
        if (!(step > 0) || !std::isfinite(step)) throw std::invalid_argument("step must be positive and finite");
        if (!(weight_decay >= 0) || !std::isfinite(weight_decay))
            throw std::invalid_argument("weight_decay must be >= 0 and finite");
        if (!(temperature >= 0) || !std::isfinite(temperature))
            throw std::invalid_argument("temperature must be >= 0 and finite");
        if (batch_size < 1) throw std::invalid_argument("batch_size must be >= 1");
        if (record_every < 0) throw std::invalid_argument("record_every must be >= 0");
        if (!(divergence_bound > 0)) throw std::invalid_argument("divergence_bound must be positive");
        if (scale == OutputScale::given && (!(kappa > 0) || !std::isfinite(kappa)))
            throw std::invalid_argument("kappa must be positive and finite");
    }
    /// kappa for N neurons: output_scale_factor(scale, N), or kappa itself for OutputScale::given.
    Scalar output_scale_factor(Index N) const {
        return scale == OutputScale::given ? kappa : relucore::output_scale_factor(scale, N);
    }
};

// WeightGD's loss options (docs/math.md §2): an output bias c0, h(x) = c0 + kappa sum_i a_i
// relu(w_i^T x + b_i), moved with train_outer by -s dL_B/dc0 (no decay, no noise) and fixed
// otherwise, and per-sample weights v_j >= 0 of the data term (1/|B| sum_j v_j (h_j - y_j)^2 for
// the mean). Both off by default: the engine then computes as without them.
struct WeightGDLoss {
    Scalar output_bias = 0;  // 0 without one
    bool has_output_bias = false;
    Vector sample_weights;  // M entries, or empty: every weight 1

    void set_output_bias(Scalar c0) {
        if (!std::isfinite(c0)) throw std::invalid_argument("output_bias must be finite");
        has_output_bias = true, output_bias = c0;
    }
    void set_sample_weights(const ConstVectorRef& v, Index M) {
        if (v.size() != M) throw std::invalid_argument("sample_weight must have one entry per sample");
        if (!v.allFinite() || (v.array() < 0).any())
            throw std::invalid_argument("sample_weight must be finite and >= 0");
        sample_weights = v;
    }
    Scalar weight(std::int64_t j) const { return sample_weights.size() > 0 ? sample_weights[j] : Scalar(1); }
};

namespace detail {
struct PackedTheta {};  // selects WeightGD's constructor from packed parameters
}  // namespace detail

// The initial neurons of WeightGD by name, set field by field (the explicit
// constructor refuses positional brace-initialisation):
//     WeightGDStart start;  start.a = a;  start.w = W;  start.b = b;
struct WeightGDStart {
    explicit WeightGDStart() = default;
    Vector a;     // N outer weights a_i
    RowMatrix w;  // N x d inner weights, one row per neuron
    Vector b;     // N biases b_i; empty when the settings have bias = false

    // The packed N x P parameters (a, w_1..w_d, b), or (a, w_1..w_d) without
    // bias: the layout of WeightGD::set_theta() and theta().
    RowMatrix theta(bool bias, Index d) const {
        const Index N = a.size();
        if (w.rows() != N || w.cols() != d)
            throw std::invalid_argument("start.w must be N x d (one row per entry of a)");
        if (b.size() != (bias ? N : 0))
            throw std::invalid_argument(bias ? "start.b must have N entries" : "start.b must be empty without bias");
        RowMatrix out(N, d + (bias ? 2 : 1));
        out.col(0) = a;
        out.middleCols(1, d) = w;
        if (bias) out.col(d + 1) = b;
        return out;
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
    Status status = Status::completed;  // completed: all requested steps ran
    std::int64_t nit = 0;               // global step count at the end
    Scalar objective = 0;               // L at the final state
};

// The first step >= u at which the threads must meet: a record, a snapshot,
// a cancellation check (every check_every steps from start) or the end.
inline std::int64_t next_sync_step(const WeightGDSettings& settings, const WeightGDRecord* rec, std::int64_t u,
                                   std::int64_t start, std::int64_t end, std::int64_t check_every) {
    std::int64_t next = std::min(end, start + ((u - start + check_every - 1) / check_every) * check_every);
    if (rec) {
        const std::int64_t k = settings.record_every;
        if (k > 0 && rec->capacity > 0) next = std::min(next, ((u + k - 1) / k) * k);
        for (Index s = 0; s < rec->n_snapshots; ++s)
            if (rec->snapshot_steps[s] >= u) next = std::min(next, rec->snapshot_steps[s]);
    }
    return next;
}

// Whether step t is a record or snapshot step.
inline bool records_at(const WeightGDSettings& settings, const WeightGDRecord& rec, std::int64_t t) {
    if (settings.record_every > 0 && t % settings.record_every == 0 && rec.capacity > 0) return true;
    for (Index s = 0; s < rec.n_snapshots; ++s)
        if (rec.snapshot_steps[s] == t) return true;
    return false;
}

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
