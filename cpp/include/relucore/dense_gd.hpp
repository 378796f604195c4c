/// @file dense_gd.hpp
/// Weight-space gradient descent for the same bias-free model as DualGD:
///   w_k <- w_k - eta a_k X^T (phi'(X w_k) * g).
/// It costs O(m n d) a step and serves as the independent cross-check of the
/// dual engine (and is the faster choice when d is small). It also accumulates
/// alpha (the data-span coefficients of the updates) so both engines report the
/// same quantities. Its interface mirrors DualGD.
#pragma once

#include "relucore/model.hpp"
#include "relucore/run.hpp"
#include "relucore/types.hpp"

#include <cmath>
#include <stdexcept>
#include <utility>

namespace relucore {

/// Gradient descent on one shallow network in weight space.
///
/// State: W (m x d), alpha and beta = W X^T (m x n), the step count and the
/// pattern tracker. Always evaluated between public calls (loss() etc. belong
/// to the current state). Not thread-safe; distinct engines are independent.
class DenseGD {
public:
    /// @param X        n x d data. Only a view is kept: X must outlive the
    ///                 engine and be a row-major Scalar matrix or Map (anything
    ///                 else is refused at compile time).
    /// @param y        n labels (copied)
    /// @param outer    m outer weights (copied)
    /// @param W0       m x d starting weights (copied)
    /// @param alpha0   m x n starting dual coordinates (copied; only accumulated)
    /// @param settings step size, stopping rules and model (copied, validated)
    /// @throws std::invalid_argument on inconsistent shapes or invalid settings
    DenseGD(ConstMatrixRef X, ConstVectorRef y, ConstVectorRef outer, ConstMatrixRef W0,
            ConstMatrixRef alpha0, const GDSettings& settings)
        : X_(X), y_(y), outer_(outer), W_(W0), alpha_(alpha0), settings_(settings) {
        const Index n = X.rows();
        const Index d = X.cols();
        const Index m = outer.size();
        if (y.size() != n) throw std::invalid_argument("y must have n entries");
        if (m < 1) throw std::invalid_argument("at least one neuron is needed");
        if (W0.rows() != m || W0.cols() != d) throw std::invalid_argument("W0 must be m x d");
        if (alpha0.rows() != m || alpha0.cols() != n) throw std::invalid_argument("alpha0 must be m x n");
        settings_.validate();
        beta_.resize(m, n);
        h_.resize(n);
        g_.resize(n);
        d_alpha_.resize(m, n);
        d_W_.resize(m, d);
        compute_beta();
        pattern_.reset(beta_, 0);
        evaluate();
    }

    /// An X that is not row-major double storage would bind to a temporary
    /// copy that dies with the call: refused at compile time.
    template <class XDerived, class... Rest, std::enable_if_t<!binds_as_view<XDerived>, int> = 0>
    DenseGD(const Eigen::MatrixBase<XDerived>& X, Rest&&...) = delete;

    /// Loss, gradient norm and pending update at the current state (pure).
    void evaluate() {
        const ModelSpec& spec = settings_.model;
        loss_ = loss_and_residual(beta_, outer_, y_, spec, h_, g_);
        dual_step_coefficients(beta_, outer_, g_, settings_.eta, spec, d_alpha_);
        for (Index k = 0; k < W_.rows(); ++k)
            d_W_.row(k).noalias() = d_alpha_.row(k) * X_;
        grad_norm_ = d_W_.norm() / settings_.eta;
        evaluated_ = true;
    }

    /// Takes the step computed by evaluate(); leaves the engine un-evaluated.
    void apply() {
        if (!evaluated_) evaluate();
        W_ += d_W_;
        alpha_ += d_alpha_;
        compute_beta();
        ++steps_;
        pattern_.update(beta_, steps_);
        evaluated_ = false;
    }

    /// Takes k plain GD steps (stopping only on the cancel flag) and evaluates
    /// the final state. @return the number of steps taken
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

    /// Runs until a stopping rule of settings() fires (see run_to_stop).
    RunSummary run(History* history = nullptr) { return run_to_stop(*this, settings_, history); }

    /// Runs with `callback(DenseGD&)` every `every` steps; returning true
    /// stops the run (Status::stopped); it may change labels or eta. See run_to_stop.
    template <class Callback>
    RunSummary run(History* history, std::int64_t every, Callback&& callback) {
        return run_to_stop(*this, settings_, history, every, std::forward<Callback>(callback));
    }

    /// Replaces the labels between steps and re-evaluates.
    void set_labels(ConstVectorRef y) {
        if (y.size() != y_.size()) throw std::invalid_argument("y must have n entries");
        y_ = y;
        evaluated_ = false;
        evaluate();
    }
    /// Changes the step size between steps and re-evaluates.
    void set_eta(Scalar eta) {
        if (!(eta > 0) || !std::isfinite(eta)) throw std::invalid_argument("eta must be positive and finite");
        settings_.eta = eta;
        evaluated_ = false;
        evaluate();
    }
    /// Sets the flag that stops step() and run() after the current step (not owned).
    void set_cancel_flag(const std::atomic<bool>* cancel) { settings_.cancel = cancel; }

    /// Mutable settings; marks the state un-evaluated (see DualGD::settings()).
    GDSettings& settings() {
        evaluated_ = false;
        return settings_;
    }
    const GDSettings& settings() const { return settings_; }

    /// @name State (references into the engine: no copies)
    ///@{
    const RowMatrix& W() const { return W_; }             ///< m x d weights
    const RowMatrix& alpha() const { return alpha_; }     ///< m x n accumulated dual coordinates
    const RowMatrix& beta() const { return beta_; }       ///< m x n predictions W X^T
    const Mask& mask() const { return pattern_.mask(); }  ///< m x n activation masks
    const Vector& predictions() const { return h_; }      ///< n network outputs (evaluated state)
    const Vector& labels() const { return y_; }           ///< n labels
    const Vector& outer() const { return outer_; }        ///< m outer weights
    Scalar loss() const { return loss_; }                 ///< loss of the evaluated state
    Scalar grad_norm() const { return grad_norm_; }       ///< ||grad_W R||_F of the evaluated state
    Scalar eta() const { return settings_.eta; }          ///< current step size
    std::int64_t steps_taken() const { return steps_; }   ///< GD steps taken so far
    bool evaluated() const { return evaluated_; }         ///< whether loss() etc. are current
    const PatternTracker& pattern() const { return pattern_; }
    ///@}

private:
    void compute_beta() {
        for (Index k = 0; k < W_.rows(); ++k)
            beta_.row(k).transpose().noalias() = X_ * W_.row(k).transpose();
    }

    ConstMatrixRef X_;
    Vector y_;
    Vector outer_;
    RowMatrix W_;
    RowMatrix alpha_;
    GDSettings settings_;
    RowMatrix beta_;
    Vector h_, g_;
    RowMatrix d_alpha_, d_W_;
    PatternTracker pattern_;
    Scalar loss_ = 0;
    Scalar grad_norm_ = 0;
    std::int64_t steps_ = 0;
    bool evaluated_ = false;
};

}  // namespace relucore
