/// @file gd/weight_step.hpp
/// The weight-space step of the model of gd/model.hpp on a block of neurons,
/// the one home of its products: forward (beta = W X^T for the block, then its
/// predictions h += a_k phi(beta_k)) and backward (the coefficients
/// -eta a_k phi'(beta_k) g and the step d_W = coeff X). The products go to
/// relucore's packed kernels (AVX-512 or AVX2) on X packed once where blas::packed_products_available
/// allows, else to blas::gemm_nt / blas::gemm (a registered BLAS, relucore's
/// kernels or Eigen). The engine keeps its own bookkeeping (DenseGD: alpha and
/// beta, the pattern tracker, the outer layer's step of gd/engine_base.hpp).
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/types.hpp"
#include "relucore/gd/model.hpp"
#include "relucore/linalg/packed.hpp"

#include <algorithm>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

/// The block kernels of the weight-space step for one data matrix X (n x d),
/// shared by DenseGD (train(engine="weights")) and WeightGD (meanfield.train,
/// meanfield/dense_step.hpp). Holds a view of X (which must outlive it) and,
/// where the packed kernels apply and pack is true, X packed once. pack =
/// false is for an X whose entries change between steps (a gathered batch of
/// WeightGD); with one row, its products are then one matrix-vector product
/// and one outer product per block (Eigen's) instead of a call per neuron or
/// a BLAS call. m: the neurons of the largest block. Allocation-free after
/// construction.
class WeightStep {
public:
    WeightStep(const ConstMatrixRef& X, Index m, bool pack = true) : X_(X), m_(m) {
        packed_ = pack && blas::packed_products_available(m, X.rows(), X.cols());
        single_ = !pack && X.rows() == 1;
        if (packed_) blas::pack_x(X, packed_x_);
    }

    const ConstMatrixRef& X() const { return X_; }

    /// Whether a step may be taken block by block: on the packed kernels or
    /// Eigen's per-neuron products, whose rows do not depend on the others (a
    /// BLAS is not asked: its rounding may depend on the sizes).
    bool blocked() const {
        return packed_ || !blas::detail::product_uses_blas(blas::registered_blas(), m_, X_.cols(), X_.rows());
    }

    /// Neurons per block: about 8192 entries of beta (64 kB), a multiple of 4;
    /// all of them when X exceeds 1 MB (the products read X once per block).
    Index block_rows() const {
        const Index n = X_.rows(), d = X_.cols();
        if (n * d > (Index(1) << 17)) return m_;
        return std::max<Index>(4, 8192 / std::max<Index>(1, n) / 4 * 4);
    }

    /// beta = W X^T for a block of rows of W (r x d) into beta (r x n).
    template <class Wb, class Out>
    void project(const Wb& W, Out&& beta) const {
        if (packed_) return blas::gemm_nt_packed(W, packed_x_, beta);
        if (single_) return project_one(W, beta.col(0));
        blas::gemm_nt(W, X_, beta);
    }

    /// d_W = coeff X for a block of rows of coeff (r x n) into d_W (r x d).
    template <class Cb, class Out>
    void step(const Cb& coeff, Out&& d_W) const {
        if (packed_) return blas::gemm_packed(coeff, packed_x_, d_W);
        if (single_) return step_one(coeff.col(0), d_W);
        blas::gemm(coeff, X_, d_W);
    }

    /// Whether X is one example not packed (pack = false): project_one() and step_one() apply.
    bool single() const { return single_; }

    /// The products for one example (single()): beta = W x (r) and d_W = coeff x^T (r x d), W
    /// and d_W in any layout (WeightGD reads and writes its state by coordinate in place).
    template <class Wb, class Out>
    void project_one(const Wb& W, Out&& beta) const {
        beta.noalias() = W * X_.row(0).transpose();
    }
    template <class Cb, class Out>
    void step_one(const Cb& coeff, Out&& d_W) const {
        d_W.noalias() = coeff * X_.row(0);
    }

    /// Backward pass of a block: coeff = -eta a_k phi'(beta_k) g (the change
    /// of alpha_k), then d_W = coeff X.
    template <class Beta, class Outer, class G, class Coeff, class Out>
    void backward(const Beta& beta, const Outer& outer, const G& g, Scalar eta, const ModelSpec& spec, Coeff&& coeff,
                  Out&& d_W) const {
        dual_step_coefficients(beta, outer, g, eta, spec, coeff);
        step(coeff, d_W);
    }

private:
    ConstMatrixRef X_;
    Index m_ = 0;
    bool packed_ = false;     // the products on the packed kernels (blas::packed_products_available)
    bool single_ = false;     // one example, not packed: a matrix-vector and an outer product
    blas::PackedX packed_x_;  // X packed once for them
};

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
