// The shallow network h(x) = sum_k a_k phi(w_k^T x) seen through its
// predictions: everything the engines need to know about the activation phi
// and the loss, written once so that the dual and the weight-space engines
// share it (docs/math.md §2 and §10).
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/types.hpp"
#include "relucore/defaults.hpp"
#include "relucore/simd.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

enum class Activation : int { relu = 0, leaky_relu = 1 };
enum class Loss : int { square = 0, logistic = 1 };

/// The name of each activation, one row per activation in the order of their values (the
/// Python layer registers every row as relucore._core.Activation). phi and phi' live in
/// activate() and activate_slope() below.
struct ActivationTraits {
    Activation activation;
    const char* name;
};

inline constexpr ActivationTraits activation_table[] = {
    {Activation::relu, "relu"},
    {Activation::leaky_relu, "leaky_relu"},
};

/// What the layers above the engines need to know about a loss, one row per loss
/// (the Python layer reads this table through relucore._core.loss_traits). Its value
/// and derivative live in loss_and_residual() below.
struct LossTraits {
    Loss loss;
    const char* name;
    /// The curvature of the loss in the predictions h is at most
    /// 1 / (curvature_denominator * (per_example ? n : 1)); the default step
    /// 1 / (curvature ||s||^2 mu_1(K)) follows from it (docs/math.md §4).
    Scalar curvature_denominator;
    bool per_example;
    /// true: the default tolerance is tol_factor sqrt(mu_1) ||y||; false: 0 (never stop early).
    bool relative_tol;
    /// true: labels must lie in {-1, +1}.
    bool labels_pm1;
};

inline constexpr LossTraits loss_table[] = {
    {Loss::square, "square", 1, false, true, false},
    {Loss::logistic, "logistic", 4, true, false, true},
};

inline const LossTraits& loss_traits(Loss loss) {
    for (const LossTraits& t : loss_table)
        if (t.loss == loss) return t;
    throw std::invalid_argument("unknown loss");
}

/// The curvature bound L of the loss for n examples (1 for the square loss, 1/(4n) for the logistic).
inline Scalar loss_curvature(Loss loss, Index n) {
    const LossTraits& t = loss_traits(loss);
    return Scalar(1) / (t.curvature_denominator * (t.per_example ? static_cast<Scalar>(n) : Scalar(1)));
}

/// The square loss's reductions over n examples (docs/math.md §2, loss reductions):
/// 1/2 sum_i (h_i - y_i)^2, sum_i (h_i - y_i)^2, and 1/n sum_i (h_i - y_i)^2 (PyTorch's F.mse_loss).
enum class Reduction : int { half_sum = 0, sum = 1, mean = 2 };

/// The factor f of a reduction over n examples: the loss is f/2 sum_i (h_i - y_i)^2 and its
/// derivative f (h_i - y_i): 1 (half_sum), 2 (sum), 2/n (mean).
inline Scalar reduction_factor(Reduction r, Index n) {
    if (r == Reduction::half_sum) return 1;
    if (r == Reduction::sum) return 2;
    return Scalar(2) / static_cast<Scalar>(n);
}

struct ModelSpec {
    Activation activation = Activation::relu;
    Scalar leaky_slope = defaults::leaky_slope;  // gamma in max(u, gamma u); used by leaky_relu only
    Loss loss = Loss::square;

    void validate() const {
        if (activation == Activation::leaky_relu && !(leaky_slope > 0 && leaky_slope < 1))
            throw std::invalid_argument("leaky_slope must lie in (0, 1)");
    }
};

// phi(u).  A pre-activation of exactly zero counts as inactive (docs/math.md, notation: D(v) is strict).
inline Scalar activate(Scalar u, const ModelSpec& spec) {
    if (u > 0) return u;
    return spec.activation == Activation::relu ? Scalar(0) : spec.leaky_slope * u;
}

// phi'(u) with the convention phi'(0) = 0 (relu) or gamma (leaky).
inline Scalar activate_slope(Scalar u, const ModelSpec& spec) {
    if (u > 0) return 1;
    return spec.activation == Activation::relu ? Scalar(0) : spec.leaky_slope;
}

// log(1 + exp(-z)) without overflow.
inline Scalar softplus_neg(Scalar z) {
    return z > 0 ? std::log1p(std::exp(-z)) : -z + std::log1p(std::exp(z));
}

// 1 / (1 + exp(z)) without overflow.
inline Scalar sigmoid_neg(Scalar z) {
    if (z >= 0) {
        const Scalar e = std::exp(-z);
        return e / (1 + e);
    }
    return 1 / (1 + std::exp(z));
}

namespace detail {

// The ReLU loops of loss_and_residual and dual_step_coefficients on contiguous
// rows, branch-free: activation patterns are data, not predictable, and a
// compiler keeps the branch of a select whose value may raise an FP flag.
// Eight lanes of AVX-512F at simd::step_level() kAvx512, else two of SSE2 (every
// x86-64 CPU), compare and mask; the numbers are bitwise those of the scalar
// loops below (the same products and sums, elementwise, without FMA; an
// inactive entry contributes +0).

#if defined(RELUCORE_SIMD_DISPATCH)
// The AVX-512F parts of the loops below: the first n / 8 * 8 entries; returns that count.
__attribute__((target("avx512f"))) RELUCORE_NO_FP_CONTRACT inline Index add_scaled_relu_avx512(
    const Scalar* __restrict b, Scalar a, Scalar* __restrict h, Index n) {
    RELUCORE_NO_FP_CONTRACT_BODY
    const __m512d va = _mm512_set1_pd(a), zero = _mm512_setzero_pd();
    Index i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m512d u = _mm512_loadu_pd(b + i);
        const __m512d r = _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(u, zero, _CMP_GT_OS), u);
        _mm512_storeu_pd(h + i, _mm512_add_pd(_mm512_loadu_pd(h + i), _mm512_mul_pd(va, r)));
    }
    return i;
}

__attribute__((target("avx512f"))) inline Index masked_scale_avx512(const Scalar* __restrict b,
                                                                    const Scalar* __restrict g, Scalar a,
                                                                    Scalar* __restrict out, Index n) {
    const __m512d va = _mm512_set1_pd(a), zero = _mm512_setzero_pd();
    Index i = 0;
    for (; i + 8 <= n; i += 8) {
        const __mmask8 on = _mm512_cmp_pd_mask(_mm512_loadu_pd(b + i), zero, _CMP_GT_OS);
        _mm512_storeu_pd(out + i, _mm512_maskz_mul_pd(on, va, _mm512_loadu_pd(g + i)));
    }
    return i;
}

__attribute__((target("avx512f"))) inline Index add_to_avx512(Scalar* __restrict dst, const Scalar* __restrict src,
                                                              Index n) {
    Index i = 0;
    for (; i + 8 <= n; i += 8)
        _mm512_storeu_pd(dst + i, _mm512_add_pd(_mm512_loadu_pd(dst + i), _mm512_loadu_pd(src + i)));
    return i;
}
#endif

#if defined(RELUCORE_SIMD_DISPATCH)
// The AVX forms (four lanes; AVX, not FMA, so nothing can be contracted) of the three loops above.
__attribute__((target("avx"))) inline Index add_scaled_relu_avx(const Scalar* __restrict b, Scalar a,
                                                                Scalar* __restrict h, Index n) {
    const __m256d va = _mm256_set1_pd(a), zero = _mm256_setzero_pd();
    Index i = 0;
    for (; i + 4 <= n; i += 4) {
        const __m256d u = _mm256_loadu_pd(b + i);
        const __m256d r = _mm256_and_pd(_mm256_cmp_pd(u, zero, _CMP_GT_OS), u);
        _mm256_storeu_pd(h + i, _mm256_add_pd(_mm256_loadu_pd(h + i), _mm256_mul_pd(va, r)));
    }
    return i;
}

__attribute__((target("avx"))) inline Index masked_scale_avx(const Scalar* __restrict b, const Scalar* __restrict g,
                                                             Scalar a, Scalar* __restrict out, Index n) {
    const __m256d va = _mm256_set1_pd(a), zero = _mm256_setzero_pd();
    Index i = 0;
    for (; i + 4 <= n; i += 4) {
        const __m256d on = _mm256_cmp_pd(_mm256_loadu_pd(b + i), zero, _CMP_GT_OS);
        _mm256_storeu_pd(out + i, _mm256_and_pd(on, _mm256_mul_pd(va, _mm256_loadu_pd(g + i))));
    }
    return i;
}

__attribute__((target("avx"))) inline Index add_to_avx(Scalar* __restrict dst, const Scalar* __restrict src, Index n) {
    Index i = 0;
    for (; i + 4 <= n; i += 4)
        _mm256_storeu_pd(dst + i, _mm256_add_pd(_mm256_loadu_pd(dst + i), _mm256_loadu_pd(src + i)));
    return i;
}

// s[k] = sum_{i < n} relu(beta[k n + i]) g[i] (in increasing i, from +0) for k0 <= k < k0 + 4 H c:
// 4 H neurons at a time in H vectors of four lanes. Each block of 4 x 4 entries (4 neurons, 4
// examples) is loaded row by row and transposed, so that lane l adds neuron k + l's products
// one by one in increasing i, without FMA: the numbers of the scalar loop. The last n % 4
// examples are loaded one by one. Returns k0 + 4 H c, the first neuron not done. (Gathering the
// columns instead, eight lanes at a time on AVX-512, is slower.)
template <int H>
__attribute__((target("avx"))) RELUCORE_NO_FP_CONTRACT inline Index relu_dots_avx(const Scalar* __restrict beta,
                                                                                  Index n, Index k0, Index k1,
                                                                                  const Scalar* __restrict g,
                                                                                  Scalar* __restrict s) {
    RELUCORE_NO_FP_CONTRACT_BODY
    constexpr Index kNeurons = 4 * Index(H);
    const __m256d zero = _mm256_setzero_pd();
    Index k = k0;
    for (; k + kNeurons <= k1; k += kNeurons) {
        __m256d acc[static_cast<std::size_t>(H)];
        RELUCORE_UNROLL for (int h = 0; h < H; ++h) acc[h] = zero;
        const Scalar* rows = beta + k * n;
        Index i = 0;
        for (; i + 4 <= n; i += 4) {
            RELUCORE_UNROLL for (int h = 0; h < H; ++h) {
                const Scalar* b = rows + Index(4 * h) * n + i;
                const __m256d r0 = _mm256_loadu_pd(b), r1 = _mm256_loadu_pd(b + n);
                const __m256d r2 = _mm256_loadu_pd(b + 2 * n), r3 = _mm256_loadu_pd(b + 3 * n);
                const __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
                const __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
                const __m256d c[4] = {_mm256_permute2f128_pd(t0, t2, 0x20), _mm256_permute2f128_pd(t1, t3, 0x20),
                                      _mm256_permute2f128_pd(t0, t2, 0x31), _mm256_permute2f128_pd(t1, t3, 0x31)};
                RELUCORE_UNROLL for (int t = 0; t < 4; ++t) {
                    const __m256d u = _mm256_and_pd(_mm256_cmp_pd(c[t], zero, _CMP_GT_OS), c[t]);
                    acc[h] = _mm256_add_pd(acc[h], _mm256_mul_pd(u, _mm256_set1_pd(g[i + t])));
                }
            }
        }
        for (; i < n; ++i) RELUCORE_UNROLL for (int h = 0; h < H; ++h) {
                const Scalar* b = rows + Index(4 * h) * n + i;
                const __m256d c = _mm256_setr_pd(b[0], b[n], b[2 * n], b[3 * n]);
                const __m256d u = _mm256_and_pd(_mm256_cmp_pd(c, zero, _CMP_GT_OS), c);
                acc[h] = _mm256_add_pd(acc[h], _mm256_mul_pd(u, _mm256_set1_pd(g[i])));
            }
        RELUCORE_UNROLL for (int h = 0; h < H; ++h) _mm256_storeu_pd(s + k + Index(4 * h), acc[h]);
    }
    return k;
}
#endif

// dst[i] += src[i], i < n (an elementwise sum: the same numbers on every path).
inline void add_to(Scalar* __restrict dst, const Scalar* __restrict src, Index n) {
    Index i = 0;
#if defined(RELUCORE_SIMD_DISPATCH)
    const int level = simd::step_level();
    if (level >= simd::kAvx512)
        i = add_to_avx512(dst, src, n);
    else if (level >= simd::kAvx)
        i = add_to_avx(dst, src, n);
#endif
    for (; i < n; ++i) dst[i] += src[i];
}

// h[i] += a * relu(b[i]), i < n.
inline void add_scaled_relu(const Scalar* __restrict b, Scalar a, Scalar* __restrict h, Index n) {
    Index i = 0;
#if defined(RELUCORE_SIMD_DISPATCH)
    const int level = simd::step_level();
    if (level >= simd::kAvx512)
        i = add_scaled_relu_avx512(b, a, h, n);
    else if (level >= simd::kAvx)
        i = add_scaled_relu_avx(b, a, h, n);
#endif
#if defined(__SSE2__)
    const __m128d va = _mm_set1_pd(a), zero = _mm_setzero_pd();
    for (; i + 2 <= n; i += 2) {
        const __m128d u = _mm_loadu_pd(b + i);
        const __m128d r = _mm_and_pd(_mm_cmpgt_pd(u, zero), u);
        _mm_storeu_pd(h + i, _mm_add_pd(_mm_loadu_pd(h + i), _mm_mul_pd(va, r)));
    }
#endif
    for (; i < n; ++i) h[i] += a * (b[i] > 0 ? b[i] : Scalar(0));
}

// out[i] = b[i] > 0 ? a * g[i] : 0, i < n.
inline void masked_scale(const Scalar* __restrict b, const Scalar* __restrict g, Scalar a, Scalar* __restrict out,
                         Index n) {
    Index i = 0;
#if defined(RELUCORE_SIMD_DISPATCH)
    const int level = simd::step_level();
    if (level >= simd::kAvx512)
        i = masked_scale_avx512(b, g, a, out, n);
    else if (level >= simd::kAvx)
        i = masked_scale_avx(b, g, a, out, n);
#endif
#if defined(__SSE2__)
    const __m128d va = _mm_set1_pd(a), zero = _mm_setzero_pd();
    for (; i + 2 <= n; i += 2) {
        const __m128d mask = _mm_cmpgt_pd(_mm_loadu_pd(b + i), zero);
        _mm_storeu_pd(out + i, _mm_and_pd(mask, _mm_mul_pd(va, _mm_loadu_pd(g + i))));
    }
#endif
    for (; i < n; ++i) out[i] = b[i] > 0 ? a * g[i] : Scalar(0);
}

}  // namespace detail

// Adds the rows of beta (m x n pre-activations, neurons in increasing order)
// to the predictions: h_i += a_k phi(beta_{k,i}). Called on consecutive blocks
// of neurons in increasing order, it sums exactly as on the whole matrix.
template <class Beta, class Outer, class H>
void add_predictions(const Beta& beta, const Outer& outer, const ModelSpec& spec, H& h) {
    const Index m = beta.rows();
    const Index n = beta.cols();
    for (Index k = 0; k < m; ++k) {
        const Scalar a = outer[k];
        // The ReLU case is written without a call and on raw pointers (rows of
        // beta are contiguous) so that it compiles to branch-free, vectorised
        // selects: activation patterns are data, not predictable.
        if (spec.activation == Activation::relu) {
            detail::add_scaled_relu(beta.row(k).data(), a, h.data(), n);
        } else {
            for (Index i = 0; i < n; ++i) h[i] += a * activate(beta(k, i), spec);
        }
    }
}

// Given the predictions h (n), fills g (n) with dLoss/dh and returns the loss.
//   square:   L = 1/2 sum_i (h_i - y_i)^2,            g = h - y
//   logistic: L = 1/n sum_i log(1 + exp(-y_i h_i)),   g_i = -(y_i/n) / (1 + exp(y_i h_i))
template <class H, class Labels, class G>
Scalar loss_from_predictions(const H& h, const Labels& y, const ModelSpec& spec, G& g) {
    const Index n = h.size();
    Scalar loss = 0;
    if (spec.loss == Loss::square) {
        for (Index i = 0; i < n; ++i) {
            g[i] = h[i] - y[i];
            loss += g[i] * g[i];
        }
        return loss / 2;
    }
    const Scalar inv_n = Scalar(1) / static_cast<Scalar>(n);
    for (Index i = 0; i < n; ++i) {
        const Scalar z = y[i] * h[i];
        loss += softplus_neg(z);
        g[i] = -y[i] * inv_n * sigmoid_neg(z);
    }
    return loss * inv_n;
}

// loss_from_predictions() with per-example loss weights w (n entries, >= 0; null: every weight 1):
//   square:   L = 1/2 sum_i w_i (h_i - y_i)^2,          g_i = w_i (h_i - y_i)
//   logistic: L = 1/n sum_i w_i log(1 + exp(-y_i h_i)), g_i = -(w_i y_i/n) / (1 + exp(y_i h_i))
// The square loss's reductions "sum" (w_i = 2 v_i) and "mean" (w_i = 2 v_i / n) of example
// weights v are weights of this form (docs/math.md, loss reductions and example weights).
template <class H, class Labels, class G>
Scalar weighted_loss_from_predictions(const H& h, const Labels& y, const ModelSpec& spec, const Scalar* w, G& g) {
    if (w == nullptr) return loss_from_predictions(h, y, spec, g);
    const Index n = h.size();
    Scalar loss = 0;
    if (spec.loss == Loss::square) {
        for (Index i = 0; i < n; ++i) {
            const Scalar r = h[i] - y[i];
            g[i] = w[i] * r;
            loss += g[i] * r;
        }
        return loss / 2;
    }
    const Scalar inv_n = Scalar(1) / static_cast<Scalar>(n);
    for (Index i = 0; i < n; ++i) {
        const Scalar z = y[i] * h[i];
        loss += w[i] * softplus_neg(z);
        g[i] = -y[i] * w[i] * inv_n * sigmoid_neg(z);
    }
    return loss * inv_n;
}

// Given the neurons' pre-activations beta (m x n) and the outer weights a (m),
// fills h (n) with the predictions and g (n) with dLoss/dh, and returns the loss
// (add_predictions, then loss_from_predictions). The loop order is fixed, so the
// result is bitwise reproducible.
template <class Beta, class Outer, class Labels, class H, class G>
Scalar loss_and_residual(const Beta& beta, const Outer& outer, const Labels& y, const ModelSpec& spec, H& h, G& g) {
    for (Index i = 0; i < beta.cols(); ++i) h[i] = 0;
    add_predictions(beta, outer, spec, h);
    return loss_from_predictions(h, y, spec, g);
}

// Per-neuron, per-example coefficient of the gradient in the data span:
//   dR/dw_k = sum_i u_{k,i} x_i  with  u_{k,i} = a_k phi'(beta_{k,i}) g_i.
// Writes coeff(k, i) = -eta * u_{k,i}, the change of alpha_k in one GD step.
template <class Beta, class Outer, class G, class Out>
void dual_step_coefficients(const Beta& beta, const Outer& outer, const G& g, Scalar eta, const ModelSpec& spec,
                            Out& coeff) {
    const Index m = beta.rows();
    const Index n = beta.cols();
    if (spec.activation == Activation::relu && n == 1) {
        // One example (a single-sample step): down the column, masked_scale's numbers without a call per neuron.
        for (Index k = 0; k < m; ++k) coeff(k, 0) = beta(k, 0) > 0 ? (-eta * outer[k]) * g[0] : Scalar(0);
        return;
    }
    for (Index k = 0; k < m; ++k) {
        const Scalar a = -eta * outer[k];
        if (spec.activation == Activation::relu) {
            detail::masked_scale(beta.row(k).data(), g.data(), a, coeff.row(k).data(), n);
        } else {
            for (Index i = 0; i < n; ++i) coeff(k, i) = a * activate_slope(beta(k, i), spec) * g[i];
        }
    }
}

// The outer layer's gradient sums of the neurons k0 <= k < k1 whose
// pre-activations are the rows of beta (n entries each, contiguous):
//   s[k] = sum_i phi(beta_{k,i}) g_i   (in increasing i, from +0).
// ReLU: sixteen neurons at a time, then four, on AVX (detail::relu_dots_avx),
// then four at a time (four independent chains of sums, so the additions
// overlap), then one by one: bitwise the one-by-one loop on every path.
inline void outer_gradient_sums(const Scalar* beta, Index n, Index k0, Index k1, const Scalar* g, const ModelSpec& spec,
                                Scalar* s) {
    Index k = k0;
    if (spec.activation == Activation::relu) {
#if defined(RELUCORE_SIMD_DISPATCH)
        const int level = simd::step_level();
        if (level >= simd::kAvx)
            k = detail::relu_dots_avx<1>(beta, n, detail::relu_dots_avx<4>(beta, n, k0, k1, g, s), k1, g, s);
#endif
        for (; k + 4 <= k1; k += 4) {
            Scalar t[4] = {0, 0, 0, 0};
            for (Index i = 0; i < n; ++i) {
                const Scalar gi = g[i];
                for (Index l = 0; l < 4; ++l) {
                    const Scalar u = beta[(k + l) * n + i];
                    t[l] += (u > 0 ? u : Scalar(0)) * gi;
                }
            }
            for (Index l = 0; l < 4; ++l) s[k + l] = t[l];
        }
    }
    for (; k < k1; ++k) {
        Scalar t = 0;
        for (Index i = 0; i < n; ++i) t += activate(beta[k * n + i], spec) * g[i];
        s[k] = t;
    }
}

inline Activation parse_activation(const std::string& name) {
    for (const ActivationTraits& t : activation_table)
        if (name == t.name) return t.activation;
    throw std::invalid_argument("unknown activation '" + name + "'");
}

inline Reduction parse_reduction(const std::string& name) {
    if (name == "half_sum") return Reduction::half_sum;
    if (name == "sum") return Reduction::sum;
    if (name == "mean") return Reduction::mean;
    throw std::invalid_argument("unknown reduction '" + name + "'");
}

inline Loss parse_loss(const std::string& name) {
    for (const LossTraits& t : loss_table)
        if (name == t.name) return t.loss;
    throw std::invalid_argument("unknown loss '" + name + "'");
}

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
