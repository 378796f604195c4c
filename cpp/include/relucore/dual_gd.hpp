/// @file dual_gd.hpp
/// The primal-dual gradient-descent engine (SPEC section 1).
///
/// Gradient descent on R(W) = loss(h(X), y) with h(x) = sum_k a_k phi(w_k^T x)
/// moves every w_k inside the row space of X, so the whole run can be tracked in
/// R^n per neuron:
///   - alpha_k: coefficients of w_k - w_k^perp in the data span (w_k = w_k^perp + X^T alpha_k);
///   - beta_k = X w_k = K alpha_k + X w_k^perp (predictions of neuron k);
/// and one step is
///   delta_alpha_k = -eta a_k phi'(beta_k) * g,   g = dLoss/dh,
///   beta_k += K delta_alpha_k,   alpha_k += delta_alpha_k.
/// After K = X X^T is formed a step costs O(m n^2) whatever d is, and the
/// d-dimensional weights are rebuilt only when asked for:
/// W = W0 + (alpha - alpha0) X (see weights_from_dual()).
///
/// Typical use in a simulator:
/// @code
///   relucore::GDSettings s;
///   s.eta = 0.1; s.max_steps = 10000; s.tol = 1e-10;
///   auto gd = relucore::DualGD::positive_init(X, y, outer, /*eps=*/1e-3, s);
///   gd.step(100);                       // 100 plain GD steps
///   double L = gd.loss();               // state read without copies
///   const relucore::RowMatrix& beta = gd.beta();
///   gd.set_labels(y_new);               // the simulator moves the targets
///   relucore::RunSummary r = gd.run(nullptr, 50, [&](relucore::DualGD& e) {
///       if (e.steps_taken() == 500) e.set_eta(0.05);   // every 50 steps: change
///       return e.loss() < 1e-8;                          // or stop (true)
///   });
/// @endcode
#pragma once

#include "relucore/gram.hpp"
#include "relucore/model.hpp"
#include "relucore/run.hpp"
#include "relucore/types.hpp"

#include <Eigen/Cholesky>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <utility>

namespace relucore {

/// Gradient descent on one shallow network in primal-dual coordinates.
///
/// State: alpha, beta (m x n), the step count and the activation-pattern
/// tracker; data: the Gram matrix K (n x n), labels y (n) and outer weights
/// a (m). The engine is always in an "evaluated" state between public calls
/// (loss(), grad_norm(), predictions() belong to the current alpha/beta),
/// except after the non-const settings() accessor, which defers the
/// evaluation to the next step.
///
/// Neither step() nor run() allocates memory (checked by the C++ tests with
/// EIGEN_RUNTIME_NO_MALLOC). The engine is not thread-safe; distinct engines
/// are independent and may run on different threads.
class DualGD {
public:
    /// Builds an engine that views the caller's Gram matrix.
    ///
    /// @param K        n x n Gram matrix X X^T. Only a view is kept: K must
    ///                 outlive the engine, and must be a row-major Scalar matrix
    ///                 or Map (anything else is refused at compile time, since it
    ///                 would bind to a temporary copy that dies with the call).
    /// @param y        n labels (copied)
    /// @param outer    m outer weights a_k: the signs s_k of the paper or values
    ///                 such as +-1/m (copied)
    /// @param alpha0   m x n starting dual coordinates (copied)
    /// @param beta0    m x n starting predictions X w_k^(0) (copied)
    /// @param settings step size, stopping rules and model (copied, validated)
    /// @throws std::invalid_argument on inconsistent shapes or invalid settings
    DualGD(ConstMatrixRef K, ConstVectorRef y, ConstVectorRef outer, ConstMatrixRef alpha0,
           ConstMatrixRef beta0, const GDSettings& settings)
        : K_(K), y_(y), outer_(outer), alpha_(alpha0), beta_(beta0), settings_(settings) {
        setup();
    }

    /// Any K that is not row-major double storage would bind to a temporary
    /// copy that dies with the call: refused at compile time (pass a
    /// RowMatrix, a Map of one, or a shared_ptr to one instead).
    template <class KDerived, class... Rest, std::enable_if_t<!binds_as_view<KDerived>, int> = 0>
    DualGD(const Eigen::MatrixBase<KDerived>& K, Rest&&...) = delete;

    /// Builds an engine that shares ownership of K (for example one K used by
    /// several engines, or a K computed on the fly). Same arguments otherwise.
    DualGD(std::shared_ptr<const RowMatrix> K, ConstVectorRef y, ConstVectorRef outer,
           ConstMatrixRef alpha0, ConstMatrixRef beta0, const GDSettings& settings)
        : K_owner_(require_nonnull(std::move(K))), K_(*K_owner_), y_(y), outer_(outer), alpha_(alpha0),
          beta_(beta0), settings_(settings) {
        setup();
    }

    /// The all-positive initialisation of SPEC section 2 (Theorems 1, 3):
    /// w_k^(0) = X^T K^{-1} eps_k, i.e. beta_k^(0) = eps_k and
    /// alpha_k^(0) = K^{-1} eps_k (Cholesky factorisation of K). The engine
    /// owns K = X X^T; the weights are W = alpha X (w_k^perp = 0).
    ///
    /// @param X   n x d data with full row rank (K positive definite)
    /// @param eps m x n positive entries
    /// @throws std::invalid_argument if K is not positive definite, or on bad
    ///         shapes, non-positive eps or invalid settings
    static DualGD positive_init(ConstMatrixRef X, ConstVectorRef y, ConstVectorRef outer, ConstMatrixRef eps,
                                const GDSettings& settings) {
        const Index n = X.rows();
        if (eps.rows() != outer.size() || eps.cols() != n) throw std::invalid_argument("eps must be m x n");
        if (!(eps.array() > 0).all()) throw std::invalid_argument("eps must be positive");
        auto K = std::make_shared<RowMatrix>(gram_matrix(X));
        Eigen::LLT<RowMatrix> llt(*K);
        if (llt.info() != Eigen::Success)
            throw std::invalid_argument("K = X X^T is not positive definite (X needs full row rank)");
        const RowMatrix alpha0 = llt.solve(eps.transpose()).transpose();
        return DualGD(std::shared_ptr<const RowMatrix>(std::move(K)), y, outer, alpha0, eps, settings);
    }

    /// positive_init() with eps_{k,i} = eps for every neuron and example.
    static DualGD positive_init(ConstMatrixRef X, ConstVectorRef y, ConstVectorRef outer, Scalar eps,
                                const GDSettings& settings) {
        return positive_init(X, y, outer, RowMatrix::Constant(outer.size(), X.rows(), eps), settings);
    }

    /// Computes the loss, the gradient norm and the pending update at the
    /// current state. Pure function of the state: calling it twice changes
    /// nothing. Allocation-free.
    void evaluate() {
        const ModelSpec& spec = settings_.model;
        loss_ = loss_and_residual(beta_, outer_, y_, spec, h_, g_);
        dual_step_coefficients(beta_, outer_, g_, settings_.eta, spec, d_alpha_);
        // d_beta_k = K d_alpha_k, accumulated over the rows of K with a non-zero
        // coefficient: inactive examples cost nothing (K is symmetric). Plain
        // loops over contiguous rows: for the small n typical here they beat
        // Eigen's expression overhead and still vectorise.
        const Index m = d_alpha_.rows();
        const Index n = d_alpha_.cols();
        const Index k_stride = K_.outerStride();
        const Scalar* K = K_.data();
        Scalar sq = 0;
        for (Index k = 0; k < m; ++k) {
            Scalar* db = d_beta_.data() + k * n;
            const Scalar* da = d_alpha_.data() + k * n;
            for (Index j = 0; j < n; ++j) db[j] = 0;
            for (Index i = 0; i < n; ++i) {
                const Scalar c = da[i];
                if (c == 0) continue;
                const Scalar* Ki = K + i * k_stride;
                for (Index j = 0; j < n; ++j) db[j] += c * Ki[j];
            }
            for (Index j = 0; j < n; ++j) sq += db[j] * da[j];
        }
        // ||grad_{w_k}||^2 = u_k^T K u_k with u_k = -d_alpha_k / eta.
        grad_norm_ = std::sqrt(std::max<Scalar>(sq, 0)) / settings_.eta;
        evaluated_ = true;
    }

    /// Takes the step computed by evaluate() (evaluating first if needed) and
    /// updates the step count and the pattern tracker. Leaves the engine
    /// un-evaluated: call evaluate() before reading loss(). Allocation-free.
    void apply() {
        if (!evaluated_) evaluate();
        const Index size = alpha_.size();
        Scalar* a = alpha_.data();
        Scalar* b = beta_.data();
        const Scalar* da = d_alpha_.data();
        const Scalar* db = d_beta_.data();
        for (Index j = 0; j < size; ++j) {
            a[j] += da[j];
            b[j] += db[j];
        }
        ++steps_;
        pattern_.update(beta_, steps_);
        evaluated_ = false;
    }

    /// Takes k plain GD steps (no stopping rule other than the cancel flag of
    /// the settings) and evaluates the final state.
    /// @return the number of steps taken: k, or fewer if cancelled
    std::int64_t step(std::int64_t k = 1) {
        if (k < 0) throw std::invalid_argument("the number of steps must be >= 0");
        std::int64_t taken = 0;
        for (; taken < k; ++taken) {
            if (settings_.cancel && settings_.cancel->load(std::memory_order_relaxed)) break;
            if (!evaluated_) evaluate();
            apply();
        }
        if (!evaluated_) evaluate();
        return taken;
    }

    /// Runs until a stopping rule of settings() fires (see run_to_stop for the
    /// exact loop); the step budget settings().max_steps counts from step 0.
    RunSummary run(History* history = nullptr) { return run_to_stop(*this, settings_, history); }

    /// Runs until a stopping rule fires or `callback(DualGD&)` returns true;
    /// the callback is called every `every` steps (t a multiple of `every`,
    /// t > the starting step). Returning true ends the run with
    /// Status::stopped; a void callback never stops it. Between two steps the
    /// callback may read the state and change the engine (set_labels,
    /// set_eta, ...): the run goes on from there (see run_to_stop).
    template <class Callback>
    RunSummary run(History* history, std::int64_t every, Callback&& callback) {
        return run_to_stop(*this, settings_, history, every, std::forward<Callback>(callback));
    }

    /// Replaces the labels between steps (a simulator moving its targets) and
    /// re-evaluates. @throws std::invalid_argument if y has the wrong size
    void set_labels(ConstVectorRef y) {
        if (y.size() != y_.size()) throw std::invalid_argument("y must have n entries");
        y_ = y;
        evaluated_ = false;
        evaluate();
    }
    /// Changes the step size between steps and re-evaluates.
    /// @throws std::invalid_argument unless eta is positive and finite
    void set_eta(Scalar eta) {
        if (!(eta > 0) || !std::isfinite(eta)) throw std::invalid_argument("eta must be positive and finite");
        settings_.eta = eta;
        evaluated_ = false;
        evaluate();
    }
    /// Sets the flag that stops step() and run() after the current step (not
    /// owned; null clears it). Unlike settings(), keeps the evaluation.
    void set_cancel_flag(const std::atomic<bool>* cancel) { settings_.cancel = cancel; }

    /// Mutable settings (stopping rules, model, eta). Marks the state
    /// un-evaluated, so the next step or run re-evaluates with the new
    /// settings; loss() is stale until then (call evaluate()).
    GDSettings& settings() {
        evaluated_ = false;
        return settings_;
    }
    const GDSettings& settings() const { return settings_; }

    /// Restores the step count and the pattern tracker of a checkpoint taken
    /// from steps_taken(), mask() and pattern().stable_step(). Use it right
    /// after constructing the engine from the checkpoint's alpha and beta.
    void restore(std::int64_t steps_taken, const Mask& mask, std::int64_t stable_step) {
        if (steps_taken < 0) throw std::invalid_argument("steps_taken must be >= 0");
        if (mask.rows() != beta_.rows() || mask.cols() != beta_.cols())
            throw std::invalid_argument("mask must be m x n");
        if (stable_step < 0 || stable_step > steps_taken)
            throw std::invalid_argument("stable_step must lie in [0, steps_taken]");
        steps_ = steps_taken;
        pattern_.restore(mask, stable_step);
    }

    /// @name State (references into the engine: no copies; valid until the
    /// engine is destroyed, and updated in place by every step)
    ///@{
    const RowMatrix& alpha() const { return alpha_; }     ///< m x n dual coordinates
    const RowMatrix& beta() const { return beta_; }       ///< m x n predictions X w_k
    const Mask& mask() const { return pattern_.mask(); }  ///< m x n activation masks 1[beta > 0]
    const Vector& predictions() const { return h_; }      ///< n network outputs h(X) (evaluated state)
    const Vector& residual() const { return g_; }         ///< n values dLoss/dh (h - y for the square loss)
    const Vector& labels() const { return y_; }           ///< n labels
    const Vector& outer() const { return outer_; }        ///< m outer weights
    const ConstMatrixRef& gram() const { return K_; }     ///< n x n Gram matrix
    Scalar loss() const { return loss_; }                 ///< loss of the evaluated state
    Scalar grad_norm() const { return grad_norm_; }       ///< ||grad_W R||_F of the evaluated state
    Scalar eta() const { return settings_.eta; }          ///< current step size
    std::int64_t steps_taken() const { return steps_; }   ///< GD steps taken so far
    bool evaluated() const { return evaluated_; }         ///< whether loss() etc. are current
    Index n_neurons() const { return alpha_.rows(); }     ///< m
    Index n_samples() const { return alpha_.cols(); }     ///< n
    const PatternTracker& pattern() const { return pattern_; }
    ///@}

    /// Overrides the step counter (the pattern tracker is left alone; prefer restore()).
    void set_steps_taken(std::int64_t t) { steps_ = t; }
    PatternTracker& pattern() { return pattern_; }

private:
    static std::shared_ptr<const RowMatrix> require_nonnull(std::shared_ptr<const RowMatrix> K) {
        if (!K) throw std::invalid_argument("K must not be null");
        return K;
    }

    void setup() {
        const Index n = K_.rows();
        const Index m = outer_.size();
        if (K_.cols() != n) throw std::invalid_argument("K must be square");
        if (y_.size() != n) throw std::invalid_argument("y must have n entries");
        if (m < 1) throw std::invalid_argument("at least one neuron is needed");
        if (alpha_.rows() != m || alpha_.cols() != n || beta_.rows() != m || beta_.cols() != n)
            throw std::invalid_argument("alpha0 and beta0 must be m x n");
        settings_.validate();
        h_.resize(n);
        g_.resize(n);
        d_alpha_.resize(m, n);
        d_beta_.resize(m, n);
        pattern_.reset(beta_, 0);
        evaluate();
    }

    std::shared_ptr<const RowMatrix> K_owner_;  // set when the engine shares ownership of K
    ConstMatrixRef K_;
    Vector y_;
    Vector outer_;
    RowMatrix alpha_;
    RowMatrix beta_;
    GDSettings settings_;
    Vector h_, g_;
    RowMatrix d_alpha_, d_beta_;
    PatternTracker pattern_;
    Scalar loss_ = 0;
    Scalar grad_norm_ = 0;
    std::int64_t steps_ = 0;
    bool evaluated_ = false;
};

/// Rebuilds the weights from the dual coordinates: W = W0 + (alpha - alpha0) X
/// (SPEC section 1: w_k = w_k^perp + X^T alpha_k and w_k^perp never changes).
/// W0 (m x d) and alpha0 (m x n) are the starting point the engine was built
/// from; W (m x d) is written. For positive_init(), W0 = alpha0 X, so W = alpha X.
inline void weights_from_dual(ConstMatrixRef X, ConstMatrixRef W0, ConstMatrixRef alpha0, ConstMatrixRef alpha,
                              MatrixRef W) {
    if (W0.rows() != alpha.rows() || W0.cols() != X.cols() || alpha0.rows() != alpha.rows() ||
        alpha0.cols() != X.rows() || alpha.cols() != X.rows() || W.rows() != W0.rows() || W.cols() != W0.cols())
        throw std::invalid_argument("weights_from_dual: inconsistent shapes");
    W = W0;
    W.noalias() += (alpha - alpha0) * X;
}

}  // namespace relucore
