// linalg/blas.hpp: the built-in kernels against long-double sums written
// here, and the dispatch to a registered BLAS, checked with a reference BLAS
// of this file (plain column-major loops with the Fortran interface), so that
// the argument mapping (row-major views as transposed column-major ones,
// strides, column offsets, uplo) is tested without any system BLAS.
#include "check.hpp"
#include "problems.hpp"

#include "relucore/linalg/blas.hpp"
#include "relucore/random/fused_gram.hpp"

#include <cmath>
#include <random>

using namespace relucore;
using namespace relucore_test;

namespace {

int syrk_calls = 0, gemm_calls = 0, pool = 4, pool_seen_in_call = 0;

// C := alpha op(A)^... as the reference BLAS defines them (column-major).
void ref_dsyrk(char* uplo, char* trans, int* n, int* k, double* alpha, double* a, int* lda, double* beta, double* c,
               int* ldc) {
    ++syrk_calls;
    pool_seen_in_call = pool;
    for (int j = 0; j < *n; ++j)
        for (int i = 0; i < *n; ++i) {
            if ((*uplo == 'U') != (i <= j)) continue;
            long double s = 0;
            for (int l = 0; l < *k; ++l) {
                // op(A) = A (n x k) for 'N', A^T (A is k x n) for 'T'; C = op(A) op(A)^T.
                const double ail = *trans == 'N' ? a[i + l * *lda] : a[l + i * *lda];
                const double ajl = *trans == 'N' ? a[j + l * *lda] : a[l + j * *lda];
                s += static_cast<long double>(ail) * ajl;
            }
            c[i + j * *ldc] = static_cast<double>(*alpha * s + *beta * static_cast<long double>(c[i + j * *ldc]));
        }
}

void ref_dgemm(char* ta, char* tb, int* m, int* n, int* k, double* alpha, double* a, int* lda, double* b, int* ldb,
               double* beta, double* c, int* ldc) {
    ++gemm_calls;
    pool_seen_in_call = pool;
    for (int j = 0; j < *n; ++j)
        for (int i = 0; i < *m; ++i) {
            long double s = 0;
            for (int l = 0; l < *k; ++l) {
                const double ail = *ta == 'N' ? a[i + l * *lda] : a[l + i * *lda];
                const double blj = *tb == 'N' ? b[l + j * *ldb] : b[j + l * *ldb];
                s += static_cast<long double>(ail) * blj;
            }
            c[i + j * *ldc] = static_cast<double>(*alpha * s + *beta * static_cast<long double>(c[i + j * *ldc]));
        }
}

void set_pool(int t) {
    pool = t;
}
int get_pool() {
    return pool;
}

// K = X X^T and the scale sum_t |x_it| |x_jt| that bounds its rounding error.
void reference_gram(const RowMatrix& X, RowMatrix& K, RowMatrix& scale) {
    const Index n = X.rows();
    K.resize(n, n);
    scale.resize(n, n);
    for (Index i = 0; i < n; ++i)
        for (Index j = 0; j < n; ++j) {
            long double s = 0, a = 0;
            for (Index t = 0; t < X.cols(); ++t) {
                s += static_cast<long double>(X(i, t)) * X(j, t);
                a += std::abs(static_cast<long double>(X(i, t)) * X(j, t));
            }
            K(i, j) = static_cast<double>(s);
            scale(i, j) = static_cast<double>(a);
        }
}

// |K - ref| <= 1e-13 scale entrywise (d eps <= 1e-13 for the sizes here).
bool gram_close(const RowMatrix& K, const RowMatrix& ref, const RowMatrix& scale) {
    return ((K - ref).array().abs() <= 1e-13 * scale.array()).all() && K == K.transpose();
}

const blas::Library reference_library{&ref_dgemm, &ref_dsyrk, &set_pool, &get_pool};

}  // namespace

TEST_CASE("gram_matrix, built-in and through a registered BLAS, matches long-double sums") {
    std::mt19937_64 gen(7);
    for (const Index d : {1, 3, 4, 5, 37, 300}) {
        for (const Index n : {1, 5, 13, 31, 32, 40}) {
            const RowMatrix X = gaussian(n, d, gen);
            RowMatrix ref, scale;
            reference_gram(X, ref, scale);
            blas::register_blas(nullptr);
            const RowMatrix Kb = gram_matrix(X);
            CHECK(gram_close(Kb, ref, scale));
            blas::register_blas(&reference_library);
            const int calls = syrk_calls;
            const RowMatrix Kr = gram_matrix(X);
            CHECK(syrk_calls == calls + (n >= defaults::blas_syrk_min_rows ? 1 : 0));
            CHECK(gram_close(Kr, ref, scale));
            blas::register_blas(nullptr);
        }
    }
}

TEST_CASE("syrk_lower_add on a column block of a strided view accumulates onto K") {
    std::mt19937_64 gen(8);
    const Index n = 35;
    const RowMatrix big = gaussian(n, 50, gen);
    for (const blas::Library* lib : {static_cast<const blas::Library*>(nullptr), &reference_library}) {
        blas::register_blas(lib);
        RowMatrix K = RowMatrix::Constant(n, n, 0.5);
        const int calls = syrk_calls;
        blas::syrk_lower_add(big.data(), big.cols(), n, 10, 31, K.data(), K.cols());
        CHECK(syrk_calls == calls + (lib != nullptr ? 1 : 0));
        RowMatrix ref, scale;
        reference_gram(big.middleCols(10, 21), ref, scale);
        for (Index i = 0; i < n; ++i)
            for (Index j = 0; j <= i; ++j) CHECK(std::abs(K(i, j) - 0.5 - ref(i, j)) <= 1e-13 * (scale(i, j) + 0.5));
    }
    blas::register_blas(nullptr);
}

TEST_CASE("add_row_combination (GEMM) on strided views, built-in and BLAS, matches long-double sums") {
    std::mt19937_64 gen(9);
    for (const Index m : {3, 4}) {
        const Index n = 6, d = m == 3 ? 33 : 101;
        const RowMatrix Cbig = gaussian(m, n + 2, gen), Xbig = gaussian(n, d + 3, gen), W0 = gaussian(m, d, gen);
        const auto C = Cbig.leftCols(n);
        const auto X = Xbig.rightCols(d);
        RowMatrix ref(m, d);
        RowMatrix scale(m, d);
        for (Index k = 0; k < m; ++k)
            for (Index t = 0; t < d; ++t) {
                long double s = W0(k, t), a = std::abs(W0(k, t));
                for (Index i = 0; i < n; ++i) {
                    s += static_cast<long double>(C(k, i)) * X(i, t);
                    a += std::abs(static_cast<long double>(C(k, i)) * X(i, t));
                }
                ref(k, t) = static_cast<double>(s);
                scale(k, t) = static_cast<double>(a);
            }
        for (const blas::Library* lib : {static_cast<const blas::Library*>(nullptr), &reference_library}) {
            blas::register_blas(lib);
            RowMatrix Wbig = RowMatrix::Zero(m, d + 4);
            Wbig.leftCols(d) = W0;
            Eigen::Ref<RowMatrix> W = Wbig.leftCols(d);
            const int calls = gemm_calls;
            add_row_combination(C, X, W);
            const bool large = m >= defaults::blas_gemm_min_rows || n * d >= defaults::blas_gemm_min_data;
            CHECK(gemm_calls == calls + (lib != nullptr && large ? 1 : 0));
            CHECK(((W - ref).array().abs() <= 1e-14 * scale.array()).all());
            CHECK(Wbig.rightCols(4).isZero(0));
        }
    }
    blas::register_blas(nullptr);
}

TEST_CASE("the built-in GEMM over more rows than one sweep adds every term in increasing i, one FMA each") {
    // n > detail::gemm_sweep_rows_max: the rows of X are taken in sweeps, and each entry of W must still be
    // the chain fma(C(k, n-1), X(n-1, t), ... fma(C(k, 0), X(0, t), W0(k, t))) where the AVX2 kernel runs
    // (d a multiple of 4: every column is in a vector block), within the dot-product bound elsewhere.
    std::mt19937_64 gen(17);
    blas::register_blas(nullptr);
    for (const Index m : {1, 2, 3})
        for (const Index n : {17, 37}) {
            const Index d = 52;
            const RowMatrix C = gaussian(m, n, gen), X = gaussian(n, d, gen), W0 = gaussian(m, d, gen);
            RowMatrix W = W0;
            add_row_combination(C, X, W);
            RowMatrix ref = W0;
            for (Index k = 0; k < m; ++k)
                for (Index t = 0; t < d; ++t)
                    for (Index i = 0; i < n; ++i) ref(k, t) = std::fma(C(k, i), X(i, t), ref(k, t));
            if (simd::has_avx2_fma()) {
                CHECK(W == ref);
            } else {
                CHECK(((W - ref).array().abs() <= 1e-14 * (W0.array().abs() + (C.cwiseAbs() * X.cwiseAbs()).array()))
                          .all());
            }
        }
}

TEST_CASE("fused_draw_gram through a registered BLAS agrees with gram_matrix of the kept X") {
    blas::register_blas(&reference_library);
    const CounterStream s(11, 3);
    const Index n = 33, d = 203;
    RowMatrix K(n, n), X(n, d);
    const int calls = syrk_calls;
    fused_draw_gram(s, ZLaw::gaussian, n, d, nullptr, K.data(), X.data(), 64);
    CHECK(syrk_calls == calls + 4);  // column blocks of 64, 64, 64, 11
    RowMatrix ref, scale;
    reference_gram(X, ref, scale);
    CHECK(gram_close(K, ref, scale));
    blas::register_blas(nullptr);
}

TEST_CASE("a registered BLAS runs one thread per call, and its pool is restored after") {
    blas::register_blas(&reference_library);
    pool = 4;
    std::mt19937_64 gen(10);
    const RowMatrix X = gaussian(defaults::blas_syrk_min_rows, 12, gen);
    pool_seen_in_call = 0;
    (void)gram_matrix(X);
    CHECK(pool_seen_in_call == 1);
    CHECK(pool == 4);
    {
        const blas::SingleThreaded outer;
        CHECK(pool == 1);
        {
            const blas::SingleThreaded inner;
            (void)gram_matrix(X);
        }
        CHECK(pool == 1);  // nested guards restore only when the last ends
    }
    CHECK(pool == 4);
    blas::register_blas(nullptr);
    {
        const blas::SingleThreaded none;  // nothing registered: nothing to limit
        CHECK(pool == 4);
    }
}

RELUCORE_TEST_MAIN

TEST_CASE("auto_step_ns: one row of auto_step_ns_table per SIMD level, out-of-range levels clamped") {
    static_assert(sizeof(defaults::auto_step_ns_table) / sizeof(defaults::auto_step_ns_table[0]) ==
                      std::size_t(simd::kAvx512 + 1),
                  "one row per simd::level()");
    for (int level = simd::kScalar; level <= simd::kAvx512; ++level) {
        const defaults::AutoStepNs row = defaults::auto_step_ns(level);
        CHECK(row.dual == defaults::auto_step_ns_table[level].dual);
        CHECK(row.weights == defaults::auto_step_ns_table[level].weights);
        CHECK(row.weights_blas == defaults::auto_step_ns_table[level].weights_blas);
        CHECK(row.dual > 0 && row.weights > 0 && row.weights_blas > 0);
    }
    CHECK(defaults::auto_step_ns(-1).dual == defaults::auto_step_ns_table[simd::kScalar].dual);
    CHECK(defaults::auto_step_ns(simd::kAvx512 + 1).weights_blas ==
          defaults::auto_step_ns_table[simd::kAvx512].weights_blas);
}
