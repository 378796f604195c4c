// random/gram_sample.hpp: the Bartlett draw of K = sum_g lambda_g W_g,
// W_g ~ Wishart(d_g, I_n), against the Wishart moments (E K_ij = delta_ij
// sum_g lambda_g d_g, Var K_ii = 2 sum_g lambda_g^2 d_g, Var K_ij =
// sum_g lambda_g^2 d_g for i != j) over many draws, each K exactly symmetric
// and positive definite, the three label laws against theirs, the stated stream
// layout (same key, same data; the labels and each factor entry at their own
// stream and index), and the refusals of validate().
#include "check.hpp"

#include "relucore/random/gram_sample.hpp"

#include <Eigen/Cholesky>

#include <cmath>
#include <stdexcept>
#include <vector>

using namespace relucore;

TEST_CASE("sample_gram_bartlett: Wishart moments over 20000 draws (6 standard errors)") {
    GramSampleSpec spec;
    spec.n = 3;
    spec.values = {2.0, 0.5};
    spec.counts = {4, 30};  // the second group takes the Gamma path of chi_square (d - i > 16)
    spec.validate();
    const double mean_diag = 2.0 * 4 + 0.5 * 30;  // 23
    const double s2 = 4.0 * 4 + 0.25 * 30;        // sum lambda^2 d = 23.5
    const double var_diag = 2 * s2, var_off = s2;
    GramSampleWork work;
    const int draws = 20000;
    RowMatrix K(3, 3);
    Vector y(3);
    double sum_d = 0, sum_d2 = 0, sum_o = 0, sum_o2 = 0;
    bool symmetric = true, definite = true;
    for (int t = 0; t < draws; ++t) {
        sample_gram_bartlett(spec, 42 + static_cast<std::uint64_t>(t), K, y, work);
        symmetric = symmetric && K == K.transpose();
        definite = definite && Eigen::LLT<RowMatrix>(K).info() == Eigen::Success;
        for (Index i = 0; i < 3; ++i) {
            sum_d += K(i, i);
            sum_d2 += K(i, i) * K(i, i);
            for (Index j = i + 1; j < 3; ++j) {
                sum_o += K(i, j);
                sum_o2 += K(i, j) * K(i, j);
            }
        }
    }
    CHECK(symmetric && definite);
    const double nd = 3.0 * draws, no = 3.0 * draws;
    const double md = sum_d / nd, mo = sum_o / no;
    const double vd = sum_d2 / nd - md * md, vo = sum_o2 / no - mo * mo;
    std::printf("  E K_ii %.3f (23), Var K_ii %.2f (47), E K_ij %.4f (0), Var K_ij %.2f (23.5)\n", md, vd, mo, vo);
    CHECK(std::abs(md - mean_diag) < 6 * std::sqrt(var_diag / nd));
    CHECK(std::abs(mo) < 6 * std::sqrt(var_off / no));
    // Relative standard error of a sample variance ~ sqrt((kurtosis - 1) / N); kurtosis < 4 here.
    CHECK(std::abs(vd / var_diag - 1) < 6 * std::sqrt(3 / nd));
    CHECK(std::abs(vo / var_off - 1) < 6 * std::sqrt(3 / no));
}

TEST_CASE("sample_gram_bartlett: label laws, draw order and validate()") {
    GramSampleSpec spec;
    spec.n = 200;
    spec.values = {1.0};
    spec.counts = {400};
    spec.lo = 0.25;
    spec.hi = 0.75;
    GramSampleWork work;
    RowMatrix K(200, 200), K2(200, 200);
    Vector y(200), y2(200);
    sample_gram_bartlett(spec, 7, K, y, work);
    int negative = 0;
    for (Index i = 0; i < 200; ++i) {
        CHECK(std::abs(y[i]) >= 0.25 && std::abs(y[i]) <= 0.75);
        negative += y[i] < 0;
    }
    CHECK(std::abs(negative - 100) < 6 * std::sqrt(50.0));  // Binomial(200, 1/2)
    // Same key, same data on every path; a positive draw takes the magnitudes of the same words.
    sample_gram_bartlett(spec, 7, K2, y2, work, CounterPath::scalar);
    CHECK(K == K2 && y == y2);
    spec.labels = LabelKind::positive;
    sample_gram_bartlett(spec, 7, K2, y2, work);
    CHECK(K == K2 && y2 == y.cwiseAbs());
    // The labels have their own stream: another spectrum, the same labels.
    spec.labels = LabelKind::uniform;
    spec.values = {3.0, 1.0};
    spec.counts = {300, 500};
    sample_gram_bartlett(spec, 7, K2, y2, work);
    CHECK(y2 == y);
    // The below-diagonal factor entries are stream (g + 1) 2^32's normals, row-major.
    spec.values = {1.0};
    spec.counts = {400};
    spec.n = 3;
    double k3[9], y3[3], z[3];
    sample_gram_bartlett(spec, 7, k3, y3, work);
    CounterStream(7, std::uint64_t(1) << 32).normals(0, 3, z);
    Eigen::Map<RowMatrix> K3(k3, 3, 3);
    const RowMatrix L3 = Eigen::LLT<RowMatrix>(K3).matrixL();
    CHECK(std::abs(L3(1, 0) - z[0]) < 1e-12 && std::abs(L3(2, 0) - z[1]) < 1e-12 && std::abs(L3(2, 1) - z[2]) < 1e-12);
    spec.labels = LabelKind::normal;
    spec.n = 2;
    spec.counts = {2};
    std::vector<double> zs;
    for (int t = 0; t < 20000; ++t) {
        double k[4], yy[2];
        sample_gram_bartlett(spec, 800 + static_cast<std::uint64_t>(t), k, yy, work);
        zs.push_back(yy[0]);
        zs.push_back(yy[1]);
    }
    double m = 0, v = 0;
    for (double x : zs) m += x;
    m /= static_cast<double>(zs.size());
    for (double x : zs) v += (x - m) * (x - m);
    v /= static_cast<double>(zs.size() - 1);
    CHECK(std::abs(m) < 6 / std::sqrt(40000.0) && std::abs(v - 1) < 6 * std::sqrt(2 / 40000.0));

    GramSampleSpec bad;
    CHECK_THROWS(bad.validate(), std::invalid_argument);  // n = 0
    bad.n = 3;
    bad.values = {1.0};
    bad.counts = {2};  // fewer dimensions than n
    CHECK_THROWS(bad.validate(), std::invalid_argument);
    bad.counts = {3};
    bad.values = {-1.0};
    CHECK_THROWS(bad.validate(), std::invalid_argument);
    bad.values = {1.0};
    bad.lo = 2.0;
    bad.hi = 1.0;
    CHECK_THROWS(bad.validate(), std::invalid_argument);
}

RELUCORE_TEST_MAIN
