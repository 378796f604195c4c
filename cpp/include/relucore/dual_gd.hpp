// The primal-dual gradient-descent engine (SPEC section 1).
//
// Gradient descent on R(W) = loss(h(X), y) with h(x) = sum_k a_k phi(w_k^T x)
// moves every w_k inside the row space of X, so the whole run can be tracked in
// R^n per neuron:
//   alpha_k : coefficients of w_k - w_k^perp in the data span (w_k = w_k^perp + X^T alpha_k)
//   beta_k  = X w_k = K alpha_k + X w_k^perp  (predictions of neuron k)
// and one step is
//   delta_alpha_k = -eta a_k phi'(beta_k) * g,   g = dLoss/dh,
//   beta_k += K delta_alpha_k,   alpha_k += delta_alpha_k.
// After K = X X^T is formed a step costs O(m n^2) whatever d is, and the
// d-dimensional weights are rebuilt only when asked for: W = W0 + (alpha - alpha0) X.
//
// The engine keeps a reference to K (which must outlive it) and copies y and a.
// No step allocates memory.
#pragma once

#include "relucore/model.hpp"
#include "relucore/run.hpp"
#include "relucore/types.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace relucore {

class DualGD {
public:
    // K: n x n Gram matrix; y: n labels; outer: m outer weights a_k (the signs s_k
    // of the paper, or values such as +-1/m); alpha0, beta0: m x n starting point.
    DualGD(ConstMatrixRef K, ConstVectorRef y, ConstVectorRef outer, ConstMatrixRef alpha0,
           ConstMatrixRef beta0, const GDSettings& settings)
        : K_(K), y_(y), outer_(outer), alpha_(alpha0), beta_(beta0), settings_(settings) {
        const Index n = K.rows();
        const Index m = outer.size();
        if (K.cols() != n) throw std::invalid_argument("K must be square");
        if (y.size() != n) throw std::invalid_argument("y must have n entries");
        if (m < 1) throw std::invalid_argument("at least one neuron is needed");
        if (alpha0.rows() != m || alpha0.cols() != n || beta0.rows() != m || beta0.cols() != n)
            throw std::invalid_argument("alpha0 and beta0 must be m x n");
        settings_.validate();
        h_.resize(n);
        g_.resize(n);
        d_alpha_.resize(m, n);
        d_beta_.resize(m, n);
        pattern_.reset(beta_, 0);
        evaluated_ = false;
    }

    // Loss, gradient and the pending update at the current state.
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

    // Takes k plain GD steps (no stopping rule).
    void step(std::int64_t k = 1) {
        for (std::int64_t j = 0; j < k; ++j) {
            if (!evaluated_) evaluate();
            apply();
        }
        evaluate();
    }

    // Runs until a stopping rule of the settings fires (step budget counted from 0).
    RunSummary run(History* history = nullptr) { return run_to_stop(*this, settings_, history); }

    // Changes between steps (a simulator may move the targets or the step size).
    void set_labels(ConstVectorRef y) {
        if (y.size() != y_.size()) throw std::invalid_argument("y must have n entries");
        y_ = y;
        evaluated_ = false;
        evaluate();
    }
    void set_eta(Scalar eta) {
        if (!(eta > 0) || !std::isfinite(eta)) throw std::invalid_argument("eta must be positive and finite");
        settings_.eta = eta;
        evaluated_ = false;
        evaluate();
    }
    GDSettings& settings() { return settings_; }
    const GDSettings& settings() const { return settings_; }

    const RowMatrix& alpha() const { return alpha_; }
    const RowMatrix& beta() const { return beta_; }
    const Vector& predictions() const { return h_; }  // valid after evaluate()
    const Vector& labels() const { return y_; }
    const Vector& outer() const { return outer_; }
    Scalar loss() const { return loss_; }
    Scalar grad_norm() const { return grad_norm_; }
    std::int64_t steps_taken() const { return steps_; }
    void set_steps_taken(std::int64_t t) { steps_ = t; }
    const PatternTracker& pattern() const { return pattern_; }
    PatternTracker& pattern() { return pattern_; }

private:
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

}  // namespace relucore
