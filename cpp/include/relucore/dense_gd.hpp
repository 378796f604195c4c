// Weight-space gradient descent for the same bias-free model as DualGD:
//   w_k <- w_k - eta a_k X^T (phi'(X w_k) * g).
// It costs O(m n d) a step and serves as the independent cross-check of the
// dual engine (and is the faster choice when d is small). It also accumulates
// alpha (the data-span coefficients of the updates) so both engines report the
// same quantities.
#pragma once

#include "relucore/model.hpp"
#include "relucore/run.hpp"
#include "relucore/types.hpp"

#include <cmath>
#include <stdexcept>

namespace relucore {

class DenseGD {
public:
    // X: n x d data (kept by reference); W0: m x d starting weights; alpha0: m x n.
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
    }

    void evaluate() {
        const ModelSpec& spec = settings_.model;
        loss_ = loss_and_residual(beta_, outer_, y_, spec, h_, g_);
        dual_step_coefficients(beta_, outer_, g_, settings_.eta, spec, d_alpha_);
        for (Index k = 0; k < W_.rows(); ++k)
            d_W_.row(k).noalias() = d_alpha_.row(k) * X_;
        grad_norm_ = d_W_.norm() / settings_.eta;
        evaluated_ = true;
    }

    void apply() {
        if (!evaluated_) evaluate();
        W_ += d_W_;
        alpha_ += d_alpha_;
        compute_beta();
        ++steps_;
        pattern_.update(beta_, steps_);
        evaluated_ = false;
    }

    void step(std::int64_t k = 1) {
        for (std::int64_t j = 0; j < k; ++j) {
            if (!evaluated_) evaluate();
            apply();
        }
        evaluate();
    }

    RunSummary run(History* history = nullptr) { return run_to_stop(*this, settings_, history); }

    const RowMatrix& W() const { return W_; }
    const RowMatrix& alpha() const { return alpha_; }
    const RowMatrix& beta() const { return beta_; }
    Scalar loss() const { return loss_; }
    Scalar grad_norm() const { return grad_norm_; }
    std::int64_t steps_taken() const { return steps_; }
    const PatternTracker& pattern() const { return pattern_; }

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
