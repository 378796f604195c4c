// meanfield/weight_gd.hpp: the mean-field engine against a plain-loop
// reference of the update written here (full-batch GD and SGD on given
// samples, with and without bias, trained or fixed outer weights, the three
// output scales), the noise against its stated law, and the invariances the
// engine promises (split runs and thread counts give bitwise the same state).
#include "check.hpp"
#include "problems.hpp"

#include "relucore/meanfield/weight_gd.hpp"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

using namespace relucore;

namespace {

// theta_i = (a_i, w_i, b_i) as plain rows; the reference update of the header's
// comment: theta <- theta - s grad L_B(theta) (no noise), on the batch `batch`.
struct Reference {
    RowMatrix X;
    Vector y;
    RowMatrix theta;  // N x P, columns (a, w_1..w_d[, b])
    WeightGDSettings st;

    double kappa() const { return output_scale_factor(st.scale, theta.rows()); }
    double z(Index i, Index j) const {
        const Index d = X.cols();
        double v = st.bias ? theta(i, d + 1) : 0.0;
        for (Index k = 0; k < d; ++k) v += theta(i, 1 + k) * X(j, k);
        return v;
    }
    double h(Index j) const {
        double s = 0;
        for (Index i = 0; i < theta.rows(); ++i) s += theta(i, 0) * std::max(z(i, j), 0.0);
        return kappa() * s;
    }
    double objective() const {
        double fit = 0, reg = 0;
        for (Index j = 0; j < X.rows(); ++j) fit += (h(j) - y[j]) * (h(j) - y[j]);
        for (Index i = 0; i < theta.rows(); ++i)
            for (Index c = st.train_outer ? 0 : 1; c < theta.cols(); ++c) reg += theta(i, c) * theta(i, c);
        return fit / static_cast<double>(X.rows()) + st.weight_decay / static_cast<double>(theta.rows()) * reg;
    }
    void step(const std::vector<Index>& batch) {
        const Index N = theta.rows(), d = X.cols();
        const double B = static_cast<double>(batch.size()), lam = st.weight_decay / static_cast<double>(N);
        std::vector<double> r;
        for (Index j : batch) r.push_back(h(j) - y[j]);
        RowMatrix grad = RowMatrix::Zero(N, theta.cols());
        for (Index i = 0; i < N; ++i) {
            for (std::size_t q = 0; q < batch.size(); ++q) {
                const Index j = batch[q];
                const double zij = z(i, j), c = 2.0 / B * r[q] * kappa();
                if (st.train_outer) grad(i, 0) += c * std::max(zij, 0.0);
                if (zij > 0) {
                    for (Index k = 0; k < d; ++k) grad(i, 1 + k) += c * theta(i, 0) * X(j, k);
                    if (st.bias) grad(i, d + 1) += c * theta(i, 0);
                }
            }
            for (Index c = st.train_outer ? 0 : 1; c < theta.cols(); ++c) grad(i, c) += 2 * lam * theta(i, c);
        }
        theta -= st.step * grad;
    }
};

WeightGDStart start_from(const RowMatrix& theta, Index d, bool bias) {
    WeightGDStart s;
    s.a = theta.col(0);
    s.w = theta.middleCols(1, d);
    if (bias) s.b = theta.col(d + 1);
    return s;
}

RowMatrix theta_of(const WeightGD& e) {
    RowMatrix out(e.N(), e.P());
    e.theta(out);
    return out;
}

RowMatrix random_theta(Index N, Index P, unsigned seed) {
    std::mt19937_64 gen(seed);
    return relucore_test::gaussian(N, P, gen, 0.7);
}

}  // namespace

TEST_CASE("WeightGD full-batch GD and SGD on given samples match the plain-loop reference") {
    const Index M = 12, d = 3, N = 150;  // N > kChunk: two chunks
    std::mt19937_64 gen(4);
    std::normal_distribution<double> normal(0.0, 1.0);
    RowMatrix X(M, d);
    Vector y(M);
    for (Index j = 0; j < M; ++j) {
        for (Index k = 0; k < d; ++k) X(j, k) = normal(gen);
        y[j] = std::sin(X(j, 0)) + 0.5 * X(j, 1);
    }
    int cases = 0;
    for (bool bias : {true, false})
        for (bool train_outer : {true, false})
            for (OutputScale scale : {OutputScale::inv_n, OutputScale::inv_sqrt_n, OutputScale::one})
                for (Index batch : {M, Index(1), Index(5)}) {
                    WeightGDSettings st;
                    st.step = scale == OutputScale::one ? 1e-3 : 0.2;
                    st.weight_decay = 0.05;
                    st.bias = bias;
                    st.train_outer = train_outer;
                    st.scale = scale;
                    st.batch_size = batch;
                    const Index P = d + (bias ? 2 : 1);
                    Reference ref{X, y, random_theta(N, P, 17 + static_cast<unsigned>(cases)), st};
                    WeightGD engine(X, y, start_from(ref.theta, d, bias), st);
                    CHECK_CLOSE(engine.objective(), ref.objective(), 1e-12, 1e-15);
                    const std::int64_t iters = 40;
                    std::vector<std::int64_t> samples;
                    std::uniform_int_distribution<std::int64_t> pick(0, M - 1);
                    for (std::int64_t t = 0; t < iters; ++t)
                        for (Index q = 0; q < batch; ++q) samples.push_back(batch == M ? q : pick(gen));
                    const WeightGDSummary sum =
                        engine.run(0, iters, false, nullptr, batch == M ? nullptr : samples.data());
                    for (std::int64_t t = 0; t < iters; ++t)
                        ref.step(std::vector<Index>(samples.begin() + t * batch, samples.begin() + (t + 1) * batch));
                    CHECK(sum.status == Status::completed && sum.nit == iters);
                    CHECK_CLOSE(theta_of(engine), ref.theta, 1e-11, 1e-13);
                    CHECK_CLOSE(sum.objective, ref.objective(), 1e-11, 1e-14);
                    ++cases;
                }
    CHECK(cases == 36);
}

TEST_CASE("WeightGD noise: one step minus the noiseless step is sqrt(4 (s/N) T) N(0, I) on trained coordinates") {
    const Index M = 4, d = 2, N = 3000;
    RowMatrix X(M, d);
    X << 1, 0, 0, 1, -1, 0.5, 0.3, -0.7;
    const Vector y = Vector::Ones(M);
    const RowMatrix theta0 = random_theta(N, d + 2, 3);
    WeightGDSettings st;
    st.step = 0.5;
    st.batch_size = M;
    st.train_outer = false;  // a stays: noise on w and b only
    WeightGD quiet(X, y, start_from(theta0, d, true), st);
    st.temperature = 0.2;
    st.key = Key2{9, 9};
    WeightGD noisy(X, y, start_from(theta0, d, true), st);
    quiet.run(0, 1, false);
    noisy.run(0, 1, false);
    const RowMatrix diff = theta_of(noisy) - theta_of(quiet);
    CHECK((diff.col(0).array() == 0).all());
    const double sd = std::sqrt(4 * (st.step / static_cast<double>(N)) * st.temperature);
    const RowMatrix z = diff.rightCols(d + 1) / sd;
    const double count = static_cast<double>(z.size());
    const double mean = z.mean();
    const double var = (z.array() - mean).square().sum() / (count - 1);
    std::printf("  standardised noise: mean %.4f, variance %.4f over %.0f entries\n", mean, var, count);
    CHECK(std::abs(mean) < 6 / std::sqrt(count));
    CHECK(std::abs(var - 1) < 6 * std::sqrt(2 / count));
}

TEST_CASE("WeightGD: split runs and thread counts give bitwise the same state; divergence; bad starts") {
    const Index M = 30, d = 2, N = 300;
    std::mt19937_64 gen(8);
    std::normal_distribution<double> normal(0.0, 1.0);
    RowMatrix X(M, d);
    Vector y(M);
    for (Index j = 0; j < M; ++j) {
        X(j, 0) = normal(gen);
        X(j, 1) = normal(gen);
        y[j] = X(j, 0) > 0 ? 1.0 : -1.0;
    }
    const RowMatrix theta0 = random_theta(N, d + 2, 5);
    WeightGDSettings st;
    st.step = 0.5;
    st.temperature = 1e-3;
    st.weight_decay = 1e-3;
    st.key = Key2{1, 2};
    WeightGD whole(X, y, start_from(theta0, d, true), st);
    whole.run(0, 50, false);
    WeightGD split(X, y, start_from(theta0, d, true), st);
    split.run(0, 20, false);
    split.run(20, 30, false);
    CHECK(theta_of(whole) == theta_of(split));
    st.n_threads = 2;
    WeightGD two(X, y, start_from(theta0, d, true), st);
    two.run(0, 50, false);
    CHECK(theta_of(whole) == theta_of(two));

    st.n_threads = 1;
    st.divergence_bound = 1e-3;
    WeightGD blow(X, y, start_from(theta0, d, true), st);
    CHECK(blow.run(0, 10, false).status == Status::diverged);

    // The start: N x d inner weights, N biases exactly when bias is on.
    WeightGDStart bad = start_from(theta0, d, true);
    bad.w = RowMatrix::Zero(N, d + 1);
    CHECK_THROWS(WeightGD(X, y, bad, st), std::invalid_argument);
    bad = start_from(theta0, d, true);
    bad.b.resize(N - 1);
    CHECK_THROWS(WeightGD(X, y, bad, st), std::invalid_argument);
    st.bias = false;
    CHECK_THROWS(WeightGD(X, y, start_from(theta0, d, true), st), std::invalid_argument);
    const WeightGD no_bias(X, y, start_from(theta0, d, false), st);
    CHECK(theta_of(no_bias) == RowMatrix(theta0.leftCols(d + 1)));
}

RELUCORE_TEST_MAIN
