/// @file gd/dual_gd.hpp
/// The primal-dual gradient-descent engine (Lai et al. 2026).
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
/// W = W0 + (alpha - alpha0) X (see weights_from_dual() in linalg/span.hpp).
///
/// Typical use in a simulator:
/// @code
///   relucore::GDSettings s;
///   s.eta = 0.1; s.max_steps = 10000; s.tol = 1e-10;
///   relucore::DualGD::PositiveStart start;
///   start.outer = outer;                // m outer weights
///   start.offset = 1e-3;                // beta_k^(0) = eps = 1e-3
///   auto gd = relucore::DualGD::positive_start(X, y, start, s);
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

#include "relucore/core/abi.hpp"

#include "relucore/core/types.hpp"
#include "relucore/defaults.hpp"
#include "relucore/gd/dual_kernels.hpp"
#include "relucore/gd/dual_small.hpp"
#include "relucore/gd/engine_base.hpp"
#include "relucore/gd/model.hpp"
#include "relucore/gd/norm_bound.hpp"
#include "relucore/gd/positive_start.hpp"
#include "relucore/gd/run.hpp"
#include "relucore/linalg/gram.hpp"
#include "relucore/linalg/span.hpp"
#include "relucore/simd.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

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
class DualGD : public EngineBase<DualGD> {
    using Base = EngineBase<DualGD>;

public:
    /// The starting network in primal-dual coordinates, set field by field:
    /// @code
    ///   relucore::DualGD::Start start;
    ///   start.outer = signs;    // m
    ///   start.alpha = alpha0;   // m x n
    ///   start.beta = beta0;     // m x n
    /// @endcode
    /// Its constructor is explicit, so positional brace-initialisation
    /// (`Start{signs, alpha0, beta0}`, where alpha and beta would swap
    /// silently) does not compile.
    struct Start {
        explicit Start() = default;
        Vector outer;     ///< m outer weights a_k: the signs s_k of the paper or values such as +-1/m
        RowMatrix alpha;  ///< m x n starting dual coordinates alpha_k^(0)
        RowMatrix beta;   ///< m x n starting predictions beta_k^(0) = X w_k^(0)
    };

    /// The all-positive start of positive_start(), set field by field (explicit
    /// constructor, as for Start).
    struct PositiveStart {
        explicit PositiveStart() = default;
        Vector outer;   ///< m outer weights a_k
        RowMatrix eps;  ///< m x n positive offsets beta_k^(0); empty: every entry is `offset`
        Scalar offset =
            0;  ///< when eps is empty: > 0 the offset; 0 the default default_offset(y, m, defaults::C_alpha)
    };

    /// Builds an engine that owns its Gram matrix: K is moved in (pass
    /// std::move(K) or a temporary such as gram_matrix(X)) or copied (an
    /// lvalue, a Map, a Block, a column-major matrix, an expression). The
    /// engine and its copies share the one immutable K; gram() never dangles.
    ///
    /// @param K        n x n Gram matrix X X^T (square, finite)
    /// @param y        n labels (copied)
    /// @param start    outer weights and starting point (moved in: pass
    ///                 std::move(start) to spare the copy)
    /// @param settings step size, stopping rules and model (copied, validated)
    /// @throws std::invalid_argument on inconsistent shapes, non-finite values or invalid settings
    DualGD(RowMatrix K, const ConstVectorRef& y, Start start, const GDSettings& settings)
        : DualGD(std::make_shared<const RowMatrix>(std::move(K)), y, std::move(start), settings) {}

    /// Builds an engine that shares ownership of K (for example one K used by
    /// several engines). Same arguments otherwise.
    /// @throws std::invalid_argument if K is null, as above otherwise
    DualGD(std::shared_ptr<const RowMatrix> K, const ConstVectorRef& y, Start start, const GDSettings& settings)
        : Base(checked_gram(require_nonnull(K)), y, std::move(start.outer), std::move(start.alpha),
               std::move(start.beta), settings),
          K_owner_(std::move(K)),
          K_(*K_owner_) {
        setup();
    }

    /// Builds an engine that views the caller's K (the explicit opt-in of
    /// `relucore::borrow`, for a K shared by many short-lived engines, as the
    /// bindings and gram_trial do). K must outlive the engine and its copies
    /// and stay unchanged, and be a row-major Scalar matrix, Map or Block.
    /// For n <= 16 the engine also keeps a zero-padded copy of K for its step;
    /// gram() returns the view.
    DualGD(borrow_t, const ConstMatrixRef& K, const ConstVectorRef& y, Start start, const GDSettings& settings)
        : Base(checked_gram(K), y, std::move(start.outer), std::move(start.alpha), std::move(start.beta), settings),
          K_(K) {
        setup();
    }

    /// A borrowed K that is not row-major double storage would bind to a
    /// temporary copy that dies with the call: refused at compile time (drop
    /// `borrow` to let the engine own a copy).
    template <class KDerived, class... Rest, std::enable_if_t<!binds_as_view<KDerived>, int> = 0>
    DualGD(borrow_t, const Eigen::MatrixBase<KDerived>& K, Rest&&...) = delete;

    /// A borrowed K that is an rvalue owning its storage (gram_matrix(X),
    /// std::move(K), a Ref<const RowMatrix> temporary, which may hold a copy)
    /// dies with the call: refused at compile time (drop `borrow`).
    template <class KArg, class... Rest, std::enable_if_t<dies_with_call<KArg>, int> = 0>
    DualGD(borrow_t, KArg&& K, Rest&&...) = delete;

    /// The all-positive initialisation of Lai et al. 2026 (Theorems 1, 3):
    /// w_k^(0) = X^T K^{-1} eps_k, i.e. beta_k^(0) = eps_k and
    /// alpha_k^(0) = K^{-1} eps_k (Cholesky factorisation of K). The engine
    /// owns K = X X^T (X is not kept); the weights are W = alpha X (w_k^perp = 0).
    ///
    /// @param X     n x d data with full row rank (K positive definite)
    /// @param y     n labels (copied)
    /// @param start outer weights and the offsets eps (m x n positive, or one offset)
    /// @throws std::invalid_argument if K is singular or badly conditioned, or on bad
    ///         shapes, non-positive eps or invalid settings
    /// (A template so that the rule's eigen-solver is compiled only where this is called.)
    template <class Matrix = RowMatrix>
    static DualGD positive_start(const ConstMatrixRef& X, const ConstVectorRef& y, const PositiveStart& start,
                                 const GDSettings& settings) {
        const Index n = X.rows();
        const Index m = start.outer.size();
        Start s;
        s.outer = start.outer;
        if (start.eps.size() > 0)
            s.beta = start.eps;
        else
            s.beta =
                RowMatrix::Constant(m, n, start.offset != 0 ? start.offset : default_offset(y, m, defaults::C_alpha));
        if (s.beta.rows() != m || s.beta.cols() != n) throw std::invalid_argument("eps must be m x n");
        if (!(s.beta.array() > 0).all()) throw std::invalid_argument("eps must be positive");
        auto K = std::make_shared<RowMatrix>(gram_matrix(X));
        Eigen::LLT<RowMatrix> llt(n);
        // train's conditioning rule; the spectrum is computed only where the rcond estimate fails.
        if (factor_gram(
                *K, defaults::max_condition, [&K] { return extreme_spectrum<Matrix>(*K); }, llt) != StartCheck::ok)
            throw std::invalid_argument(
                "K = X X^T is singular or badly conditioned (X needs full row rank, linearly independent rows)");
        s.alpha = llt.solve(s.beta.transpose()).transpose();
        return DualGD(std::shared_ptr<const RowMatrix>(std::move(K)), y, std::move(s), settings);
    }

    /// A copy is an independent engine at the same state (its own alpha, beta, tracker and buffers;
    /// it shares only K); a moved-from engine throws std::logic_error on any use. Assignment is
    /// deleted: an engine is bound to its data for life (construct a new one, or `DualGD b(a);`).
    DualGD(const DualGD&) = default;
    DualGD(DualGD&&) noexcept = default;
    DualGD& operator=(const DualGD&) = delete;  // an engine is bound to its data for life: copy-construct instead
    DualGD& operator=(DualGD&&) = delete;       // an engine is bound to its data for life: move-construct instead
    ~DualGD() = default;

    /// Computes the loss, the gradient norm and the pending update at the current state. Pure
    /// function of the state: calling it twice changes nothing. Allocation-free.
    void evaluate() {
        guard_.require_usable();
        const ModelSpec& spec = settings_.model;
        if (spec.loss == Loss::square && spec.activation == Activation::relu && !settings_.train_outer &&
            plain_loss()) {
            evaluate_relu_square<0>();
        } else {
            loss_ = evaluate_loss();
            dual_step_coefficients(beta_, outer_, g_, settings_.eta, spec, d_alpha_);
            grad_norm_ = grad_norm_from(apply_gram());
            evaluate_outer();
        }
        evaluated_ = true;
    }

    /// Takes the step computed by evaluate() (evaluating first if needed) and updates the step count
    /// and the pattern tracker. Leaves the engine un-evaluated: call evaluate() before reading loss().
    /// Allocation-free.
    void apply() {
        guard_.require_usable();
        if (!evaluated_) evaluate();
        const Index m = alpha_.rows();
        const Index n = alpha_.cols();
        for (Index k = 0; k < m; ++k) {
            Scalar* __restrict a = alpha_.data() + k * n;
            Scalar* __restrict b = beta_.data() + k * n;
            const Scalar* __restrict da = d_alpha_.data() + k * n;
            const Scalar* __restrict db = d_beta_.data() + k * d_beta_.cols();
            for (Index j = 0; j < n; ++j) {
                a[j] += da[j];
                b[j] += db[j];
            }
        }
        apply_outer();
        ++steps_;
        if (resync_due()) resync();
        pattern_.update(beta_, steps_);
        evaluated_ = false;
    }

    /// apply() followed by evaluate() (what run_to_stop() does between two
    /// checks), fused into one pass for the square loss and the ReLU.
    void advance() {
        guard_.require_usable();
        const ModelSpec& spec = settings_.model;
        if (evaluated_ && spec.loss == Loss::square && spec.activation == Activation::relu && !settings_.train_outer &&
            plain_loss() && !resync_due(steps_ + 1)) {
            (this->*advance_relu_square_)();
        } else {
            apply();
            evaluate();
        }
    }

    /// Whether ||grad_W R||_F of the evaluated state is provably below tol: grad_norm() computes it in
    /// dual form, sqrt(sum_k d_alpha_k^T K d_alpha_k) / eta, which cancels where K is singular (collinear
    /// or duplicate examples, n > d); this recomputes that sum with dual_norm_sq() and its rounding bound
    /// (the engine's d_alpha taken as exact inputs). With train_outer (and an output bias) the outer part
    /// of the norm is added to the inner one's upper bound. When `bound` is given it receives the bound
    /// on the rounding of the inner norm (DualNormSq::norm_bound(), in the norm's units). O(m n^2): run_to_stop() calls it only
    /// where grad_norm() < tol.
    bool grad_norm_provably_below(Scalar tol, Scalar* bound = nullptr) const {
        const DualNormSq q = dual_norm_sq(K_, d_alpha_);
        const Scalar eta = settings_.eta;
        if (bound) *bound = q.norm_bound() / eta;
        constexpr Scalar u = std::numeric_limits<Scalar>::epsilon() / 2;
        Scalar extra = 0;  // the squared outer part of the norm, computed from W's own coordinates
        if (settings_.train_outer) {
            extra = outer_square_sum();
            if (has_output_bias()) {
                Scalar s = 0;
                for (Index i = 0; i < g_.size(); ++i) s += g_[i];
                extra += s * s;
            }
        }
        // The inner tolerance eta sqrt(tol^2 - extra), shrunk by 8u for the roundings of its own terms.
        const Scalar rest = tol * tol - extra * (1 + 4 * u);
        if (!(rest > 0)) return false;
        return q.provably_below(eta * std::sqrt(rest) * (1 - 8 * u));
    }

    /// The n x n Gram matrix the engine steps with: the engine's own K (valid while the
    /// engine or a copy of it lives), or the borrowed view.
    const ConstMatrixRef& gram() const { return usable(K_); }

    /// Sets beta = beta_ref + K (alpha - alpha_ref) (rows of K summed in increasing order), so that
    /// beta and K alpha agree to rounding whatever the number of steps taken. apply() calls it after
    /// every step whose number is a multiple of resync_every() (docs/math.md, resynchronisation).
    /// Leaves the engine un-evaluated. Allocation-free.
    void resync() {
        guard_.require_usable();
        const Index m = alpha_.rows();
        const Index n = alpha_.cols();
        // The pending step's rows hold the difference and its product: the state is left
        // un-evaluated, so evaluate() writes them anew before the next step.
        for (Index k = 0; k < m; ++k) {
            Scalar* __restrict diff = d_alpha_.data() + k * n;
            Scalar* __restrict prod = d_beta_.data() + k * d_beta_.cols();
            for (Index j = 0; j < n; ++j) diff[j] = alpha_(k, j) - alpha_ref_(k, j);
            product_.times(diff, prod);
            for (Index j = 0; j < n; ++j) beta_(k, j) = beta_ref_(k, j) + prod[j];
        }
        evaluated_ = false;
    }

    /// Steps between two resync() calls (defaults::resync_every; 0: never).
    std::int64_t resync_every() const { return resync_every_; }
    /// @throws std::invalid_argument if every < 0
    void set_resync_every(std::int64_t every) {
        if (every < 0) throw std::invalid_argument("resync_every must be >= 0");
        resync_every_ = every;
    }

    /// The state beta is recomputed from: beta = beta_ref + K (alpha - alpha_ref). Construction sets
    /// it to the starting alpha and beta; a run resumed from a checkpoint sets it back to the original
    /// start, so that it resynchronises exactly as the uninterrupted run.
    /// @throws std::invalid_argument unless both are m x n
    void set_reference(const ConstMatrixRef& alpha_ref, const ConstMatrixRef& beta_ref) {
        guard_.require_usable();
        if (alpha_ref.rows() != alpha_.rows() || alpha_ref.cols() != alpha_.cols() || beta_ref.rows() != beta_.rows() ||
            beta_ref.cols() != beta_.cols())
            throw std::invalid_argument("the reference alpha and beta must be m x n");
        alpha_ref_ = alpha_ref;
        beta_ref_ = beta_ref;
    }
    const RowMatrix& alpha_reference() const { return alpha_ref_; }  ///< alpha_ref of resync()
    const RowMatrix& beta_reference() const { return beta_ref_; }    ///< beta_ref of resync()

private:
    /// Whether step number t (counted from 0 over the engine's life) is followed by resync().
    bool resync_due(std::int64_t t) const { return resync_every_ > 0 && t % resync_every_ == 0; }
    bool resync_due() const { return resync_due(steps_); }

    /// d_beta_k = K d_alpha_k for every neuron, accumulated over the rows of K with a non-zero
    /// coefficient: inactive examples cost nothing (K is symmetric). Plain loops (no Eigen overhead).
    /// @return eta^2 ||grad_W R||_F^2 = sum_k d_alpha_k^T K d_alpha_k
    Scalar apply_gram() {
        const Index m = d_alpha_.rows();
        const Index n = d_alpha_.cols();
        const bool all = product_.padded_n() == 0 && dual_kernels::tiles_pay(n);
        if (all) product_.times_all(m, d_alpha_.data(), d_beta_.data(), d_beta_.cols());
        Scalar sq = 0;
        for (Index k = 0; k < m; ++k) {
            Scalar* db = d_beta_.data() + k * d_beta_.cols();
            const Scalar* da = d_alpha_.data() + k * n;
            if (!all) product_.times(da, db);
            for (Index j = 0; j < n; ++j) sq += db[j] * da[j];
        }
        return sq;
    }

    /// ||grad_W R||_F from sq = sum_k d_alpha_k^T K d_alpha_k (= eta^2 times its square) and the
    /// d_alpha, d_beta = K d_alpha of the evaluated state: sqrt(sq) / eta, bit for bit, unless sq
    /// under- or overflows (X far from 1 in scale: X 1e150 times larger gives d_alpha ~ 1e-300,
    /// sq below the smallest normal number); then the sum is recomputed with d_alpha and d_beta
    /// divided by their largest entries.
    Scalar grad_norm_from(Scalar sq) const {
        constexpr Scalar tiny = std::numeric_limits<Scalar>::min() / std::numeric_limits<Scalar>::epsilon();
        if (sq >= tiny && sq <= std::numeric_limits<Scalar>::max()) return std::sqrt(sq) / settings_.eta;
        return dual_kernels::detail::rescaled_grad_norm(d_alpha_, d_beta_, sq, settings_.eta);
    }

    /// The ReLU/square step takes n as a template parameter N: N = n for n <= 16 (loops fully
    /// unrolled: at n ~ 10 loop control was most of a step), N = 0 (n read at run time)
    /// otherwise; see select_step_functions().
    ///
    /// apply() then evaluate() for the square loss and the ReLU in one pass over the neurons: each
    /// alpha/beta entry is updated, its mask compared and its contribution to h added while it is in
    /// a register. Same operations in the same order as apply(); evaluate(), so bitwise the same. No FMA
    /// contraction (aarch64 has FMA in its base set): the vector steps of dual_small.hpp give these bits.
    template <int N>
    RELUCORE_NO_FP_CONTRACT void advance_relu_square() {
        RELUCORE_NO_FP_CONTRACT_BODY
        const Index m = beta_.rows();
        const Index n = N > 0 ? N : beta_.cols();
        const Index dstride = d_beta_.cols();
        const Scalar* __restrict outer = outer_.data();
        Scalar* __restrict h = h_.data();
        // Masks change rarely: compare the signs of beta before and after in
        // registers, and rewrite the mask bytes only when one flipped.
        int changed = 0;
        for (Index i = 0; i < n; ++i) h[i] = 0;
        for (Index k = 0; k < m; ++k) {
            const Scalar a = outer[k];
            Scalar* __restrict ak = alpha_.data() + k * n;
            Scalar* __restrict bk = beta_.data() + k * n;
            const Scalar* __restrict dak = d_alpha_.data() + k * n;
            const Scalar* __restrict dbk = d_beta_.data() + k * dstride;
            Index i = 0;
#if defined(__SSE2__)
            // Two examples per instruction (SSE2 is part of x86-64), the scalar loop's IEEE operations.
            const __m128d va = _mm_set1_pd(a), zero = _mm_setzero_pd();
            for (; i + 2 <= n; i += 2) {
                _mm_storeu_pd(ak + i, _mm_add_pd(_mm_loadu_pd(ak + i), _mm_loadu_pd(dak + i)));
                const __m128d old = _mm_loadu_pd(bk + i);
                const __m128d b = _mm_add_pd(old, _mm_loadu_pd(dbk + i));
                _mm_storeu_pd(bk + i, b);
                const __m128d on = _mm_cmpgt_pd(b, zero);
                changed |= _mm_movemask_pd(on) ^ _mm_movemask_pd(_mm_cmpgt_pd(old, zero));
                _mm_storeu_pd(h + i, _mm_add_pd(_mm_loadu_pd(h + i), _mm_mul_pd(va, _mm_and_pd(b, on))));
            }
#endif
            for (; i < n; ++i) {
                ak[i] += dak[i];
                const Scalar old = bk[i];
                const Scalar b = old + dbk[i];
                bk[i] = b;
                changed |= static_cast<int>(b > 0) ^ static_cast<int>(old > 0);
                h[i] += a * (b > 0 ? b : Scalar(0));
            }
        }
        ++steps_;
        if (changed) pattern_.update(beta_, steps_);
        evaluate_relu_square<N, true>();
    }

    /// evaluate() for the square loss and the ReLU (the papers' setting), without the per-element
    /// dispatch on the model and with one pass per neuron: h = sum_k a_k relu(beta_k) (unless
    /// HKnown: advance_relu_square() accumulated it already), residual, loss, d_alpha,
    /// d_beta = K d_alpha and the gradient norm. Same operations in the same order as the
    /// general path (loss_and_residual, dual_step_coefficients, apply_gram), so bitwise the same
    /// state. The restrict-qualified pointers spare the compiler its aliasing checks (n ~ 10).
    template <int N, bool HKnown = false>
    RELUCORE_NO_FP_CONTRACT void evaluate_relu_square() {
        RELUCORE_NO_FP_CONTRACT_BODY
        const Index m = beta_.rows();
        const Index n = N > 0 ? N : beta_.cols();
        const Scalar* __restrict beta = beta_.data();
        const Scalar* __restrict outer = outer_.data();
        const Scalar* __restrict y = y_.data();
        Scalar* __restrict h = h_.data();
        Scalar* __restrict g = g_.data();
        if constexpr (!HKnown) {
            for (Index i = 0; i < n; ++i) h[i] = 0;
            for (Index k = 0; k < m; ++k) {
                const Scalar a = outer[k];
                const Scalar* __restrict bk = beta + k * n;
                for (Index i = 0; i < n; ++i) h[i] += a * (bk[i] > 0 ? bk[i] : Scalar(0));
            }
        }
        Scalar loss = 0;
        for (Index i = 0; i < n; ++i) {
            g[i] = h[i] - y[i];
            loss += g[i] * g[i];
        }
        loss_ = loss / 2;
        const Scalar eta = settings_.eta;
        Scalar* __restrict da = d_alpha_.data();
        Scalar* __restrict db = d_beta_.data();
        const Index dstride = d_beta_.cols();
        for (Index k = 0; k < m; ++k) {
            const Scalar a = -eta * outer[k];
            const Scalar* __restrict bk = beta + k * n;
            Scalar* __restrict dak = da + k * n;
            for (Index i = 0; i < n; ++i) dak[i] = bk[i] > 0 ? a * g[i] : Scalar(0);
        }
        // n > 16: two neurons per pass over K, or every neuron in one pass where K
        // is large (dual_kernels::tiles_pay); bitwise as one neuron at a time.
        Scalar sq = 0;
        if (N == 0 && dual_kernels::tiles_pay(n)) {
            product_.times_all(m, da, db, dstride);
            for (Index k = 0; k < m; ++k) {
                const Scalar* __restrict dak = da + k * n;
                const Scalar* __restrict dbk = db + k * dstride;
                for (Index j = 0; j < n; ++j) sq += dbk[j] * dak[j];
            }
        } else {
            for (Index k = 0; k < m; ++k) {
                Scalar* __restrict dak = da + k * n;
                Scalar* __restrict dbk = db + k * dstride;
                // N = n <= 16 implies the padded width (N + 1) / 2 * 2 chosen in setup():
                // call that kernel directly instead of dispatching on every product.
                if constexpr (N > 0)
                    product_.times_padded<(N + 1) / 2 * 2>(dak, dbk);
                else if (product_.padded_n() == 0 && k % 2 == 0 && k + 1 < m)
                    product_.times2(dak, dak + n, dbk, dbk + dstride);  // neurons k and k + 1
                else if (product_.padded_n() > 0 || k % 2 == 0)         // n <= 16: the padded kernel
                    product_.times(dak, dbk);
                for (Index j = 0; j < n; ++j) sq += dbk[j] * dak[j];
            }
        }
        grad_norm_ = grad_norm_from(sq);
        evaluated_ = true;
    }

    static const RowMatrix& require_nonnull(const std::shared_ptr<const RowMatrix>& K) {
        if (!K) throw std::invalid_argument("K must not be null");
        return *K;
    }

    /// n, once K is checked: square and finite.
    static Index checked_gram(const ConstMatrixRef& K) {
        detail::require_square("K", K.rows(), K.cols());
        detail::require_finite("K", K);
        return K.rows();
    }

    void setup() {
        const Index n = K_.rows();
        // d_beta_ has the product's padded rows (n <= 16), so the sums are stored whole.
        product_.setup(K_, alpha_.rows());
        d_beta_ = RowMatrix::Zero(alpha_.rows(), product_.width());
        alpha_ref_ = alpha_;
        beta_ref_ = beta_;
        select_step_functions(n);
        start();
    }

    /// The step functions for n = N (0: n > 16); 6 <= n <= 16: dual_small.hpp's step at the widest level of
    /// product_.simd_level(): 2 lanes at sse2 (neon on aarch64), 4 at avx (with AVX2), AVX-512F at avx512.
    /// evaluate() (at the start and each resync) keeps n at run time: a copy per n costs compile time.
    template <int N>
    void set_step_functions() {
        advance_relu_square_ = &DualGD::advance_relu_square<N>;
#if defined(RELUCORE_SMALL_VECTORS)
        if constexpr (N >= 6) {
            const int level = product_.simd_level();
            if (level >= simd::kSse2) advance_relu_square_ = &DualGD::advance_small_128<N>;
#if defined(RELUCORE_SIMD_DISPATCH)
            if (level >= simd::kAvx && simd::has_avx2()) advance_relu_square_ = &DualGD::advance_small_avx2<N>;
            if (level >= simd::kAvx512) advance_relu_square_ = &DualGD::advance_small_avx512<N>;
#endif
        }
#endif
    }

#if defined(RELUCORE_SMALL_VECTORS)
    /// advance_relu_square<N>() by dual_small.hpp's step (advance_small_*: in vectors of 2 or 4 lanes,
    /// or the AVX-512F kernel), bitwise the same state. Each kernel inlines into a member compiled
    /// for its instruction set without FMA contraction (a call per step costs more than the step at
    /// small n): small_view() before it, finish_small() after.
    __attribute__((always_inline)) detail::dual_small::View small_view() {
        detail::dual_small::View v;
        v.m = alpha_.rows(), v.n = alpha_.cols(), v.np = product_.padded_n();
        v.alpha = alpha_.data(), v.beta = beta_.data(), v.d_alpha = d_alpha_.data(), v.d_beta = d_beta_.data();
        v.K_pad = product_.padded_data(), v.outer = outer_.data(), v.y = y_.data(), v.h = h_.data(), v.g = g_.data();
        v.eta = settings_.eta;
        return v;
    }
    __attribute__((always_inline)) void finish_small(const detail::dual_small::StepOut& r) {
        ++steps_;
        if (r.changed) pattern_.update(beta_, steps_);
        loss_ = r.loss;
        // No d_alpha entry moved (the row masks say so): the zero step rescaled_grad_norm() would find.
        grad_norm_ = r.moves ? grad_norm_from(r.sq) : Scalar(0);
        evaluated_ = true;
    }
    template <int N>
    RELUCORE_NO_FP_CONTRACT void advance_small_128() {
        finish_small(detail::dual_small::advance<N, 2>(small_view()));
    }
#if defined(RELUCORE_SIMD_DISPATCH)
    template <int N>
    __attribute__((target("avx2"))) RELUCORE_NO_FP_CONTRACT void advance_small_avx2() {
        finish_small(detail::dual_small::advance<N, 4>(small_view()));
    }
    RELUCORE_AVX512_WARNINGS_OFF  // (GCC's intrinsics, inlined here)
    template <int N>
    __attribute__((target("avx512f"))) RELUCORE_NO_FP_CONTRACT void advance_small_avx512() {
        finish_small(detail::dual_small::advance_avx512<N>(small_view()));
    }
    RELUCORE_AVX512_WARNINGS_ON
#endif
#endif

    template <int N = 16>
    void select_step_functions(Index n) {
        if constexpr (N == 0) {
            set_step_functions<0>();
        } else {
            if (n == N) return set_step_functions<N>();
            select_step_functions<N - 1>(n);
        }
    }

    using StepFunction = void (DualGD::*)();
    StepFunction advance_relu_square_ = &DualGD::advance_relu_square<0>;
    std::shared_ptr<const RowMatrix> K_owner_;  // the engine's K, shared with its copies (null when borrowed)
    ConstMatrixRef K_;
    dual_kernels::GramProduct product_;  // d_beta_k = K d_alpha_k (dual_kernels.hpp)
    RowMatrix d_beta_;                   // m x product_.width(): K d_alpha_k in the first n columns

    // resync(): beta = beta_ref_ + K (alpha - alpha_ref_) every resync_every_ steps
    RowMatrix alpha_ref_, beta_ref_;
    std::int64_t resync_every_ = defaults::resync_every;
};

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
