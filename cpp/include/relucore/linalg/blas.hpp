// Dense kernels behind one header: the symmetric rank update K += X X^T
// (syrk), the product W += C X (gemm_add) on row-major views, and the two
// products of a weight-space GD step, beta = W X^T (gemm_nt) and G = C X
// (gemm).
//
// Each call goes to an optimised BLAS when one is registered (register_blas())
// and the product is large enough for it to win (defaults.hpp: blas_syrk_min_rows,
// blas_gemm_min_rows, blas_gemm_min_data, blas_product_min_work; a rule of the
// sizes alone), and to
// relucore's own kernels otherwise, so a C++ program that embeds the
// headers without any BLAS builds and runs unchanged. The Python package
// registers, on the first call that forms K or W, the BLAS that scipy loads
// (scipy.linalg.cython_blas; relucore/_core's bind_blas.cpp).
//
// Threads: relucore parallelises over independent problems (core/parallel.hpp)
// and a BLAS call runs on one thread. While any call is in flight the
// registered library's own pool is set to one thread (when the registration
// gives its thread-count functions) and put back when the last one returns,
// so the BLAS never multiplies the threads the caller asked for, and a result
// is the same whatever the thread count.
//
// Rounding: the built-in kernels and each BLAS order their sums differently,
// and a BLAS picks its kernel for the CPU it runs on; K and W agree between
// them to rounding, and may differ in the last bits between CPUs with
// different instruction sets. On one machine with one library a result is
// always the same.
//
// Built-in kernels: on x86-64 with AVX2 and FMA (chosen at run time, see
// simd.hpp) dot products of 4 x 2 blocks of rows for syrk and 8 independent
// 4-double sums per block of 32 columns for gemm; elsewhere, and with
// RELUCORE_NO_SIMD_DISPATCH, Eigen's rank update and plain loops.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/types.hpp"
#include "relucore/defaults.hpp"
#include "relucore/simd.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <atomic>
#include <climits>
#include <mutex>
#include <vector>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

namespace blas {

// The Fortran interface with 32-bit integers (LP64), every argument by
// pointer, as scipy.linalg.cython_blas exports it.
using dgemm_fn = void (*)(char* transa, char* transb, int* m, int* n, int* k, double* alpha, double* a, int* lda,
                          double* b, int* ldb, double* beta, double* c, int* ldc);
using dsyrk_fn = void (*)(char* uplo, char* trans, int* n, int* k, double* alpha, double* a, int* lda, double* beta,
                          double* c, int* ldc);
using set_threads_fn = void (*)(int);
using get_threads_fn = int (*)();

/// A BLAS to dispatch to. set_threads/get_threads (may be null) control the
/// library's own thread pool; without them the library is taken to run each
/// call on the calling thread.
struct Library {
    dgemm_fn dgemm = nullptr;
    dsyrk_fn dsyrk = nullptr;
    set_threads_fn set_threads = nullptr;
    get_threads_fn get_threads = nullptr;
};

namespace detail {

struct State {
    std::atomic<const Library*> library{nullptr};
    std::mutex mutex;
    int users = 0;
    int saved_threads = 0;
    const Library* limited = nullptr;
};

inline State& state() {
    static State s;
    return s;
}

inline bool fits_int(Index v) {
    return v >= 0 && v <= Index(INT_MAX);
}

}  // namespace detail

/// Makes `lib` (which must outlive its registration; nullptr: none) the BLAS
/// that later calls use. Calls already running finish on the previous one.
inline void register_blas(const Library* lib) {
    detail::state().library.store(lib, std::memory_order_release);
}

/// The registered BLAS, or nullptr when the built-in kernels are used.
inline const Library* registered_blas() {
    return detail::state().library.load(std::memory_order_acquire);
}

/// While alive, the registered BLAS's pool runs one thread (nests; the count
/// found when the first guard started is restored when the last one ends).
class SingleThreaded {
public:
    SingleThreaded() {
        const Library* lib = registered_blas();
        if (lib == nullptr || lib->set_threads == nullptr || lib->get_threads == nullptr) return;
        detail::State& s = detail::state();
        std::lock_guard<std::mutex> lock(s.mutex);
        if (s.users++ == 0) {
            s.limited = lib;
            s.saved_threads = lib->get_threads();
            if (s.saved_threads != 1) lib->set_threads(1);
        }
        active_ = true;
    }
    ~SingleThreaded() {
        if (!active_) return;
        detail::State& s = detail::state();
        std::lock_guard<std::mutex> lock(s.mutex);
        if (--s.users == 0 && s.saved_threads != 1) s.limited->set_threads(s.saved_threads);
    }
    SingleThreaded(const SingleThreaded&) = delete;
    SingleThreaded& operator=(const SingleThreaded&) = delete;

private:
    bool active_ = false;
};

namespace detail {

#if defined(RELUCORE_SIMD_DISPATCH)
__attribute__((target("avx2,fma"))) inline double hsum256(__m256d v) {
    const __m128d lo = _mm256_castpd256_pd128(v);
    const __m128d hi = _mm256_extractf128_pd(v, 1);
    const __m128d s = _mm_add_pd(lo, hi);
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

// K(i0 + r, j0 + c) += <x_{i0+r}, x_{j0+c}> over columns [c0, c1) for the
// R x C block of rows (R <= 4, C <= 2); the column count is a multiple of 4.
template <int R, int C>
__attribute__((target("avx2,fma"))) inline void syrk_block_avx2(const double* X, Index ld, Index i0, Index j0, Index c0,
                                                                Index c1, double* K, Index ldk) {
    __m256d acc[array_extent<R>][array_extent<C>];
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_pd();
    const double* xi[array_extent<R>];
    const double* xj[array_extent<C>];
    for (int r = 0; r < R; ++r) xi[r] = X + (i0 + r) * ld;
    for (int c = 0; c < C; ++c) xj[c] = X + (j0 + c) * ld;
    for (Index t = c0; t < c1; t += 4) {
        __m256d b[array_extent<C>];
        for (int c = 0; c < C; ++c) b[c] = _mm256_loadu_pd(xj[c] + t);
        for (int r = 0; r < R; ++r) {
            const __m256d a = _mm256_loadu_pd(xi[r] + t);
            for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_pd(a, b[c], acc[r][c]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) K[(i0 + r) * ldk + j0 + c] += hsum256(acc[r][c]);
}

// Rows i0 .. i0 + R - 1 against columns j < i0 + R: their lower triangle (and
// a few upper entries of the diagonal block, which callers never read).
template <int R>
__attribute__((target("avx2,fma"))) inline void syrk_rows_avx2(const double* X, Index ld, Index i0, Index c0, Index c1,
                                                               double* K, Index ldk) {
    const Index jend = i0 + R;
    Index j0 = 0;
    for (; j0 + 2 <= jend; j0 += 2) syrk_block_avx2<R, 2>(X, ld, i0, j0, c0, c1, K, ldk);
    if (j0 < jend) syrk_block_avx2<R, 1>(X, ld, i0, j0, c0, c1, K, ldk);
}

// K(lower) += X[:, c0:c1] X[:, c0:c1]^T, the columns in chunks of ~1 MiB of X
// (a chunk is read from cache by every block), the last (c1 - c0) mod 4
// columns by plain sums.
__attribute__((target("avx2,fma"))) inline void syrk_avx2(const double* x, Index ld, Index n, Index c0, Index c1,
                                                          double* k, Index ldk) {
    const Index chunk = std::max<Index>(64, (Index(131072) / std::max<Index>(n, 1)) / 4 * 4);
    const Index c4 = c0 + (c1 - c0) / 4 * 4;
    for (Index a = c0; a < c4; a += chunk) {
        const Index b = std::min(c4, a + chunk);
        Index i0 = 0;
        for (; i0 + 4 <= n; i0 += 4) syrk_rows_avx2<4>(x, ld, i0, a, b, k, ldk);
        switch (n - i0) {
            case 3:
                syrk_rows_avx2<3>(x, ld, i0, a, b, k, ldk);
                break;
            case 2:
                syrk_rows_avx2<2>(x, ld, i0, a, b, k, ldk);
                break;
            case 1:
                syrk_rows_avx2<1>(x, ld, i0, a, b, k, ldk);
                break;
            default:
                break;
        }
    }
    for (Index i = 0; i < n; ++i)
        for (Index j = 0; j <= i; ++j) {
            double s = 0;
            for (Index t = c4; t < c1; ++t) s += x[i * ld + t] * x[j * ld + t];
            k[i * ldk + j] += s;
        }
}

// One sweep of gemm_avx2: the rows [i0, i1) of X added into W over the
// columns [t0, t1), a multiple of 4 * L wide.
template <int L>
__attribute__((target("avx2,fma"))) inline void gemm_avx2_sweep(const double* C, Index ldc, const double* X, Index ldx,
                                                                double* W, Index ldw, Index m, Index i0, Index i1,
                                                                Index t0, Index t1) {
    constexpr Index width = 4 * Index{L};  // doubles per iteration
    for (Index t = t0; t < t1; t += width) {
        for (Index k = 0; k < m; k += 2) {
            const bool two = k + 1 < m;
            const double* c0 = C + k * ldc;
            const double* c1 = two ? c0 + ldc : c0;
            double* w0 = W + k * ldw + t;
            double* w1 = two ? w0 + ldw : w0;
            __m256d acc0[array_extent<L>], acc1[array_extent<L>];
            for (Index l = 0; l < L; ++l) {
                acc0[l] = _mm256_loadu_pd(w0 + 4 * l);
                acc1[l] = _mm256_loadu_pd(w1 + 4 * l);
            }
            for (Index i = i0; i < i1; ++i) {
                const __m256d a = _mm256_set1_pd(c0[i]), b = _mm256_set1_pd(c1[i]);
                const double* xi = X + i * ldx + t;
                for (Index l = 0; l < L; ++l) {
                    const __m256d x = _mm256_loadu_pd(xi + 4 * l);
                    acc0[l] = _mm256_fmadd_pd(a, x, acc0[l]);
                    if (two) acc1[l] = _mm256_fmadd_pd(b, x, acc1[l]);
                }
            }
            // An odd last row goes alone (c1 and w1 repeat it, unused).
            for (Index l = 0; l < L; ++l) {
                _mm256_storeu_pd(w0 + 4 * l, acc0[l]);
                if (two) _mm256_storeu_pd(w1 + 4 * l, acc1[l]);
            }
        }
    }
}

// Rows of X per sweep of gemm_avx2 where X has more than gemm_sweep_rows_max
// rows: a sweep reads that many rows of X side by side, and the hardware
// prefetchers follow a few such streams, not a hundred (a block of columns of
// a tall X touches one short piece of each row, far apart, so where X is not
// in the cache every piece would wait for memory).
constexpr Index gemm_sweep_rows = 8;
constexpr Index gemm_sweep_rows_max = 16;

// W (m x d) += C (m x n) X (n x d) over the columns [t0, d), a multiple of
// 4 * L wide from t0 on. The rows of X are taken in sweeps of
// gemm_sweep_rows (all of them where n <= gemm_sweep_rows_max); within a
// sweep each block of columns is read from X once for all the rows of W: two
// rows of W per pass over it (2 L independent 4-lane sums, so that the chains
// of fused multiply-adds overlap), the block staying in the L1 cache for the
// next pair. Every entry of W still sums its terms in increasing i onto its
// value, one fused multiply-add each, whatever the sweeps. Returns the first
// column left.
template <int L>
__attribute__((target("avx2,fma"))) inline Index gemm_avx2(const double* C, Index ldc, const double* X, Index ldx,
                                                           double* W, Index ldw, Index m, Index n, Index t0, Index d) {
    constexpr Index width = 4 * Index{L};  // doubles per iteration
    const Index t1 = t0 + (d - t0) / width * width;
    const Index rows = n <= gemm_sweep_rows_max ? n : gemm_sweep_rows;
    for (Index i0 = 0; i0 < n; i0 += rows) {
        const Index i1 = std::min(n, i0 + rows);
        gemm_avx2_sweep<L>(C, ldc, X, ldx, W, ldw, m, i0, i1, t0, t1);
    }
    return t1;
}
#endif

// The built-in symmetric rank update (see syrk_lower_add).
inline void syrk_builtin(const double* x, Index ld, Index n, Index c0, Index c1, double* k, Index ldk) {
#if defined(RELUCORE_SIMD_DISPATCH)
    if (simd::has_avx2_fma() && c1 - c0 >= 4) {
        syrk_avx2(x, ld, n, c0, c1, k, ldk);
        return;
    }
#endif
    using View = Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>>;
    Eigen::Map<RowMatrix, 0, Eigen::OuterStride<>> K(k, n, n, Eigen::OuterStride<>(ldk));
    K.selfadjointView<Eigen::Lower>().rankUpdate(View(x + c0, n, c1 - c0, Eigen::OuterStride<>(ld)));
}

// The built-in product (see gemm_add): every output entry sums its n terms in
// increasing i onto the value already in W.
inline void gemm_builtin(const double* c, Index ldc, const double* x, Index ldx, double* w, Index ldw, Index m, Index n,
                         Index d) {
    Index t0 = 0;
#if defined(RELUCORE_SIMD_DISPATCH)
    if (simd::has_avx2_fma()) {
        t0 = gemm_avx2<4>(c, ldc, x, ldx, w, ldw, m, n, 0, d);
        t0 = gemm_avx2<1>(c, ldc, x, ldx, w, ldw, m, n, t0, d);
    }
#endif
    for (Index k = 0; k < m; ++k)
        for (Index t = t0; t < d; ++t) {
            double s = w[k * ldw + t];
            for (Index i = 0; i < n; ++i) s += c[k * ldc + i] * x[i * ldx + t];
            w[k * ldw + t] = s;
        }
}

}  // namespace detail

/// K(lower triangle) += A A^T for the n x (c1 - c0) block A = columns [c0, c1)
/// of the row-major x (row stride ld); K is n x n row-major (row stride ldk).
/// Entries above the diagonal are unspecified afterwards (the built-in kernel
/// writes a few of them); callers mirror the lower triangle.
inline void syrk_lower_add(const double* x, Index ld, Index n, Index c0, Index c1, double* k, Index ldk) {
    if (n <= 0 || c1 <= c0) return;
    const Library* lib = registered_blas();
    if (lib != nullptr && lib->dsyrk != nullptr && n >= defaults::blas_syrk_min_rows && detail::fits_int(n) &&
        detail::fits_int(c1 - c0) && detail::fits_int(ld) && detail::fits_int(ldk)) {
        // Row-major A (n x w) is column-major A^T (w x n, leading dimension
        // ld), and the lower triangle of row-major K is the upper one of K
        // column-major: C := A'^T A' + C with A' = A^T, uplo 'U', trans 'T'.
        SingleThreaded one_thread;
        char uplo = 'U', trans = 'T';
        int nn = static_cast<int>(n), kk = static_cast<int>(c1 - c0), lda = static_cast<int>(ld),
            ldc = static_cast<int>(ldk);
        double alpha = 1, beta = 1;
        lib->dsyrk(&uplo, &trans, &nn, &kk, &alpha, const_cast<double*>(x + c0), &lda, &beta, k, &ldc);
        return;
    }
    detail::syrk_builtin(x, ld, n, c0, c1, k, ldk);
}

/// K(lower triangle) += X X^T on Eigen views (X n x d, K n x n).
inline void syrk_lower_add(const ConstMatrixRef& X, MatrixRef K) {
    syrk_lower_add(X.data(), X.outerStride(), X.rows(), 0, X.cols(), K.data(), K.outerStride());
}

/// W += C X for C (m x n), X (n x d), W (m x d), all row-major.
inline void gemm_add(const ConstMatrixRef& C, const ConstMatrixRef& X, MatrixRef W) {
    const Index m = C.rows(), n = C.cols(), d = X.cols();
    if (m <= 0 || n <= 0 || d <= 0) return;
    const Library* lib = registered_blas();
    const bool large = m >= defaults::blas_gemm_min_rows || n * d >= defaults::blas_gemm_min_data;
    if (lib != nullptr && lib->dgemm != nullptr && large && detail::fits_int(m) && detail::fits_int(n) &&
        detail::fits_int(d) && detail::fits_int(C.outerStride()) && detail::fits_int(X.outerStride()) &&
        detail::fits_int(W.outerStride())) {
        // Column-major: W^T (d x m) += X^T (d x n) C^T (n x m).
        SingleThreaded one_thread;
        char no = 'N';
        int mm = static_cast<int>(d), nn = static_cast<int>(m), kk = static_cast<int>(n),
            lda = static_cast<int>(X.outerStride()), ldb = static_cast<int>(C.outerStride()),
            ldc = static_cast<int>(W.outerStride());
        double alpha = 1, beta = 1;
        lib->dgemm(&no, &no, &mm, &nn, &kk, &alpha, const_cast<double*>(X.data()), &lda, const_cast<double*>(C.data()),
                   &ldb, &beta, W.data(), &ldc);
        return;
    }
    detail::gemm_builtin(C.data(), C.outerStride(), X.data(), X.outerStride(), W.data(), W.outerStride(), m, n, d);
}

/// Whether a weight-space product with `rows` output rows (neurons) and
/// rows * inner * cols multiply-adds is large enough for a BLAS (the size part
/// of the rule of gemm_nt and gemm; engine="auto" reads it too).
inline bool products_use_blas_by_size(Index rows, Index inner, Index cols) {
    return rows >= defaults::blas_gemm_min_rows &&
           double(rows) * double(inner) * double(cols) >= double(defaults::blas_product_min_work);
}

namespace detail {

// Whether such a product goes to the registered BLAS (which then exists).
inline bool product_uses_blas(const Library* lib, Index rows, Index inner, Index cols) {
    return lib != nullptr && lib->dgemm != nullptr && products_use_blas_by_size(rows, inner, cols) && fits_int(rows) &&
           fits_int(inner) && fits_int(cols);
}

}  // namespace detail

/// C = A B^T for A (m x k), B (n x k), C (m x n), all row-major; C is
/// overwritten (beta = W X^T of the weight engine). Through the registered
/// BLAS when detail::product_uses_blas; otherwise one matrix-vector product
/// B a_r per row r of A (Eigen's; the weight engine's results below the
/// threshold are bitwise those of its earlier per-neuron loop).
inline void gemm_nt(const ConstMatrixRef& A, const ConstMatrixRef& B, MatrixRef C) {
    const Index m = A.rows(), n = B.rows(), k = A.cols();
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {
        C.setZero();
        return;
    }
    const Library* lib = registered_blas();
    if (detail::product_uses_blas(lib, m, k, n) && detail::fits_int(A.outerStride()) &&
        detail::fits_int(B.outerStride()) && detail::fits_int(C.outerStride())) {
        // Column-major: C^T (n x m) = B (n x k) A^T (k x m); row-major B is
        // column-major B^T (k x n), hence 'T' on it, and row-major A is A^T.
        SingleThreaded one_thread;
        char t = 'T', no = 'N';
        int mm = static_cast<int>(n), nn = static_cast<int>(m), kk = static_cast<int>(k),
            lda = static_cast<int>(B.outerStride()), ldb = static_cast<int>(A.outerStride()),
            ldc = static_cast<int>(C.outerStride());
        double alpha = 1, beta = 0;
        lib->dgemm(&t, &no, &mm, &nn, &kk, &alpha, const_cast<double*>(B.data()), &lda, const_cast<double*>(A.data()),
                   &ldb, &beta, C.data(), &ldc);
        return;
    }
    for (Index r = 0; r < m; ++r) C.row(r).transpose().noalias() = B * A.row(r).transpose();
}

/// W = C X for C (m x n), X (n x d), W (m x d), all row-major; W is
/// overwritten (the weight engine's step G = (mask o r) X). Through the
/// registered BLAS when detail::product_uses_blas; otherwise one
/// vector-matrix product c_r X per row (Eigen's, bitwise the engine's earlier
/// loop).
inline void gemm(const ConstMatrixRef& C, const ConstMatrixRef& X, MatrixRef W) {
    const Index m = C.rows(), n = C.cols(), d = X.cols();
    if (m <= 0 || d <= 0) return;
    if (n <= 0) {
        W.setZero();
        return;
    }
    const Library* lib = registered_blas();
    if (detail::product_uses_blas(lib, m, n, d) && detail::fits_int(C.outerStride()) &&
        detail::fits_int(X.outerStride()) && detail::fits_int(W.outerStride())) {
        // Column-major: W^T (d x m) = X^T (d x n) C^T (n x m).
        SingleThreaded one_thread;
        char no = 'N';
        int mm = static_cast<int>(d), nn = static_cast<int>(m), kk = static_cast<int>(n),
            lda = static_cast<int>(X.outerStride()), ldb = static_cast<int>(C.outerStride()),
            ldc = static_cast<int>(W.outerStride());
        double alpha = 1, beta = 0;
        lib->dgemm(&no, &no, &mm, &nn, &kk, &alpha, const_cast<double*>(X.data()), &lda, const_cast<double*>(C.data()),
                   &ldb, &beta, W.data(), &ldc);
        return;
    }
    for (Index r = 0; r < m; ++r) W.row(r).noalias() = C.row(r) * X;
}

}  // namespace blas

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
