/// @file gd/engine_base.hpp
/// State and controls shared by the GD engines (DualGD, DenseGD).
///
/// Both engines hold the same primal-dual state (alpha, beta, the labels, the
/// outer weights, the pattern tracker, the loss and gradient norm of the
/// evaluated state) and offer the same controls (step, run, set_labels,
/// set_eta, ...). They differ only in how a step is computed: the derived
/// class provides evaluate() and apply() (CRTP, so the hot loop has no
/// virtual calls).
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/checks.hpp"
#include "relucore/core/types.hpp"
#include "relucore/gd/model.hpp"
#include "relucore/gd/run.hpp"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

namespace detail {

template <class D>
std::true_type is_plain_object(const Eigen::PlainObjectBase<D>*);
std::false_type is_plain_object(...);

template <class T>
struct is_const_ref : std::false_type {};
template <class P, int Options, class Stride>
struct is_const_ref<Eigen::Ref<const P, Options, Stride>> : std::true_type {};

/// What an engine knows about its own use: whether it was moved from (its
/// state then is empty and any use throws std::logic_error), and which thread
/// is inside one of its step(k)/run() calls. One compare-and-swap per call,
/// never per GD step; the thread inside may re-enter (a run's callback may call
/// step()), another thread is refused with std::logic_error. A copy is a new,
/// idle engine.
class EngineGuard {
public:
    EngineGuard() = default;
    EngineGuard(const EngineGuard& other) noexcept : moved_from_(other.moved_from_) {}
    EngineGuard(EngineGuard&& other) noexcept : moved_from_(other.moved_from_) { other.moved_from_ = true; }
    EngineGuard& operator=(const EngineGuard&) = delete;
    EngineGuard& operator=(EngineGuard&&) = delete;
    ~EngineGuard() = default;

    /// @throws std::logic_error if the engine was moved from
    void require_usable() const {
        if (moved_from_)
            throw std::logic_error(
                "relucore: this engine was moved from; its state is gone (use the engine it was moved into)");
    }

    /// Holds the engine for one step(k)/run() call on this thread (RAII).
    class Hold {
    public:
        explicit Hold(EngineGuard& guard) : guard_(guard) {
            guard.require_usable();
            const std::thread::id me = std::this_thread::get_id();
            std::thread::id idle{};
            if (guard.owner_.compare_exchange_strong(idle, me, std::memory_order_acquire)) {
                owns_ = true;
            } else if (idle != me) {
                throw std::logic_error(
                    "relucore: two threads are stepping the same engine at once (an engine is not thread-safe: "
                    "give each thread its own engine, a copy if they share a start)");
            }
        }
        ~Hold() {
            if (owns_) guard_.owner_.store(std::thread::id{}, std::memory_order_release);
        }
        Hold(const Hold&) = delete;
        Hold& operator=(const Hold&) = delete;

    private:
        EngineGuard& guard_;
        bool owns_ = false;
    };

private:
    bool moved_from_ = false;
    std::atomic<std::thread::id> owner_{};
};

}  // namespace detail

/// True when an argument of type T (as deduced by a forwarding reference)
/// is an rvalue whose storage dies with the call: an Eigen matrix or array
/// (RowMatrix&&, a fixed-size temporary, gram_matrix(X)) or a
/// Ref<const ...>, which may hold a private copy of what it was made from.
/// Engines that keep a view of an argument refuse these at compile time; Maps
/// and Blocks view memory owned elsewhere and stay accepted.
template <class T>
inline constexpr bool dies_with_call =
    !std::is_lvalue_reference_v<T> &&
    (decltype(detail::is_plain_object(std::declval<std::remove_cv_t<std::remove_reference_t<T>>*>()))::value ||
     detail::is_const_ref<std::remove_cv_t<std::remove_reference_t<T>>>::value);

/// The tag of the engines' non-owning constructors, an explicit opt-in:
/// `DualGD gd(relucore::borrow, K, y, start, settings)` keeps a view of K (and
/// `DenseGD(relucore::borrow, X, ...)` of X) instead of a copy. Lifetime rule:
/// the viewed matrix must outlive the engine and every copy of it, and stay
/// unchanged. Arguments that would leave the view dangling (temporaries,
/// rvalues owning their storage, anything not row-major double storage) are
/// refused at compile time. The constructors without the tag own their data.
struct borrow_t {
    explicit constexpr borrow_t() = default;
};
inline constexpr borrow_t borrow{};

template <class Derived>
class EngineBase {
public:
    /// Takes k plain GD steps (no stopping rule other than the cancel flag of
    /// the settings) and evaluates the final state.
    /// @return the number of steps taken: k, or fewer if cancelled
    /// @throws std::logic_error if the engine was moved from, or another thread is stepping it
    std::int64_t step(std::int64_t k = 1) {
        if (k < 0) throw std::invalid_argument("the number of steps must be >= 0");
        const detail::EngineGuard::Hold hold(guard_);
        std::int64_t taken = 0;
        for (; taken < k; ++taken) {
            if (settings_.cancel && settings_.cancel->load(std::memory_order_relaxed)) break;
            if (!evaluated_) self().evaluate();
            detail::advance(self(), 0);
        }
        if (!evaluated_) self().evaluate();
        return taken;
    }

    /// Runs until a stopping rule of settings() fires (see run_to_stop for the
    /// exact loop); the step budget settings().max_steps counts from step 0.
    /// @throws std::logic_error if the engine was moved from, or another thread is stepping it
    RunSummary run(History* history = nullptr) {
        const detail::EngineGuard::Hold hold(guard_);
        return run_to_stop(self(), settings_, history);
    }

    /// Runs until a stopping rule fires or `callback(Derived&)` returns true;
    /// the callback is called every `every` steps (t a multiple of `every`,
    /// t > the starting step). Returning true ends the run with
    /// Status::stopped; a void callback never stops it. Between two steps the
    /// callback may read the state and change the engine (set_labels,
    /// set_eta, ...): the run goes on from there (see run_to_stop).
    template <class Callback>
    RunSummary run(History* history, std::int64_t every, Callback&& callback) {
        const detail::EngineGuard::Hold hold(guard_);
        return run_to_stop(self(), settings_, history, every, std::forward<Callback>(callback));
    }

    /// Replaces the labels between steps (a simulator moving its targets) and
    /// re-evaluates. @throws std::invalid_argument if y has the wrong size
    void set_labels(const ConstVectorRef& y) {
        guard_.require_usable();
        y_ = checked_labels(y, y_.size());
        evaluated_ = false;
        self().evaluate();
    }

    /// Changes the step size between steps and re-evaluates.
    /// @throws std::invalid_argument unless eta is positive and finite
    void set_eta(Scalar eta) {
        guard_.require_usable();
        if (!(eta > 0) || !std::isfinite(eta)) throw std::invalid_argument("eta must be positive and finite");
        settings_.eta = eta;
        evaluated_ = false;
        self().evaluate();
    }

    /// Sets the flag that stops step() and run() after the current step (not
    /// owned; null clears it). Unlike settings(), keeps the evaluation.
    void set_cancel_flag(const std::atomic<bool>* cancel) { settings_.cancel = cancel; }

    /// Mutable settings (stopping rules, model, eta). Marks the state
    /// un-evaluated, so the next step or run re-evaluates with the new
    /// settings; loss() is stale until then (call evaluate()).
    GDSettings& settings() {
        guard_.require_usable();
        evaluated_ = false;
        size_outer_work();  // the caller may turn train_outer on
        return settings_;
    }
    const GDSettings& settings() const { return settings_; }

    /// @name State (references into the engine: no copies; valid until the
    /// engine is destroyed or moved from, and updated in place by every step).
    /// The accessors returning a reference throw std::logic_error on a
    /// moved-from engine; those returning a number are plain reads.
    ///@{
    const RowMatrix& alpha() const { return usable(alpha_); }     ///< m x n dual coordinates
    const RowMatrix& beta() const { return usable(beta_); }       ///< m x n predictions X w_k
    const Mask& mask() const { return usable(pattern_).mask(); }  ///< m x n activation masks 1[beta > 0]
    const Vector& predictions() const { return usable(h_); }      ///< n network outputs h(X) (evaluated state)
    const Vector& residual() const { return usable(g_); }         ///< n values dLoss/dh (h - y for the square loss)
    const Vector& labels() const { return usable(y_); }           ///< n labels
    const Vector& outer() const { return usable(outer_); }        ///< m outer weights (c a_k: output scale included)
    Scalar loss() const { return loss_; }                         ///< loss of the evaluated state
    Scalar grad_norm() const { return grad_norm_; }               ///< ||grad_W R||_F of the evaluated state
    Scalar eta() const { return settings_.eta; }                  ///< current step size
    std::int64_t steps_taken() const { return steps_; }           ///< GD steps taken so far
    bool evaluated() const { return evaluated_; }                 ///< whether loss() etc. are current
    Index n_neurons() const { return alpha_.rows(); }             ///< m
    Index n_samples() const { return alpha_.cols(); }             ///< n
    const PatternTracker& pattern() const { return usable(pattern_); }
    ///@}

    /// Restores the step count and the pattern tracker of a checkpoint taken
    /// from steps_taken(), mask() and pattern().stable_step(). Use it right
    /// after constructing the engine from the checkpoint's state.
    void restore(std::int64_t steps_taken, const Mask& mask, std::int64_t stable_step) {
        guard_.require_usable();
        if (steps_taken < 0) throw std::invalid_argument("steps_taken must be >= 0");
        if (mask.rows() != beta_.rows() || mask.cols() != beta_.cols())
            throw std::invalid_argument("mask must be m x n");
        if (stable_step < 0 || stable_step > steps_taken)
            throw std::invalid_argument("stable_step must lie in [0, steps_taken]");
        steps_ = steps_taken;
        pattern_.restore(mask, stable_step);
    }

    /// @name Output bias and loss weights (docs/math.md, output bias and example weights)
    /// Both are off after construction: the engines then compute exactly as without them.
    ///@{
    /// Gives the network an output bias b_out, h(x) = b_out + sum_k c a_k phi(w_k^T x), starting
    /// at `b`: trained with settings().train_outer (b_out <- b_out - eta sum_i g_i, its term
    /// sum_i g_i in the gradient norm), fixed otherwise. Re-evaluates.
    /// @throws std::invalid_argument unless b is finite
    void set_output_bias(Scalar b) {
        guard_.require_usable();
        if (!std::isfinite(b)) throw std::invalid_argument("output_bias must be finite");
        has_output_bias_ = true;
        output_bias_ = b;
        evaluated_ = false;
        self().evaluate();
    }
    bool has_output_bias() const { return has_output_bias_; }  ///< whether set_output_bias() was called
    Scalar output_bias() const { return output_bias_; }        ///< b_out (0 without an output bias)

    /// Weighs example i by w_i in the loss and its gradient (weighted_loss_from_predictions() of
    /// gd/model.hpp); a zero weight takes the example out. Re-evaluates.
    /// @throws std::invalid_argument unless w has n finite, non-negative entries
    void set_loss_weights(const ConstVectorRef& w) {
        guard_.require_usable();
        detail::require_size("loss_weights", w.size(), y_.size(), "n");
        detail::require_finite("loss_weights", w);
        if ((w.array() < 0).any()) throw std::invalid_argument("loss_weights must be >= 0");
        loss_weights_ = w;
        evaluated_ = false;
        self().evaluate();
    }
    /// The loss weights of set_loss_weights() (empty: every weight 1).
    const Vector& loss_weights() const { return usable(loss_weights_); }
    /// Whether neither an output bias nor loss weights are set (the engines' fast paths need it).
    bool plain_loss() const { return !has_output_bias_ && loss_weights_.size() == 0; }
    ///@}

    /// Overrides the step counter (the pattern tracker is left alone; prefer restore()).
    void set_steps_taken(std::int64_t t) {
        guard_.require_usable();
        steps_ = t;
    }
    PatternTracker& pattern() {
        guard_.require_usable();
        return pattern_;
    }

protected:
    /// Copies the labels, outer weights, starting alpha and beta and the
    /// settings (validated); checks the shapes they share against n, the rows
    /// of the data, and that every value is finite.
    // NOLINTBEGIN(performance-unnecessary-value-param,bugprone-crtp-constructor-accessibility): the
    // engines' constructors keep their signatures until named construction replaces them;
    // protected (not private with a friend) so that each engine derives from it plainly.
    EngineBase(Index n, ConstVectorRef y, ConstVectorRef outer, ConstMatrixRef alpha0, ConstMatrixRef beta0,
               const GDSettings& settings)
        : EngineBase(n, y, Vector(outer), RowMatrix(alpha0), RowMatrix(beta0), settings) {}

    /// The same, taking over the outer weights and the starting alpha and beta
    /// (beta0 is not checked when `check_beta` is false: the engine computes it).
    EngineBase(Index n, ConstVectorRef y, Vector&& outer, RowMatrix&& alpha0, RowMatrix&& beta0,
               const GDSettings& settings, bool check_beta = true)
        : y_(checked_labels(y, n)),
          outer_(std::move(outer)),
          alpha_(std::move(alpha0)),
          beta_(std::move(beta0)),
          settings_(settings) {
        const Index m = outer_.size();
        if (m < 1) throw std::invalid_argument("start.outer must have at least one entry (one per neuron), got 0");
        detail::require_finite("start.outer", outer_);
        detail::require_shape("start.alpha", alpha_.rows(), alpha_.cols(), m, n, "m x n");
        detail::require_finite("start.alpha", alpha_);
        if (check_beta) {
            detail::require_shape("start.beta", beta_.rows(), beta_.cols(), m, n, "m x n");
            detail::require_finite("start.beta", beta_);
        }
        settings_.validate();
        h_.resize(n);
        g_.resize(n);
        d_alpha_.resize(m, n);
        if (settings_.train_outer) size_outer_work();
    }
    // NOLINTEND(performance-unnecessary-value-param,bugprone-crtp-constructor-accessibility)

    /// y once checked: n finite labels (one per row of the data).
    /// @throws std::invalid_argument "y must have n = 12 entries, got 11", "y must be finite, ..."
    static const ConstVectorRef& checked_labels(const ConstVectorRef& y, Index n) {
        detail::require_size("y", y.size(), n, "n");
        detail::require_finite("y", y);
        // Called in mem-initializers with the constructor's own argument, which outlives the call.
        return y;  // NOLINT(bugprone-return-const-ref-from-parameter)
    }

    /// The last step of a derived constructor, once beta holds the starting
    /// predictions: starts the pattern tracker at step 0 and evaluates.
    void start() {
        pattern_.reset(beta_, 0);
        self().evaluate();
    }

    Derived& self() { return static_cast<Derived&>(*this); }

    /// x, once the engine is known not to be moved from. @throws std::logic_error otherwise
    template <class T>
    const T& usable(const T& x) const {
        guard_.require_usable();
        return x;  // NOLINT(bugprone-return-const-ref-from-parameter): x is always one of this engine's members
    }

    /// Fills h_ (predictions) and g_ (dLoss/dh) of the current beta_ and returns the loss:
    /// loss_and_residual() of gd/model.hpp, with the output bias and the loss weights when set.
    Scalar evaluate_loss() {
        const ModelSpec& spec = settings_.model;
        if (plain_loss()) return loss_and_residual(beta_, outer_, y_, spec, h_, g_);
        h_.setConstant(output_bias_);
        add_predictions(beta_, outer_, spec, h_);
        return weighted_loss_from_predictions(h_, y_, spec, loss_weights_.size() > 0 ? loss_weights_.data() : nullptr,
                                              g_);
    }

    /// With settings().train_outer, the outer step of the evaluated state,
    /// d_outer_k = -eta c^2 sum_i phi(beta_ki) g_i (outer_ holds c a_k), and
    /// the gradient norm grown to the norm over (W, a):
    /// sqrt(||grad_W R||^2 + sum_k (c sum_i phi(beta_ki) g_i)^2). Call it
    /// after h_, g_ and the inner gradient norm are set. Allocation-free.
    void evaluate_outer() {
        if (!settings_.train_outer) return;
        outer_terms(0, beta_.rows());
        grad_norm_ = std::hypot(grad_norm_, std::sqrt(outer_square_sum()));
        if (!has_output_bias_) return;
        // The output bias's gradient sum_i g_i (in increasing i) and its step.
        Scalar s = 0;
        for (Index i = 0; i < g_.size(); ++i) s += g_[i];
        d_output_bias_ = -settings_.eta * s;
        grad_norm_ = std::hypot(grad_norm_, s);
    }

    /// The outer steps d_outer_k of evaluate_outer() for the neurons k0 <= k < k1,
    /// and their terms (c sum_i phi(beta_ki) g_i)^2 of the gradient norm (kept
    /// for outer_square_sum(): ranges may be taken in any order).
    void outer_terms(Index k0, Index k1) {
        const Scalar c = settings_.output_scale;
        const Scalar rate = -settings_.eta * c * c;
        Scalar* d_outer = outer_work_.data();
        Scalar* outer_sq = d_outer + beta_.rows();
        // The sums s_k (gd/model.hpp, shared with meanfield.train's outer step) into outer_sq, then the terms.
        outer_gradient_sums(beta_.data(), beta_.cols(), k0, k1, g_.data(), settings_.model, outer_sq);
        for (Index k = k0; k < k1; ++k) {
            const Scalar s = outer_sq[k];
            d_outer[k] = rate * s;
            outer_sq[k] = (c * s) * (c * s);
        }
    }

    /// The sum of the terms of outer_terms(), in increasing k.
    Scalar outer_square_sum() const {
        const Index m = beta_.rows();
        const Scalar* outer_sq = outer_work_.data() + m;
        Scalar sq = 0;
        for (Index k = 0; k < m; ++k) sq += outer_sq[k];
        return sq;
    }

    /// With settings().train_outer, adds the outer step of evaluate_outer().
    void apply_outer() {
        if (!settings_.train_outer) return;
        outer_ += d_outer();
        if (has_output_bias_) output_bias_ += d_output_bias_;
    }

    /// Sizes the buffer of outer_terms(), wherever train_outer may be on (construction with it, the
    /// mutable settings()): an engine that never trains the outer layer does not allocate it.
    void size_outer_work() {
        if (outer_work_.size() == 0) outer_work_ = Vector::Zero(2 * beta_.rows());
    }

    /// The pending outer step of outer_terms() (m entries).
    Eigen::VectorBlock<Vector> d_outer() { return outer_work_.head(beta_.rows()); }

    Vector y_;
    Vector outer_;
    RowMatrix alpha_;
    RowMatrix beta_;
    GDSettings settings_;
    Vector h_, g_;
    RowMatrix d_alpha_;
    // 2m: the pending outer step d_outer(), then its terms of the gradient norm; sized by
    // size_outer_work() (empty while train_outer is off)
    Vector outer_work_;
    Vector loss_weights_;  // empty: every weight 1
    Scalar output_bias_ = 0;
    Scalar d_output_bias_ = 0;  // the pending step of a trained output bias
    bool has_output_bias_ = false;
    PatternTracker pattern_;
    Scalar loss_ = 0;
    Scalar grad_norm_ = 0;
    std::int64_t steps_ = 0;
    bool evaluated_ = false;
    detail::EngineGuard guard_;
};

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
