// A tiny in-house test harness for relucore's C++ tests (no framework, no
// downloads): TEST_CASE registers a function, CHECK / CHECK_CLOSE / CHECK_THROWS
// record failures without aborting, and main() runs every case and returns
// non-zero when any check failed.
#pragma once

#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace relucore_test {

struct Registry {
    std::vector<std::pair<std::string, std::function<void()>>> cases;
    int failures = 0;
    int checks = 0;
    static Registry& get() {
        static Registry r;
        return r;
    }
};

struct Register {
    Register(const char* name, std::function<void()> f) { Registry::get().cases.emplace_back(name, std::move(f)); }
};

inline void report(bool ok, const char* expr, const char* file, int line, const std::string& detail = {}) {
    ++Registry::get().checks;
    if (ok) return;
    ++Registry::get().failures;
    std::fprintf(stderr, "%s:%d: CHECK failed: %s %s\n", file, line, expr, detail.c_str());
}

inline std::string fmt(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3e", v);
    return buf;
}

// |a - b| <= atol + rtol |b|, elementwise for Eigen expressions or scalars.
template <class A, class B>
bool close(const A& a, const B& b, double rtol, double atol, double* worst) {
    if constexpr (std::is_arithmetic_v<A>) {
        *worst = std::abs(double(a) - double(b));
        return *worst <= atol + rtol * std::abs(double(b));
    } else {
        if (a.rows() != b.rows() || a.cols() != b.cols()) {
            *worst = INFINITY;
            return false;
        }
        const auto diff = (a - b).array().abs().eval();
        *worst = diff.maxCoeff();
        return (diff <= atol + rtol * b.array().abs()).all();
    }
}

inline int run_all() {
    auto& r = Registry::get();
    for (auto& [name, f] : r.cases) {
        const int before = r.failures;
        try {
            f();
        } catch (const std::exception& e) {
            ++r.failures;
            std::fprintf(stderr, "%s: unexpected exception: %s\n", name.c_str(), e.what());
        }
        std::printf("[%s] %s\n", r.failures == before ? "ok" : "FAILED", name.c_str());
    }
    std::printf("%d checks, %d failures\n", r.checks, r.failures);
    return r.failures == 0 && r.checks > 0 ? 0 : 1;
}

}  // namespace relucore_test

#define RC_CONCAT_(a, b) a##b
#define RC_CONCAT(a, b) RC_CONCAT_(a, b)
#define TEST_CASE(name)                                                                                        \
    static void RC_CONCAT(test_fn_, __LINE__)();                                                               \
    static const relucore_test::Register RC_CONCAT(test_reg_, __LINE__)(name, &RC_CONCAT(test_fn_, __LINE__)); \
    static void RC_CONCAT(test_fn_, __LINE__)()

#define CHECK(cond) relucore_test::report(static_cast<bool>(cond), #cond, __FILE__, __LINE__)

#define CHECK_CLOSE(a, b, rtol, atol)                                                        \
    do {                                                                                     \
        double rc_worst_ = 0;                                                                \
        const bool rc_ok_ = relucore_test::close((a), (b), (rtol), (atol), &rc_worst_);      \
        relucore_test::report(rc_ok_, "CHECK_CLOSE(" #a ", " #b ")", __FILE__, __LINE__,     \
                              "(max abs difference " + relucore_test::fmt(rc_worst_) + ")"); \
    } while (0)

#define CHECK_THROWS(expr, Exception)                                                                     \
    do {                                                                                                  \
        bool rc_thrown_ = false;                                                                          \
        try {                                                                                             \
            (void)(expr);                                                                                 \
        } catch (const Exception&) {                                                                      \
            rc_thrown_ = true;                                                                            \
        }                                                                                                 \
        relucore_test::report(rc_thrown_, "CHECK_THROWS(" #expr ", " #Exception ")", __FILE__, __LINE__); \
    } while (0)

#define RELUCORE_TEST_MAIN               \
    int main() {                         \
        return relucore_test::run_all(); \
    }
