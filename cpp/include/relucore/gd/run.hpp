/// @file gd/run.hpp
/// What every GD engine shares: the settings of a run (GDSettings), its
/// stopping rules and outcome (RunSummary; the Status values are in core/status.hpp), the activation-pattern
/// tracker, the history recorder, and the loop that drives any engine to a
/// stopping rule (run_to_stop).
///
/// An engine (DualGD, DenseGD) provides
///   - `void evaluate()`: loss, gradient norm and pending update at the current state;
///   - `void apply()`: take the step computed by evaluate();
///   - `Scalar loss()`, `Scalar grad_norm()`, `std::int64_t steps_taken()`;
///   - `beta()`, `alpha()`: m x n, the current primal and dual coordinates;
///   - `const PatternTracker& pattern()`.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/checks.hpp"
#include "relucore/core/status.hpp"
#include "relucore/core/types.hpp"
#include "relucore/defaults.hpp"
#include "relucore/gd/model.hpp"
#include "relucore/simd.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

/// Settings of a GD run, shared by every engine.
///
/// The step budget `max_steps` counts steps from 0 (the engine's own step
/// counter), so a run that resumes at step t with `max_steps = t + k` takes at
/// most k more steps.
struct GDSettings {
    Scalar eta = 0;                                ///< step size, > 0
    std::int64_t max_steps = 0;                    ///< stop once steps_taken() reaches this (absolute count)
    Scalar tol = 0;                                ///< stop once ||grad_W R||_F < tol (0: never stop early)
    std::int64_t record_every = defaults::record;  ///< keep every k-th state in the History (0: none)
    /// The run is declared diverged when the loss is not finite or exceeds
    /// divergence_factor * max(loss at the start of the run, 1).
    Scalar divergence_factor = defaults::divergence_factor;
    ModelSpec model{};  ///< activation and loss
    /// Train the outer layer too: each step also moves the engine's outer
    /// weights, simultaneously with the inner ones (docs/math.md, trained outer layer).
    bool train_outer = false;
    /// The output scale c of h(x) = c sum_k a_k phi(w_k^T x). The engines hold
    /// the effective outer weights c a_k (outer()), so with a fixed outer layer
    /// c is folded into them by the caller and this value is not read; with
    /// train_outer it sets the outer step, d(c a_k) = -eta c^2 sum_i phi(beta_ki) g_i,
    /// and the outer part c sum_i phi(beta_ki) g_i of the gradient norm.
    Scalar output_scale = 1;
    /// Stop as converged on the engine's running gradient norm alone (grad_norm() < tol). Default
    /// false: an engine that can bound the rounding of its norm (DualGD::grad_norm_provably_below())
    /// stops only where the norm is provably below tol. For callers that check the returned point
    /// themselves (the certified-limit run).
    bool converge_on_running_norm = false;
    /// Set to true by another thread to stop a run (or a step(k) loop) after
    /// the current step. Not owned; null means "never cancelled".
    const std::atomic<bool>* cancel = nullptr;

    /// Throws std::invalid_argument naming the first setting out of range.
    void validate() const {
        if (!(eta > 0) || !std::isfinite(eta)) throw std::invalid_argument("eta must be positive and finite");
        if (max_steps < 0) throw std::invalid_argument("max_steps must be >= 0");
        if (!(tol >= 0) || !std::isfinite(tol)) throw std::invalid_argument("tol must be >= 0 and finite");
        if (record_every < 0) throw std::invalid_argument("record_every must be >= 0");
        if (!(divergence_factor > 1)) throw std::invalid_argument("divergence_factor must be > 1");
        if (!(output_scale > 0) || !std::isfinite(output_scale))
            throw std::invalid_argument("output_scale must be positive and finite");
        model.validate();
    }
};

/// Outcome of run_to_stop(). The loss and gradient norm belong to the final state.
struct RunSummary {
    Status status = Status::max_steps;
    std::int64_t nit = 0;                  ///< engine's step count at the end (steps_taken())
    Scalar loss = 0;                       ///< loss of the final state
    Scalar grad_norm = 0;                  ///< ||grad_W R||_F at the final state
    std::int64_t pattern_stable_step = 0;  ///< first step after which no mask changed
    std::int64_t n_records = 0;            ///< states written to the history
    std::int64_t n_unfit = 0;              ///< examples unfit at the final state (counted when stalled)
    /// NaN, unless the final state's running gradient norm is below tol but not provably so
    /// (K singular: the dual-form sum cancels); then the bound on the rounding of ||grad_W R||_F
    /// there (DualGD::grad_norm_provably_below()), and the run did not stop as converged.
    Scalar unresolved_bound = std::numeric_limits<Scalar>::quiet_NaN();
};

/// Whether example i is out of reach of every neuron: no neuron can output its label's sign
/// (the ReLU, y_i != 0 and s_k y_i <= 0 for every k). Its best prediction is h_i = 0, which a
/// global minimum attains, so the loss it carries is not a failure of the run. Branch-free over
/// the neurons (state_unfit() runs it for every example of a converged run).
inline bool out_of_reach(const Scalar* outer, Index m, const ModelSpec& spec, Scalar y) {
    bool fittable = spec.activation != Activation::relu;
    for (Index k = 0; k < m; ++k) fittable |= outer[k] * y > 0;
    return !fittable & (y != 0);
}

/// Whether example i is left unfit by a state (state_unfit(): beta m x n, the outer weights c a_k,
/// the label y_i and the prediction h_i; example_unfit(): the engine's current, evaluated state):
///   - no neuron is active on it (beta_{k,i} <= 0 for every k), so no gradient
///     of the ReLU reaches it and GD cannot change its prediction any more;
///   - the model could fit it: some neuron has s_k y_i > 0 (for the ReLU; the
///     leaky ReLU outputs either sign, so any y_i != 0). An example that no
///     neuron can fit (y_i < 0 with only positive s_k) is at its best value
///     h_i = 0, part of the global minimum, and never counts;
///   - it is not fit: |h_i - y_i| > defaults::unfit_rtol |y_i| for the square
///     loss (scale-aware: relative to its own label), and y_i h_i <= 0
///     (misclassified) for the logistic loss, whose loss never reaches 0 and
///     where fitting an example means classifying it correctly.
/// With K positive definite (X of full row rank) a stationary point leaves no
/// example unfit exactly when it is a global minimum.
/// Every test is evaluated (no early exit), so that count_unfit() has no branch per
/// example for a converged run's random pattern of active and inactive ones to mispredict.
template <class Beta>
bool state_unfit(const Beta& beta, const Scalar* outer, const ModelSpec& spec, Scalar y, Scalar h, Index i) {
    bool active = false;
    for (Index k = 0; k < beta.rows(); ++k) active |= beta(k, i) > 0;
    const bool fittable = (y != 0) & !out_of_reach(outer, beta.rows(), spec, y);
    const bool unfit =
        spec.loss == Loss::logistic ? !(y * h > 0) : std::abs(h - y) > defaults::unfit_rtol * std::abs(y);
    return !active & fittable & unfit;
}

/// example_unfit() of an engine's current state.
template <class Engine>
bool example_unfit(const Engine& e, Index i) {
    // An example of zero loss weight is out of the loss: never unfit.
    if (e.loss_weights().size() > 0 && e.loss_weights()[i] == 0) return false;
    return state_unfit(e.beta(), e.outer().data(), e.settings().model, e.labels()[i], e.predictions()[i], i);
}

/// Number of examples example_unfit() reports at the engine's current state.
template <class Engine>
std::int64_t count_unfit(const Engine& e) {
    std::int64_t count = 0;
    for (Index i = 0; i < e.beta().cols(); ++i) count += example_unfit(e, i) ? 1 : 0;
    return count;
}

namespace detail {
#if defined(RELUCORE_SIMD_DISPATCH)
// mk[j] = b[j] > 0 for j < size8 (a multiple of 8), eight at a time: the
// ordered compare (false for NaN, as b[j] > 0), its 8 mask bits spread to
// 8 bytes; returns the OR of the old and new bytes' differences.
__attribute__((target("avx512f,bmi2"))) inline std::uint64_t update_masks_avx512(const Scalar* b, std::uint8_t* mk,
                                                                                 Index size8) {
    std::uint64_t changed = 0;
    const __m512d zero = _mm512_setzero_pd();
    for (Index j = 0; j < size8; j += 8) {
        const unsigned gt = _mm512_cmp_pd_mask(_mm512_loadu_pd(b + j), zero, _CMP_GT_OQ);
        const std::uint64_t now = _pdep_u64(gt, 0x0101010101010101ULL);
        std::uint64_t old;
        std::memcpy(&old, mk + j, 8);
        changed |= old ^ now;
        std::memcpy(mk + j, &now, 8);
    }
    return changed;
}

// update_masks_avx512 on AVX: the 8 compare bits of two vectors (movemask) spread to bytes by
// a table of the 256 byte patterns.
struct MaskBytes {
    std::uint64_t of[256];
    constexpr MaskBytes() : of() {
        for (unsigned v = 0; v < 256; ++v)
            for (unsigned b = 0; b < 8; ++b)
                if ((v >> b) & 1u) of[v] |= std::uint64_t(1) << (8 * b);
    }
};
inline constexpr MaskBytes kMaskBytes{};

__attribute__((target("avx"))) inline std::uint64_t update_masks_avx(const Scalar* b, std::uint8_t* mk, Index size8) {
    std::uint64_t changed = 0;
    const __m256d zero = _mm256_setzero_pd();
    for (Index j = 0; j < size8; j += 8) {
        const unsigned lo =
            static_cast<unsigned>(_mm256_movemask_pd(_mm256_cmp_pd(_mm256_loadu_pd(b + j), zero, _CMP_GT_OQ)));
        const unsigned hi =
            static_cast<unsigned>(_mm256_movemask_pd(_mm256_cmp_pd(_mm256_loadu_pd(b + j + 4), zero, _CMP_GT_OQ)));
        const std::uint64_t now = kMaskBytes.of[lo | (hi << 4)];
        std::uint64_t old;
        std::memcpy(&old, mk + j, 8);
        changed |= old ^ now;
        std::memcpy(mk + j, &now, 8);
    }
    return changed;
}
#endif
}  // namespace detail

/// Follows the activation masks D(beta_k) = 1[beta_k > 0] and remembers the
/// last step at which any of them changed: every mask is constant from
/// stable_step() on (relative to the steps that were run).
class PatternTracker {
public:
    /// Starts tracking at `step` with the masks of `beta` (m x n).
    void reset(const RowMatrix& beta, std::int64_t step) {
        mask_.resize(beta.rows(), beta.cols());
        for (Index k = 0; k < beta.rows(); ++k)
            for (Index i = 0; i < beta.cols(); ++i) mask_(k, i) = beta(k, i) > 0;
        last_change_ = step;
    }
    /// Records the masks of `beta` after step `step`. Allocation-free.
    void update(const RowMatrix& beta, std::int64_t step) {
        if (update_rows(beta, 0, beta.rows())) last_change_ = step;
    }

    /// Records the masks of rows k0 <= k < k1 of `beta` only; true when one of
    /// them changed (then call mark_changed()). Allocation-free.
    bool update_rows(const RowMatrix& beta, Index k0, Index k1) {
        std::uint8_t changed = 0;
        const Index n = beta.cols();
        const Scalar* b = beta.data() + k0 * n;
        std::uint8_t* mk = mask_.data() + k0 * n;
        Index j = 0;
        const Index size = (k1 - k0) * n;
#if defined(RELUCORE_SIMD_DISPATCH)
        const int level = simd::step_level();
        if (level >= simd::kAvx512 && simd::has_avx512f_bmi2()) {
            j = size / 8 * 8;
            changed = detail::update_masks_avx512(b, mk, j) != 0 ? 1 : 0;
        } else if (level >= simd::kAvx) {
            j = size / 8 * 8;
            changed = detail::update_masks_avx(b, mk, j) != 0 ? 1 : 0;
        }
#endif
        for (; j < size; ++j) {
            const std::uint8_t now = b[j] > 0;
            changed |= static_cast<std::uint8_t>(now ^ mk[j]);
            mk[j] = now;
        }
        return changed != 0;
    }

    /// Notes that a mask changed at step `step` (after update_rows()).
    void mark_changed(std::int64_t step) { last_change_ = step; }

    /// Restores a saved tracker (checkpointing): `mask` as returned by mask(),
    /// `stable_step` as returned by stable_step().
    void restore(const Mask& mask, std::int64_t stable_step) {
        mask_ = mask;
        last_change_ = stable_step;
    }
    /// Current masks, m x n, entries 0 or 1.
    const Mask& mask() const { return mask_; }
    /// Last step at which a mask changed (the step count of reset() if none did).
    std::int64_t stable_step() const { return last_change_; }

private:
    Mask mask_;
    std::int64_t last_change_ = 0;
};

namespace detail {
/// Whether an engine has outer weights (outer(): the m values of c a_k).
template <class Engine, class = void>
struct has_outer : std::false_type {};
template <class Engine>
struct has_outer<Engine, std::void_t<decltype(std::declval<const Engine&>().outer())>> : std::true_type {};
}  // namespace detail

/// Caller-owned history buffers, each a Span with its size (any may be empty:
/// that quantity is not kept). Slot r holds the state of step steps[r];
/// beta/alpha/mask are m x n row-major blocks, so `beta` must hold
/// capacity * m * n doubles; `outer` holds m outer weights (c a_k) per slot,
/// for engines that have them. Records beyond `capacity` are dropped (never
/// written); a capacity larger than a buffer holds is refused at the first
/// record (std::invalid_argument naming the buffer). Size the buffers with
/// history_capacity(), or set `grow` (see GrowingHistory) to enlarge them as
/// the run goes.
struct History {
    Span<std::int64_t> steps;
    Span<Scalar> loss;
    Span<Scalar> beta;
    Span<Scalar> alpha;
    Span<std::uint8_t> mask;
    Span<Scalar> outer;
    std::int64_t capacity = 0;
    std::int64_t count = 0;
    /// Called with `grow_context` when a record finds every slot used; it may
    /// enlarge the buffers (updating the spans and capacity). Null: drop.
    void (*grow)(History&, void*) = nullptr;
    void* grow_context = nullptr;

    /// Writes the engine's current state into slot `count` (growing the
    /// buffers first if they are full and `grow` is set; dropped if still full).
    /// @throws std::invalid_argument if a buffer holds fewer than capacity records
    template <class Engine>
    void record(const Engine& e, std::int64_t step) {
        if (count >= capacity && grow) grow(*this, grow_context);
        if (count >= capacity) return;
        const Index mn = e.beta().size();
        Index m_outer = 0;
        if constexpr (detail::has_outer<Engine>::value) m_outer = e.outer().size();
        require_room(mn, m_outer);
        if (steps) steps.data[count] = step;
        if (loss) loss.data[count] = e.loss();
        if (beta) MatrixMap(beta.data + count * mn, e.beta().rows(), e.beta().cols()) = e.beta();
        if (alpha) MatrixMap(alpha.data + count * mn, e.alpha().rows(), e.alpha().cols()) = e.alpha();
        if (mask) MaskMap(mask.data + count * mn, e.beta().rows(), e.beta().cols()) = e.pattern().mask();
        if constexpr (detail::has_outer<Engine>::value) {
            if (outer) {
                const auto& o = e.outer();
                std::copy(o.data(), o.data() + o.size(), outer.data + count * static_cast<std::int64_t>(o.size()));
            }
        }
        ++count;
    }

    /// @throws std::invalid_argument unless every buffer given holds `capacity` records of
    /// one entry (steps, loss), mn entries (beta, alpha, mask) or m_outer entries (outer)
    void require_room(Index mn, Index m_outer) const {
        const auto room = [this](const char* name, auto& span, Index per) {
            if (span) detail::require_room(name, span.size, capacity * per);
        };
        room("history.steps", steps, 1);
        room("history.loss", loss, 1);
        room("history.beta", beta, mn);
        room("history.alpha", alpha, mn);
        room("history.mask", mask, mn);
        room("history.outer", outer, m_outer);
    }
};

/// Number of history slots a run of max_steps steps (from step 0) may fill:
/// every record_every-th step plus the final state.
inline std::int64_t history_capacity(std::int64_t max_steps, std::int64_t record_every) {
    if (record_every <= 0) return 0;
    return max_steps / record_every + 2;
}

/// History storage that grows with the run instead of being sized for the
/// whole step budget: it starts with `initial` slots and doubles (up to
/// `limit`, the most the run can fill: history_capacity()) when a record
/// finds it full, so memory follows the steps actually run and the loop
/// allocates only at those chunk boundaries. A failed allocation keeps the
/// records so far, drops the rest and sets failed().
class GrowingHistory {
public:
    /// @param mn      m * n, the size of one beta/alpha/mask record
    /// @param limit   most slots ever needed; @param initial  slots to start with
    /// @param keep_states keep beta, alpha and mask (false: steps and loss only)
    /// @param m_outer  outer weights kept per record (0: none)
    GrowingHistory(Index mn, std::int64_t limit, std::int64_t initial, bool keep_states = true, Index m_outer = 0)
        : mn_(mn), m_outer_(m_outer), limit_(limit), keep_states_(keep_states) {
        history_.grow = &GrowingHistory::grow_hook;
        history_.grow_context = this;
        resize(std::min(std::max<std::int64_t>(initial, 1), std::max<std::int64_t>(limit, 0)));
    }
    GrowingHistory(const GrowingHistory&) = delete;
    GrowingHistory& operator=(const GrowingHistory&) = delete;

    /// The view run_to_stop() writes through (valid while this object lives).
    History& history() { return history_; }
    std::int64_t count() const { return history_.count; }
    bool failed() const { return failed_; }
    const std::vector<std::int64_t>& steps() const { return steps_; }
    const std::vector<Scalar>& loss() const { return loss_; }
    const std::vector<Scalar>& beta() const { return beta_; }
    const std::vector<Scalar>& alpha() const { return alpha_; }
    const std::vector<std::uint8_t>& mask() const { return mask_; }
    const std::vector<Scalar>& outer() const { return outer_; }

private:
    static void grow_hook(History& h, void* self) {
        auto* g = static_cast<GrowingHistory*>(self);
        if (g->failed_ || h.capacity >= g->limit_) return;
        try {
            g->resize(std::min(g->limit_, std::max<std::int64_t>(2 * h.capacity, 1)));
        } catch (const std::bad_alloc&) {
            g->failed_ = true;
        }
    }
    void resize(std::int64_t slots) {
        const auto r = static_cast<std::size_t>(slots);
        const auto block = r * static_cast<std::size_t>(mn_);
        steps_.resize(r);
        loss_.resize(r);
        if (keep_states_) {
            beta_.resize(block);
            alpha_.resize(block);
            mask_.resize(block);
        }
        history_.steps = steps_;
        history_.loss = loss_;
        history_.beta = keep_states_ ? Span<Scalar>(beta_) : Span<Scalar>();
        history_.alpha = keep_states_ ? Span<Scalar>(alpha_) : Span<Scalar>();
        history_.mask = keep_states_ ? Span<std::uint8_t>(mask_) : Span<std::uint8_t>();
        outer_.resize(r * static_cast<std::size_t>(m_outer_));
        history_.outer = m_outer_ > 0 ? Span<Scalar>(outer_) : Span<Scalar>();
        history_.capacity = slots;
    }

    Index mn_;
    Index m_outer_;
    std::int64_t limit_;
    bool keep_states_;
    bool failed_ = false;
    History history_;
    std::vector<std::int64_t> steps_;
    std::vector<Scalar> loss_, beta_, alpha_, outer_;
    std::vector<std::uint8_t> mask_;
};

namespace detail {

/// A callback that never stops the run.
struct NoCallback {
    template <class Engine>
    bool operator()(const Engine&) const {
        return false;
    }
};

/// Calls cb(engine); a void callback never stops, a bool one stops on true.
template <class Callback, class Engine>
bool invoke_callback(Callback& cb, Engine& engine) {
    if constexpr (std::is_void_v<std::invoke_result_t<Callback&, Engine&>>) {
        cb(engine);
        return false;
    } else {
        return static_cast<bool>(cb(engine));
    }
}

/// Re-evaluates the engine if a callback left it stale (engines without an
/// evaluated() query are always re-evaluated; evaluate() is pure).
template <class Engine>
auto ensure_evaluated(Engine& e, int) -> decltype(e.evaluated(), void()) {
    if (!e.evaluated()) e.evaluate();
}
template <class Engine>
void ensure_evaluated(Engine& e, long) {
    e.evaluate();
}

/// Whether the engine's gradient norm, below tol, is provably so (engines without
/// grad_norm_provably_below() compute it from W: always); `bound` as that function sets it.
template <class Engine>
auto provably_below(const Engine& e, Scalar tol, Scalar* bound, int)
    -> decltype(e.grad_norm_provably_below(tol, bound)) {
    return e.grad_norm_provably_below(tol, bound);
}
template <class Engine>
bool provably_below(const Engine&, Scalar, Scalar*, long) {
    return true;
}

/// One step and the evaluation of the new state: the engine's fused
/// advance() when it has one, else apply() and evaluate().
template <class Engine>
auto advance(Engine& e, int) -> decltype(e.advance(), void()) {
    e.advance();
}
template <class Engine>
void advance(Engine& e, long) {
    e.apply();
    e.evaluate();
}

}  // namespace detail

/// Drives an engine until a stopping rule fires, calling `callback` every
/// `every` steps.
///
/// The loop, for the state at step t (the engine's absolute step count):
///   1. the state is evaluated (loss, gradient, pending update);
///   2. it is recorded in `history` if t is a multiple of s.record_every;
///   3. if `every > 0`, t > the starting step and t is a multiple of `every`,
///      `callback(engine)` is called; returning `true` ends the run with
///      Status::stopped (a callback returning void never stops it). The
///      callback may change the engine between steps (set_labels, set_eta,
///      settings(), even step()): the run continues from the state it leaves,
///      re-evaluated if needed, and changes to `s` apply to the rest of the run;
///   4. the stopping rules are checked in this order: diverged, cancelled
///      (the flag s.cancel is set), converged (grad_norm < s.tol, provably so
///      unless s.converge_on_running_norm: else the run steps on, see
///      RunSummary::unresolved_bound), max_steps
///      (t >= s.max_steps); so a cancelled run reports cancelled even when
///      it had also converged or used up its budget;
///   5. otherwise one GD step is applied and the loop continues.
/// A converged run whose final state leaves examples unfit (example_unfit():
/// no neuron active on them) is reported as Status::stalled instead, with
/// their count in n_unfit: one decision for every caller of this loop.
/// The returned loss and gradient norm therefore belong to the returned state,
/// and the final state is always recorded (when recording is on).
/// The divergence threshold is s.divergence_factor * max(loss at the first
/// state, 1), so it is relative to the start of this call.
///
/// @param engine   an engine with the interface described at the top of this file
/// @param s        the stopping rules (usually the engine's own settings)
/// @param history  optional buffers for recorded states (may be null)
/// @param every    call the callback every `every` steps (<= 0: never)
/// @param callback `bool(Engine&)` or `void(Engine&)` (or taking `const Engine&`);
///                 it runs on the calling thread, between two steps.
template <class Engine, class Callback>
RunSummary run_to_stop(Engine& engine, const GDSettings& s, History* history, std::int64_t every, Callback&& callback) {
    RunSummary out;
    engine.evaluate();
    const Scalar threshold = s.divergence_factor * std::max<Scalar>(engine.loss(), 1);
    const std::int64_t start = engine.steps_taken();
    std::int64_t last_recorded = -1;
    for (;;) {
        out.unresolved_bound = std::numeric_limits<Scalar>::quiet_NaN();  // of this state only
        std::int64_t t = engine.steps_taken();
        if (history && s.record_every > 0 && t % s.record_every == 0) {
            history->record(engine, t);
            last_recorded = t;
        }
        if (every > 0 && t > start && t % every == 0) {
            if (detail::invoke_callback(callback, engine)) {
                out.status = Status::stopped;
                break;
            }
            detail::ensure_evaluated(engine, 0);
            t = engine.steps_taken();
        }
        const Scalar loss = engine.loss();
        if (!std::isfinite(loss) || loss > threshold || !std::isfinite(engine.grad_norm())) {
            out.status = Status::diverged;
            break;
        }
        // A raised cancel flag wins over converged and max_steps: a cancelled
        // run says so even when it was also done.
        if (s.cancel && s.cancel->load(std::memory_order_relaxed)) {
            out.status = Status::cancelled;
            break;
        }
        if (engine.grad_norm() < s.tol) {
            Scalar bound = 0;
            if (s.converge_on_running_norm || detail::provably_below(engine, s.tol, &bound, 0)) {
                out.status = Status::converged;
                break;
            }
            out.unresolved_bound = bound;  // below tol in dual form, not provably: step on
        }
        if (t >= s.max_steps) {
            out.status = Status::max_steps;
            break;
        }
        detail::advance(engine, 0);
    }
    if (history && s.record_every > 0 && last_recorded != engine.steps_taken())
        history->record(engine, engine.steps_taken());
    out.nit = engine.steps_taken();
    out.loss = engine.loss();
    out.grad_norm = engine.grad_norm();
    out.pattern_stable_step = engine.pattern().stable_step();
    out.n_records = history ? history->count : 0;
    if (out.status == Status::converged) {
        out.n_unfit = count_unfit(engine);
        out.status = stalled_if_unfit(out.status, out.n_unfit > 0);
    }
    return out;
}

/// Drives an engine until a stopping rule of `s` fires (no callback); see the
/// overload above for the exact loop.
template <class Engine>
RunSummary run_to_stop(Engine& engine, const GDSettings& s, History* history = nullptr) {
    return run_to_stop(engine, s, history, 0, detail::NoCallback{});
}

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
