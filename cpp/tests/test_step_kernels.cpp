// The weight engine's per-step kernels at every SIMD level the CPU has (simd::ThreadCap):
// the ReLU loops of gd/model.hpp (predictions, step coefficients, the outer layer's sums, the
// elementwise sum), the pattern tracker's masks (gd/run.hpp) and the packed products
// (linalg/blas.hpp), each against a plain loop written here. The loops and masks are bitwise
// the plain loops at every level; the packed products' entries are each one chain of FMAs in
// increasing index, the same on the AVX2 and the AVX-512 kernels. Shapes leave every tail of
// the vector widths; the data hold +-0, NaN and values of both signs.
#include "check.hpp"

#include "relucore/gd/model.hpp"
#include "relucore/gd/run.hpp"
#include "relucore/linalg/packed.hpp"
#include "relucore/simd.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace relucore;

// CHECK with the case it failed on.
#define CHECK_AT(cond, what) relucore_test::report(static_cast<bool>(cond), #cond, __FILE__, __LINE__, what)

namespace {

RowMatrix random_beta(Index m, Index n, std::mt19937_64& gen) {
    std::normal_distribution<double> N;
    RowMatrix b(m, n);
    for (Index k = 0; k < m; ++k)
        for (Index i = 0; i < n; ++i) b(k, i) = N(gen);
    if (m * n > 3) {
        b.data()[0] = 0.0;
        b.data()[1] = -0.0;
        b.data()[m * n - 1] = std::numeric_limits<double>::quiet_NaN();
    }
    return b;
}

bool same_bits(const double* a, const double* b, Index n) {
    return std::memcmp(a, b, sizeof(double) * static_cast<std::size_t>(n)) == 0;
}

// The levels to run: the CPU's own and every one below it.
std::vector<int> levels() {
    std::vector<int> out;
    for (int l = simd::kScalar; l <= simd::cpu_level(); ++l) out.push_back(l);
    return out;
}

}  // namespace

TEST_CASE("ReLU step loops of gd/model.hpp: bitwise the plain loops at every SIMD level and tail") {
    std::mt19937_64 gen(11);
    const ModelSpec spec{};
    for (const Index m : {1, 3, 8, 9, 17, 19, 21})
        for (const Index n : {1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 19, 37}) {
            const RowMatrix beta = random_beta(m, n, gen);
            Vector outer(m), g(n), h0(n);
            std::normal_distribution<double> N;
            for (Index k = 0; k < m; ++k) outer[k] = N(gen);
            for (Index i = 0; i < n; ++i) g[i] = N(gen), h0[i] = N(gen);
            const double eta = 0.37;
            // The plain loops.
            Vector h_ref = h0, s_ref(m), sum_ref = h0;
            RowMatrix c_ref(m, n);
            for (Index k = 0; k < m; ++k) {
                double t = 0;
                for (Index i = 0; i < n; ++i) {
                    const double u = beta(k, i) > 0 ? beta(k, i) : 0.0;
                    h_ref[i] += outer[k] * u;
                    t += u * g[i];
                    c_ref(k, i) = beta(k, i) > 0 ? (-eta * outer[k]) * g[i] : 0.0;
                }
                s_ref[k] = t;
            }
            for (Index i = 0; i < n; ++i) sum_ref[i] += g[i];
            for (const int level : levels()) {
                const simd::ThreadCap cap(level);
                Vector h = h0, s(m), sum = h0;
                RowMatrix c(m, n);
                add_predictions(beta, outer, spec, h);
                dual_step_coefficients(beta, outer, g, eta, spec, c);
                outer_gradient_sums(beta.data(), n, 0, m, g.data(), spec, s.data());
                detail::add_to(sum.data(), g.data(), n);
                const std::string at =
                    " level " + std::to_string(level) + " m " + std::to_string(m) + " n " + std::to_string(n);
                CHECK_AT(same_bits(h.data(), h_ref.data(), n), "add_predictions" + at);
                CHECK_AT(same_bits(c.data(), c_ref.data(), m * n), "dual_step_coefficients" + at);
                CHECK_AT(same_bits(s.data(), s_ref.data(), m), "outer_gradient_sums" + at);
                CHECK_AT(same_bits(sum.data(), sum_ref.data(), n), "add_to" + at);
            }
        }
}

TEST_CASE("PatternTracker: the masks and their change at every SIMD level and tail") {
    std::mt19937_64 gen(12);
    for (const Index m : {1, 2, 5})
        for (const Index n : {1, 3, 7, 8, 9, 15, 16, 17}) {
            const RowMatrix a = random_beta(m, n, gen);
            RowMatrix b = a;
            b(m - 1, n - 1) = a(m - 1, n - 1) > 0 ? -1.0 : 1.0;  // the last entry (a tail one where m n % 8 != 0) flips
            for (const int level : levels()) {
                const simd::ThreadCap cap(level);
                PatternTracker t;
                t.reset(a, 0);
                CHECK(!t.update_rows(a, 0, m));  // unchanged masks
                CHECK(t.update_rows(b, 0, m));   // one mask changed
                bool all = true;
                for (Index k = 0; k < m; ++k)
                    for (Index i = 0; i < n; ++i) all = all && (t.mask()(k, i) == (b(k, i) > 0 ? 1 : 0));
                CHECK_AT(all, "masks at level " + std::to_string(level));
                RowMatrix c = b;
                c(0, 0) = b(0, 0) > 0 ? -1.0 : 1.0;  // the first entry (a vector one where m n >= 8) flips
                CHECK(t.update_rows(c, 0, m));
                CHECK(t.mask()(0, 0) == (c(0, 0) > 0 ? 1 : 0));
            }
        }
}

#if defined(RELUCORE_SIMD_DISPATCH)
TEST_CASE("packed products: each entry one FMA chain in increasing index, the same on AVX2 and AVX-512") {
    if (!(simd::has_avx2_fma() && blas::packed_products_available(64, 64, 64))) {
        std::printf("  (skipped: the packed kernels need AVX2 with FMA or AVX-512F)\n");
        return;
    }
    std::mt19937_64 gen(13);
    std::normal_distribution<double> N;
    for (const Index m : {1, 5, 6, 7, 9, 13, 19})
        for (const Index n : {1, 7, 8, 9, 16, 17, 40})
            for (const Index d : {1, 3, 8, 12, 21}) {
                RowMatrix X(n, d), W(m, d), C(m, n);
                for (Index i = 0; i < X.size(); ++i) X.data()[i] = N(gen);
                for (Index i = 0; i < W.size(); ++i) W.data()[i] = N(gen);
                for (Index i = 0; i < C.size(); ++i) C.data()[i] = N(gen);
                RowMatrix beta_ref(m, n), G_ref(m, d);
                for (Index k = 0; k < m; ++k) {
                    for (Index i = 0; i < n; ++i) {
                        double t = 0;
                        for (Index j = 0; j < d; ++j) t = std::fma(W(k, j), X(i, j), t);
                        beta_ref(k, i) = t;
                    }
                    for (Index j = 0; j < d; ++j) {
                        double t = 0;
                        for (Index i = 0; i < n; ++i) t = std::fma(C(k, i), X(i, j), t);
                        G_ref(k, j) = t;
                    }
                }
                blas::PackedX P;
                blas::pack_x(X, P);
                for (const int level : {int(simd::kAvx), int(simd::kAvx512)}) {
                    if (level > simd::cpu_level()) continue;
                    const simd::ThreadCap cap(level);
                    RowMatrix beta(m, n), G(m, d);
                    blas::gemm_nt_packed(W, P, beta);
                    blas::gemm_packed(C, P, G);
                    const std::string at = " level " + std::to_string(level) + " m " + std::to_string(m) + " n " +
                                           std::to_string(n) + " d " + std::to_string(d);
                    CHECK_AT(same_bits(beta.data(), beta_ref.data(), m * n), "W X^T" + at);
                    CHECK_AT(same_bits(G.data(), G_ref.data(), m * d), "C X" + at);
                }
            }
}
#endif

RELUCORE_TEST_MAIN
