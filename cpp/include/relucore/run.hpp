// What every GD engine shares: the settings of a run, its stopping rules,
// the activation-pattern tracker and the history recorder, and the loop that
// drives any engine to a stopping rule.
//
// An engine (DualGD, DenseGD) provides
//   void evaluate();           loss, gradient norm and update at the current state
//   void apply();              take the step computed by evaluate()
//   Scalar loss(), grad_norm(); long long steps_taken();
//   beta(), alpha()            m x n, the current primal and dual coordinates
//   const PatternTracker& pattern();
#pragma once

#include "relucore/model.hpp"
#include "relucore/types.hpp"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace relucore {

struct GDSettings {
    Scalar eta = 0;                // step size, > 0
    std::int64_t max_steps = 0;    // number of GD steps at most
    Scalar tol = 0;                // stop once ||grad_W R||_F < tol (0: never stop early)
    std::int64_t record_every = 0; // keep every k-th state in the history (0: none)
    // The run is declared diverged when the loss is not finite or exceeds
    // divergence_factor * max(initial loss, 1).
    Scalar divergence_factor = 1e12;
    ModelSpec model{};
    // Set to true by another thread to stop the run after the current step.
    const std::atomic<bool>* cancel = nullptr;

    void validate() const {
        if (!(eta > 0) || !std::isfinite(eta)) throw std::invalid_argument("eta must be positive and finite");
        if (max_steps < 0) throw std::invalid_argument("max_steps must be >= 0");
        if (!(tol >= 0) || !std::isfinite(tol)) throw std::invalid_argument("tol must be >= 0 and finite");
        if (record_every < 0) throw std::invalid_argument("record_every must be >= 0");
        if (!(divergence_factor > 1)) throw std::invalid_argument("divergence_factor must be > 1");
        model.validate();
    }
};

enum class Status : int {
    converged = 0,  // gradient norm fell below tol
    max_steps = 1,  // step budget used up first
    diverged = 2,   // loss became non-finite or exploded
    cancelled = 3,  // the cancel flag was raised
};

struct RunSummary {
    Status status = Status::max_steps;
    std::int64_t nit = 0;                  // GD steps taken
    Scalar loss = 0;                       // loss of the final state
    Scalar grad_norm = 0;                  // ||grad_W R||_F at the final state
    std::int64_t pattern_stable_step = 0;  // first step after which no mask changed
    std::int64_t n_records = 0;            // states written to the history
};

// Follows the activation masks D(beta_k) and remembers the last step at which
// any of them changed: after the run, every mask is constant from
// stable_step() on (relative to the steps that were run).
class PatternTracker {
public:
    void reset(const RowMatrix& beta, std::int64_t step) {
        mask_.resize(beta.rows(), beta.cols());
        for (Index k = 0; k < beta.rows(); ++k)
            for (Index i = 0; i < beta.cols(); ++i) mask_(k, i) = beta(k, i) > 0;
        last_change_ = step;
    }
    void update(const RowMatrix& beta, std::int64_t step) {
        std::uint8_t changed = 0;
        const Scalar* b = beta.data();
        std::uint8_t* mk = mask_.data();
        for (Index j = 0, size = beta.size(); j < size; ++j) {
            const std::uint8_t now = b[j] > 0;
            changed |= static_cast<std::uint8_t>(now ^ mk[j]);
            mk[j] = now;
        }
        if (changed) last_change_ = step;
    }
    const Mask& mask() const { return mask_; }
    std::int64_t stable_step() const { return last_change_; }

private:
    Mask mask_;
    std::int64_t last_change_ = 0;
};

// Caller-owned history buffers (any pointer may be null: that quantity is not
// kept). Slot r holds the state of step steps[r]; beta/alpha/mask are m x n
// row-major blocks.
struct History {
    std::int64_t* steps = nullptr;
    Scalar* loss = nullptr;
    Scalar* beta = nullptr;
    Scalar* alpha = nullptr;
    std::uint8_t* mask = nullptr;
    std::int64_t capacity = 0;
    std::int64_t count = 0;

    template <class Engine>
    void record(const Engine& e, std::int64_t step) {
        if (count >= capacity) return;
        const Index mn = e.beta().size();
        if (steps) steps[count] = step;
        if (loss) loss[count] = e.loss();
        if (beta) MatrixMap(beta + count * mn, e.beta().rows(), e.beta().cols()) = e.beta();
        if (alpha) MatrixMap(alpha + count * mn, e.alpha().rows(), e.alpha().cols()) = e.alpha();
        if (mask) MaskMap(mask + count * mn, e.beta().rows(), e.beta().cols()) = e.pattern().mask();
        ++count;
    }
};

// Number of history slots a run of max_steps steps may fill: every
// record_every-th step plus the final state.
inline std::int64_t history_capacity(std::int64_t max_steps, std::int64_t record_every) {
    if (record_every <= 0) return 0;
    return max_steps / record_every + 2;
}

// Drives an engine until a stopping rule fires. The state at step t is
// evaluated, possibly recorded, checked, and only then stepped, so the
// returned loss and gradient norm belong to the returned state.
template <class Engine>
RunSummary run_to_stop(Engine& engine, const GDSettings& s, History* history = nullptr) {
    RunSummary out;
    engine.evaluate();
    const Scalar threshold = s.divergence_factor * std::max<Scalar>(engine.loss(), 1);
    std::int64_t last_recorded = -1;
    for (;;) {
        const std::int64_t t = engine.steps_taken();
        if (history && s.record_every > 0 && t % s.record_every == 0) {
            history->record(engine, t);
            last_recorded = t;
        }
        const Scalar loss = engine.loss();
        if (!std::isfinite(loss) || loss > threshold || !std::isfinite(engine.grad_norm())) {
            out.status = Status::diverged;
            break;
        }
        if (engine.grad_norm() < s.tol) {
            out.status = Status::converged;
            break;
        }
        if (t >= s.max_steps) {
            out.status = Status::max_steps;
            break;
        }
        if (s.cancel && s.cancel->load(std::memory_order_relaxed)) {
            out.status = Status::cancelled;
            break;
        }
        engine.apply();
        engine.evaluate();
    }
    if (history && s.record_every > 0 && last_recorded != engine.steps_taken())
        history->record(engine, engine.steps_taken());
    out.nit = engine.steps_taken();
    out.loss = engine.loss();
    out.grad_norm = engine.grad_norm();
    out.pattern_stable_step = engine.pattern().stable_step();
    out.n_records = history ? history->count : 0;
    return out;
}

}  // namespace relucore
