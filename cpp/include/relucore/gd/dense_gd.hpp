/// @file gd/dense_gd.hpp
/// Weight-space gradient descent for the same bias-free model as DualGD:
///   w_k <- w_k - eta a_k X^T (phi'(X w_k) * g).
/// It costs O(m n d) a step and serves as the independent cross-check of the
/// dual engine (and is the faster choice when d is small). It also accumulates
/// alpha (the data-span coefficients of the updates) so both engines report the
/// same quantities. Its interface mirrors DualGD.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/types.hpp"
#include "relucore/defaults.hpp"
#include "relucore/gd/engine_base.hpp"
#include "relucore/gd/model.hpp"
#include "relucore/gd/run.hpp"
#include "relucore/gd/weight_step.hpp"

#include <algorithm>
#include <memory>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <utility>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

/// Gradient descent on one shallow network in weight space.
///
/// State: W (m x d), alpha and beta = W X^T (m x n), the step count and the
/// pattern tracker. Always evaluated between public calls (loss() etc. belong
/// to the current state). Not thread-safe; distinct engines are independent.
class DenseGD : public EngineBase<DenseGD> {
    using Base = EngineBase<DenseGD>;

public:
    /// The starting network in weight space, set field by field (explicit
    /// constructor: positional brace-initialisation does not compile):
    /// @code
    ///   relucore::DenseGD::Start start;
    ///   start.outer = signs;                        // m
    ///   start.W = W0;                               // m x d
    ///   start.alpha = relucore::RowMatrix::Zero(m, n);
    /// @endcode
    struct Start {
        explicit Start() = default;
        Vector outer;     ///< m outer weights a_k
        RowMatrix W;      ///< m x d starting weights
        RowMatrix alpha;  ///< m x n starting dual coordinates (only accumulated: zero unless resuming)
    };

    /// Builds an engine that owns its data: X is moved in (std::move(X), a
    /// temporary) or copied (an lvalue, a Map, a column-major matrix, an
    /// expression). The engine and its copies share the one immutable X.
    /// @param X        n x d data (finite)
    /// @param y        n labels (copied)
    /// @param start    outer weights, W0 and alpha0 (moved in: pass
    ///                 std::move(start) to spare the copy)
    /// @param settings step size, stopping rules and model (copied, validated)
    /// @throws std::invalid_argument on inconsistent shapes, non-finite values or invalid settings
    DenseGD(RowMatrix X, const ConstVectorRef& y, Start start, const GDSettings& settings)
        : DenseGD(std::make_shared<const RowMatrix>(std::move(X)), y, std::move(start), settings) {}

    /// Builds an engine that shares ownership of X. @throws std::invalid_argument if X is null
    DenseGD(const std::shared_ptr<const RowMatrix>& X, const ConstVectorRef& y, Start start, const GDSettings& settings)
        : DenseGD(require_data(X), X, y, std::move(start), start.outer.size(), settings) {}

    /// Builds an engine that views the caller's X (the explicit opt-in of
    /// `relucore::borrow`): X must outlive the engine and its copies, stay
    /// unchanged, and be a row-major Scalar matrix, Map or Block.
    DenseGD(borrow_t, const ConstMatrixRef& X, const ConstVectorRef& y, Start start, const GDSettings& settings)
        : DenseGD(X, nullptr, y, std::move(start), start.outer.size(), settings) {}

    /// A borrowed X that is not row-major double storage would bind to a
    /// temporary copy that dies with the call: refused at compile time.
    template <class XDerived, class... Rest, std::enable_if_t<!binds_as_view<XDerived>, int> = 0>
    DenseGD(borrow_t, const Eigen::MatrixBase<XDerived>& X, Rest&&...) = delete;

    /// A borrowed X that is an rvalue owning its storage (a RowMatrix
    /// temporary, std::move(X), a Ref<const RowMatrix> temporary) dies with
    /// the call: refused at compile time (drop `borrow`).
    template <class XArg, class... Rest, std::enable_if_t<dies_with_call<XArg>, int> = 0>
    DenseGD(borrow_t, XArg&& X, Rest&&...) = delete;

    /// A copy is an independent engine at the same state (its own alpha, beta, tracker and buffers;
    /// it shares only X); a moved-from engine throws std::logic_error on any use. Assignment is
    /// deleted: an engine is bound to its data for life (construct a new one, or `DenseGD b(a);`).
    DenseGD(const DenseGD&) = default;
    DenseGD(DenseGD&&) noexcept = default;
    DenseGD& operator=(const DenseGD&) = delete;  // an engine is bound to its data for life: copy-construct instead
    DenseGD& operator=(DenseGD&&) = delete;       // an engine is bound to its data for life: move-construct instead
    ~DenseGD() = default;

    /// Loss, gradient norm and pending update at the current state (pure).
    void evaluate() {
        guard_.require_usable();
        const ModelSpec& spec = settings_.model;
        loss_ = evaluate_loss();
        kernel_.backward(beta_, outer_, g_, settings_.eta, spec, d_alpha_, d_W_);
        grad_norm_ = weights_grad_norm();
        evaluate_outer();
        evaluated_ = true;
    }

    /// Takes the step computed by evaluate(); leaves the engine un-evaluated.
    void apply() {
        guard_.require_usable();
        if (!evaluated_) evaluate();
        W_ += d_W_;
        alpha_ += d_alpha_;
        apply_outer();
        ++steps_;
        if (resync_every_ > 0 && steps_ % resync_every_ == 0) resync();
        compute_beta();
        pattern_.update(beta_, steps_);
        evaluated_ = false;
    }

    /// apply() followed by evaluate() (what run_to_stop() does between two
    /// checks), fused: blocks of neurons are stepped, projected (beta = X w_k),
    /// tracked and added to the predictions while in cache; once the residual is
    /// known, each block's next step is formed the same way. Every entry gets
    /// the operations of apply() and evaluate() in the same order, so the
    /// numbers are theirs bit for bit; a step that resynchronises, and products
    /// on a registered BLAS (whose rounding may depend on the block), take
    /// apply() and evaluate() as they are. Allocation-free.
    void advance() {
        guard_.require_usable();
        if (!evaluated_ || !kernel_.blocked() || !plain_loss() ||
            (resync_every_ > 0 && (steps_ + 1) % resync_every_ == 0)) {
            apply();
            evaluate();
            return;
        }
        const ModelSpec& spec = settings_.model;
        const Index m = W_.rows(), n = alpha_.cols(), rows = kernel_.block_rows();
        const Index last = (m - 1) / rows * rows;  // the first neuron of the last block
        // Forward, in increasing k (the order of the sums of h): the weights' step,
        // beta, the masks, the predictions.
        h_.setZero();
        bool changed = false;
        for (Index k0 = 0; k0 < m; k0 += rows) {
            const Index r = std::min(rows, m - k0);
            W_.middleRows(k0, r) += d_W_.middleRows(k0, r);
            if (settings_.train_outer) outer_.segment(k0, r) += d_outer().segment(k0, r);
            kernel_.project(W_.middleRows(k0, r), beta_.middleRows(k0, r));
            changed = pattern_.update_rows(beta_, k0, k0 + r) || changed;
            add_predictions(beta_.middleRows(k0, r), outer_.segment(k0, r), spec, h_);
        }
        ++steps_;
        if (changed) pattern_.mark_changed(steps_);
        loss_ = loss_from_predictions(h_, y_, spec, g_);
        // Backward, from the blocks still in cache: alpha's step (unobserved until
        // advance() returns), then the next step.
        for (Index k0 = last; k0 >= 0; k0 -= rows) {
            const Index r = std::min(rows, m - k0);
            detail::add_to(alpha_.row(k0).data(), d_alpha_.row(k0).data(), r * n);
            kernel_.backward(beta_.middleRows(k0, r), outer_.segment(k0, r), g_, settings_.eta, spec,
                             d_alpha_.middleRows(k0, r), d_W_.middleRows(k0, r));
            if (settings_.train_outer) outer_terms(k0, k0 + r);
        }
        grad_norm_ = weights_grad_norm();
        if (settings_.train_outer) grad_norm_ = std::hypot(grad_norm_, std::sqrt(outer_square_sum()));
        evaluated_ = true;
    }

    /// m x d weights (a reference into the engine: no copy).
    const RowMatrix& W() const { return usable(W_); }

    /// Sets W = W_start + (alpha - alpha_start) X, so that alpha stays the data-span
    /// coordinates of W - W_start to rounding however many steps are taken (W and alpha
    /// are accumulated separately and drift apart otherwise). apply() calls it after every
    /// step whose number is a multiple of resync_every() (docs/math.md,
    /// resynchronisation); beta = X W follows at the next compute. Allocation-free.
    void resync() {
        guard_.require_usable();
        for (Index k = 0; k < W_.rows(); ++k) {
            resync_diff_ = alpha_.row(k) - alpha_ref_.row(k);
            W_.row(k).noalias() = resync_diff_ * kernel_.X();
            W_.row(k) += W_ref_.row(k);
        }
    }

    /// Steps between two resync() calls (defaults::resync_every; 0: never).
    std::int64_t resync_every() const { return resync_every_; }
    /// @throws std::invalid_argument if every < 0
    void set_resync_every(std::int64_t every) {
        if (every < 0) throw std::invalid_argument("resync_every must be >= 0");
        resync_every_ = every;
    }

private:
    /// ||d_W|| / eta; when the sum of squares under- or overflows (X far from
    /// 1 in scale), from d_W divided by its largest entry. Ordinary scales
    /// keep the plain formula bit for bit.
    Scalar weights_grad_norm() const {
        constexpr Scalar tiny = std::numeric_limits<Scalar>::min() / std::numeric_limits<Scalar>::epsilon();
        const Scalar sq = d_W_.squaredNorm();
        if (sq >= tiny && sq <= std::numeric_limits<Scalar>::max()) return std::sqrt(sq) / settings_.eta;
        const Scalar c = d_W_.cwiseAbs().maxCoeff();
        if (!std::isfinite(c) || c == 0) return std::sqrt(sq) / settings_.eta;
        return (d_W_ / c).norm() * c / settings_.eta;
    }

    /// st is taken by reference so that m is read before anything is moved out of it; X views
    /// *owner when the engine owns its data (owner null: borrowed).
    DenseGD(const ConstMatrixRef& X, std::shared_ptr<const RowMatrix> owner, const ConstVectorRef& y, Start&& st,
            Index m, const GDSettings& settings)
        : Base(checked_data(X), y, std::move(st.outer), std::move(st.alpha), RowMatrix::Zero(m, X.rows()), settings,
               false),
          X_owner_(std::move(owner)),
          kernel_(X, m),
          W_(std::move(st.W)) {
        const Index n = X.rows();
        const Index d = X.cols();
        detail::require_shape("start.W", W_.rows(), W_.cols(), m, d, "m x d");
        detail::require_finite("start.W", W_);
        d_W_.resize(m, d);
        W_ref_ = W_;
        alpha_ref_ = alpha_;
        resync_diff_.resize(n);
        compute_beta();
        start();
    }

    void compute_beta() { kernel_.project(W_, beta_); }

    static const RowMatrix& require_data(const std::shared_ptr<const RowMatrix>& X) {
        if (!X) throw std::invalid_argument("X must not be null");
        return *X;
    }

    /// n, once X is checked finite.
    static Index checked_data(const ConstMatrixRef& X) {
        detail::require_finite("X", X);
        return X.rows();
    }

    std::shared_ptr<const RowMatrix> X_owner_;  // the engine's X, shared with its copies (null when borrowed)
    WeightStep kernel_;                         // the products and the step of a block of neurons (gd/weight_step.hpp)
    RowMatrix W_;
    RowMatrix d_W_;
    RowMatrix W_ref_, alpha_ref_;  // resync(): W = W_ref_ + (alpha - alpha_ref_) X
    Eigen::Matrix<Scalar, 1, Eigen::Dynamic> resync_diff_;
    std::int64_t resync_every_ = defaults::resync_every;
};

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
