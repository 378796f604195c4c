// gd/scaling.hpp: the exponent rule against exponents written here by hand, the exact scaling against
// std::ldexp entry by entry and against hand-computed roundings at the subnormal edge, the round trip
// X -> 2^-k X -> X bit for bit, the representability bounds at their edges, and the texts of both
// refusals in full.
#include "check.hpp"

#include "relucore/gd/scaling.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace relucore;
using namespace relucore_test;

namespace {

int exponent_of(std::vector<double> a) {
    return scaling::binary_exponent(a.data(), static_cast<Index>(a.size()));
}

bool same_bits(double a, double b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
}

}  // namespace

TEST_CASE("binary_exponent: the exponent of max |a|, 0 for empty, zero or non-finite arrays") {
    CHECK(exponent_of({0.5, -0.75}) == 0);
    CHECK(exponent_of({3.0, -1.0}) == 2);
    CHECK(exponent_of({1.0, -4.0}) == 3);
    CHECK(exponent_of({1.0}) == 1);
    CHECK(exponent_of({0.0, 0.0, 0.0}) == 0);
    CHECK(exponent_of({}) == 0);
    CHECK(exponent_of({std::ldexp(1.0, -1074)}) == -1073);
    CHECK(exponent_of({std::numeric_limits<double>::max()}) == 1024);
    CHECK(exponent_of({1.0, std::numeric_limits<double>::quiet_NaN()}) == 0);
    CHECK(exponent_of({-std::numeric_limits<double>::infinity(), 2.0}) == 0);
}

TEST_CASE("exponents_of: ex of X, else half (floor) that of K; ey of y") {
    CHECK(scaling::half_exponent(5) == 2);
    CHECK(scaling::half_exponent(4) == 2);
    CHECK(scaling::half_exponent(0) == 0);
    CHECK(scaling::half_exponent(-1) == -1);
    CHECK(scaling::half_exponent(-2) == -1);
    CHECK(scaling::half_exponent(-3) == -2);
    const double X[] = {0.25, -3.0, 1.0, 2.0};                                // max 3 = 0.75 2^2
    const double K[] = {std::ldexp(1.0, -7), 0.0, 0.0, std::ldexp(1.0, -8)};  // exponent -6, half -3
    const double y[] = {-std::ldexp(1.0, 70), 1.0};                           // exponent 71
    const scaling::Exponents ex = scaling::exponents_of(X, 4, K, 4, y, 2);
    CHECK(ex.ex == 2 && ex.ey == 71);
    const scaling::Exponents ek = scaling::exponents_of(nullptr, 0, K, 4, y, 2);
    CHECK(ek.ex == -3 && ek.ey == 71);
    const scaling::Exponents none = scaling::exponents_of(nullptr, 0, nullptr, 0, y, 2);
    CHECK(none.ex == 0 && none.ey == 71);
}

TEST_CASE("plan: unscaled within +-scale_exponent, the exponents themselves beyond") {
    const int hi = defaults::scale_exponent;
    CHECK(hi == 64);
    CHECK(!scaling::rescaled(scaling::plan({hi, -hi})));
    CHECK(!scaling::rescaled(scaling::plan({-hi, hi})));
    const scaling::Exponents a = scaling::plan({hi + 1, 3});
    CHECK(a.ex == 65 && a.ey == 3);
    const scaling::Exponents b = scaling::plan({0, -hi - 1});
    CHECK(b.ex == 0 && b.ey == -65);
}

TEST_CASE("units: the powers of 2^ex and 2^ey of every quantity") {
    const scaling::Exponents e{3, 5};
    CHECK(scaling::power(scaling::units::X, e) == 3);
    CHECK(scaling::power(scaling::units::K, e) == 6);
    CHECK(scaling::power(scaling::units::Y, e) == 5);
    CHECK(scaling::power(scaling::units::W, e) == 2);
    CHECK(scaling::power(scaling::units::ALPHA, e) == -1);
    CHECK(scaling::power(scaling::units::ETA, e) == -6);
    CHECK(scaling::power(scaling::units::GRAD, e) == 8);
    CHECK(scaling::power(scaling::units::LOSS, e) == 10);
    CHECK(scaling::power(scaling::units::OBJECTIVE, e) == 4);
}

TEST_CASE("scale: correctly rounded as std::ldexp, in and beyond +-1022") {
    std::mt19937_64 gen(7);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    std::uniform_int_distribution<int> k(-1074, 1023);
    std::vector<double> a(400);
    for (double& v : a) v = std::ldexp(u(gen), k(gen));
    for (int p : {-1100, -1075, -1023, -1022, -600, -1, 1, 77, 1022, 1023, 1100, 2000}) {
        std::vector<double> s = a;
        scaling::scale(s.data(), static_cast<Index>(s.size()), p);
        bool same = true;
        for (std::size_t i = 0; i < a.size(); ++i) same = same && same_bits(s[i], std::ldexp(a[i], p));
        CHECK(same);
    }
    // Hand-computed roundings at the subnormal edge: 3 2^-1075 = 1.5 2^-1074 rounds to even, 2^-1073;
    // 2^-1075 is a tie that rounds to 0; 2^1023 2 overflows.
    double edge[] = {3.0, 1.0, std::ldexp(1.0, 1023)};
    scaling::scale(edge, 2, -1075);
    CHECK(same_bits(edge[0], std::ldexp(1.0, -1073)));
    CHECK(same_bits(edge[1], 0.0));
    scaling::scale(edge + 2, 1, 1);
    CHECK(edge[2] == std::numeric_limits<double>::infinity());
    // Beyond +-1022 one multiply by 2^p would not be exact: 2^-1060 2^1030 = 2^-30.
    double far[] = {std::ldexp(1.0, -1060), std::ldexp(-3.0, 1000)};
    scaling::scale(far, 1, 1030);
    scaling::scale(far + 1, 1, -1100);
    CHECK(same_bits(far[0], std::ldexp(1.0, -30)));
    CHECK(same_bits(far[1], std::ldexp(-3.0, -100)));
}

TEST_CASE("scale: the round trip 2^-k then 2^k is bit for bit where nothing leaves the normal range") {
    std::mt19937_64 gen(11);
    std::normal_distribution<double> g;
    std::vector<double> X(600);
    for (double& v : X) v = g(gen);
    for (int k : {-900, -400, -65, 65, 400, 900}) {
        std::vector<double> s = X;
        scaling::scale(s.data(), static_cast<Index>(s.size()), -k);
        scaling::scale(s.data(), static_cast<Index>(s.size()), k);
        bool same = true;
        for (std::size_t i = 0; i < X.size(); ++i) same = same && same_bits(s[i], X[i]);
        CHECK(same);
    }
}

TEST_CASE("representable: the largest entry stays in [2^-1022, 2^1024) once scaled back") {
    const double one[] = {1.0, -0.5};                                               // max |a| = 0.5 2^1
    CHECK(scaling::representable(one, 2, scaling::units::W, {-1023, 0}, false));    // 2^1023
    CHECK(!scaling::representable(one, 2, scaling::units::W, {-1024, 0}, false));   // 2^1024
    CHECK(scaling::representable(one, 2, scaling::units::LOSS, {0, -511}, false));  // 2^-1022
    CHECK(!scaling::representable(one, 2, scaling::units::LOSS, {0, -512}, false));
    CHECK(scaling::representable(one, 2, scaling::units::LOSS, {0, -512}, true));  // may underflow
    const double zero[] = {0.0, 0.0};
    CHECK(scaling::representable(zero, 2, scaling::units::W, {-2000, 0}, false));
    const double nan[] = {std::numeric_limits<double>::quiet_NaN(), 1.0};
    CHECK(scaling::representable(nan, 2, scaling::units::W, {-2000, 0}, false));
}

TEST_CASE("the refusals name the quantity, its exponent and the usable range") {
    CHECK(scaling::out_of_range_message("loss='logistic'", {65, 0}, false, -1) ==
          "the scale of the data is out of range for loss='logistic': max |x_ij| ~ 2^65; this model is not "
          "invariant under rescaling X and y, so it runs only for max |x_ij| (sqrt max |K_ij|) and max |y_i| "
          "within [2^-64, 2^64]; rescale the data (and the options in its units) yourself");
    CHECK(scaling::out_of_range_message("bias=True", {-70, 2}, true, 3) ==
          "the scale of the data is out of range for bias=True: max |K_ij| ~ 2^-140 (problem 3); this model is "
          "not invariant under rescaling X and y, so it runs only for max |x_ij| (sqrt max |K_ij|) and max |y_i| "
          "within [2^-64, 2^64]; rescale the data (and the options in its units) yourself");
    CHECK(scaling::out_of_range_message("m", {1, -80}, false, -1).find(": max |y_i| ~ 2^-80;") != std::string::npos);
    CHECK(scaling::unrepresentable_message({-600, 0}, false, -1) ==
          "X is too small (or y too large): max |x_ij| ~ 2^-600 and max |y_i| ~ 2^0, so the weights (~ 2^600), "
          "the dual coordinates (~ 2^1200) or the loss (~ 2^0) cannot be represented in float64, though the run "
          "on the exactly rescaled data succeeded; rescale X or y (X -> c X, y -> l y maps W -> (l / c) W)");
    CHECK(scaling::unrepresentable_message({600, 0}, true, 2)
              .rfind("problem 2: gram is too large (or y too small): max |K_ij| ~ 2^1200 and", 0) == 0);
    CHECK(scaling::eta_out_of_range_message(1e-05, {-600, 3}) ==
          "eta = 1e-05 is out of range for data of this scale (max |x_ij| ~ 2^-600): the step is of order 1 / "
          "mu_1(K), about 2^1200 here");
    CHECK(scaling::time_out_of_range_message(2.5, {520, 0}) ==
          "the time 2.5 cannot be represented for data of this scale (max |x_ij| ~ 2^520): flow times scale as 1 / "
          "K, and this one becomes 2.5 * 2^1040 on the exactly rescaled copy of the data, outside float64's normal "
          "range");
    // The objective's exponent is printed rounded half to even, as Python's format(x, ".0f").
    CHECK(scaling::minnorm_unrepresentable_message({-600, 0}, "X", 1199.6) ==
          "X is too small (or y too large): max |x_ij| ~ 2^-600 and max |y_i| ~ 2^0, so the minimum-norm weights "
          "have 1/2 sum ||w_k||^2 ~ 2^1200 (and dual coordinates ~ 2^1200), which float64 cannot represent even "
          "after an exact rescaling; rescale X or y (X -> c X, y -> l y maps W -> (l / c) W)");
    CHECK(scaling::minnorm_unrepresentable_message({600, 0}, "gram", 2.5).find("gram is too large") == 0);
    CHECK(scaling::minnorm_unrepresentable_message({600, 0}, "gram", 2.5).find("~ 2^2 (and") != std::string::npos);
}

RELUCORE_TEST_MAIN
