// Run-time SIMD dispatch: the one home of the dispatch switch, the CPU checks
// and the environment cap.
//
// The package is compiled for baseline x86-64 (SSE2), so wider kernels are
// compiled with target attributes and chosen at run time:
//   - the built-in syrk and gemm of linalg/blas.hpp (K = X X^T, W += C X) use
//     AVX2 with FMA when the CPU has both (has_avx2_fma());
//   - the Box-Muller transform (random/rng.hpp) uses AVX2 (has_avx2());
//   - the counter streams' normals (random/normals_avx512.hpp) use AVX-512F
//     with AVX-512DQ (has_avx512dq()) on their avx512 path;
//   - the activation masks of gd/run.hpp (PatternTracker) and the ReLU loops of
//     gd/model.hpp use AVX-512F (with BMI2 for the masks) at step_level()
//     kAvx512, bitwise the plain loops;
//   - the dual step for 6 <= n <= 16 (gd/dual_small.hpp) uses AVX-512F at
//     level() kAvx512 and AVX2 at kAvx, bitwise the plain loops (the Gram
//     sweep trial caps it, GramTrialSettings::simd_level);
//   - the fused mean-field step (meanfield/) uses SSE2, AVX or AVX-512F, the
//     widest of level(), which the environment variable
//     RELUCORE_SIMD = scalar | sse2 | avx | avx512 can cap (for tests and
//     timings).
// Define RELUCORE_NO_SIMD_DISPATCH to compile none of these kernels (plain
// loops and Eigen only). Every CPU check runs once and is cached.
//
// Level kSse2 is the 128-bit baseline: SSE2 on x86-64, NEON on aarch64, where
// RELUCORE_SIMD = scalar | neon names the two levels (kLevelNames) and the
// 128-bit dual step of gd/dual_small.hpp is the one vector kernel (no dispatch).
#pragma once

#include "relucore/core/abi.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

// RELUCORE_SIMD_DISPATCH is decided in core/abi.hpp (it names the inline namespace).
#if defined(RELUCORE_SIMD_DISPATCH)
#include <immintrin.h>
#endif
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// GCC contracts a * b - c written with AVX-512 intrinsics into an FMA
// (AVX-512F includes FMA) unless told not to, and clang contracts a * b + c by
// default wherever the target has FMA (AVX-512F, AVX2 with FMA, aarch64's base
// set). A function whose bits must match another path's carries both
// RELUCORE_NO_FP_CONTRACT before it (GCC's attribute) and
// RELUCORE_NO_FP_CONTRACT_BODY as the first line of its body (clang's pragma).
#if defined(__GNUC__) && !defined(__clang__)
#define RELUCORE_NO_FP_CONTRACT __attribute__((optimize("fp-contract=off")))
#else
#define RELUCORE_NO_FP_CONTRACT
#endif
#if defined(__clang__)
#define RELUCORE_NO_FP_CONTRACT_BODY _Pragma("clang fp contract(off)")
#else
#define RELUCORE_NO_FP_CONTRACT_BODY
#endif

// GCC's AVX-512 intrinsics pass an undefined source operand
// (-Wmaybe-uninitialized, -Wuninitialized once inlined into a caller's code at
// -O2/-O3) and all-ones masks as a char (-Wsign-conversion) inside its own
// headers; the AVX-512 kernels stand between these two.
#if defined(__GNUC__) && !defined(__clang__)
#define RELUCORE_AVX512_WARNINGS_OFF                                                           \
    _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"") \
        _Pragma("GCC diagnostic ignored \"-Wsign-conversion\"") _Pragma("GCC diagnostic ignored \"-Wuninitialized\"")
#define RELUCORE_AVX512_WARNINGS_ON _Pragma("GCC diagnostic pop")
#else
#define RELUCORE_AVX512_WARNINGS_OFF
#define RELUCORE_AVX512_WARNINGS_ON
#endif

// Unrolls a loop over a kernel's accumulators (at most 16, an int counter) fully, so that GCC
// keeps them in registers: else it stores every accumulator to the stack at every step of the
// inner loop. GCC does not unroll such a loop fully over a 64-bit counter.
#define RELUCORE_UNROLL _Pragma("GCC unroll 16")

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {
namespace simd {

// The SIMD paths of the fused kernels, narrowest first (kSse2: the 128-bit level, NEON on aarch64).
constexpr int kScalar = 0, kSse2 = 1, kAvx = 2, kAvx512 = 3;

// The values of RELUCORE_SIMD, indexed by level: the levels this architecture has.
#if defined(__ARM_NEON)
inline constexpr const char* kLevelNames[] = {"scalar", "neon"};
#else
inline constexpr const char* kLevelNames[] = {"scalar", "sse2", "avx", "avx512"};
#endif
inline constexpr int kLevelCount = int(sizeof(kLevelNames) / sizeof(kLevelNames[0]));

#if defined(RELUCORE_SIMD_DISPATCH)
inline bool has_avx() {
    static const bool has = __builtin_cpu_supports("avx");
    return has;
}
inline bool has_avx2() {
    static const bool has = __builtin_cpu_supports("avx2");
    return has;
}
inline bool has_avx2_fma() {
    static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return has;
}
inline bool has_avx512f() {
    static const bool has = __builtin_cpu_supports("avx512f");
    return has;
}
inline bool has_avx512dq() {
    static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
    return has;
}
inline bool has_avx512f_bmi2() {
    static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("bmi2");
    return has;
}
#endif

// The widest path the build and the CPU support.
inline int cpu_level() {
    int level = kScalar;
#if defined(__SSE2__) || defined(__ARM_NEON)
    level = kSse2;
#endif
#if defined(RELUCORE_SIMD_DISPATCH)
    if (has_avx()) level = kAvx;
    if (has_avx512f()) level = kAvx512;
#endif
    return level;
}

namespace detail {
// The calling thread's cap (ThreadCap); kAvx512: none.
inline int& thread_cap() {
    static thread_local int cap = kAvx512;
    return cap;
}
}  // namespace detail

// Caps level() on the calling thread for its lifetime, then restores the
// previous cap (caps nest; the lowest wins). For work where the wider path is
// slower as a whole: a short run among scalar code, such as a sweep trial,
// where 512-bit arithmetic lowers the core's clock for the code around it.
// The dual engine's kernels, the counter streams and the mean-field step give
// the same bits on every path, so there a cap changes only the speed; the
// weight engine's packed products (linalg/blas.hpp) differ from a BLAS in the
// last bits.
class ThreadCap {
public:
    explicit ThreadCap(int cap) : previous_(detail::thread_cap()) { detail::thread_cap() = std::min(previous_, cap); }
    ~ThreadCap() { detail::thread_cap() = previous_; }
    ThreadCap(const ThreadCap&) = delete;
    ThreadCap& operator=(const ThreadCap&) = delete;

private:
    int previous_;
};

namespace detail {
// The cap RELUCORE_SIMD sets (kAvx512 when unset), -1 for a value other than those of kLevelNames.
inline int env_cap_or_invalid() noexcept {
    const char* env = std::getenv("RELUCORE_SIMD");
    if (env == nullptr) return kAvx512;
    for (int l = kScalar; l < kLevelCount; ++l)
        if (std::strcmp(env, kLevelNames[l]) == 0) return l;
    return -1;
}
inline int env_cap() {
    const int cap = env_cap_or_invalid();
    if (cap < 0) {
        std::string names;
        for (int l = kScalar; l < kLevelCount; ++l) names += (l > 0 ? ", " : "") + std::string(kLevelNames[l]);
        throw std::invalid_argument("RELUCORE_SIMD must be one of " + names);
    }
    return cap;
}
}  // namespace detail

// cpu_level() capped by RELUCORE_SIMD (read on every call) and by the calling
// thread's ThreadCap; throws std::invalid_argument on a RELUCORE_SIMD other
// than the names of kLevelNames (scalar, sse2, avx, avx512; on aarch64 scalar, neon).
inline int level() {
    return std::min({cpu_level(), detail::thread_cap(), detail::env_cap()});
}

// level() with RELUCORE_SIMD read once per thread, at the thread's first call: for the kernels
// called per neuron and step (gd/model.hpp, gd/run.hpp), where reading the environment each time
// would cost more than the kernel. Their paths give the same bits, so the cap changes only which
// path is timed; a cap set before the process starts (as the benchmarks and CI set it) holds.
// Never throws (it runs on worker threads): an unknown value caps nothing here; level() refuses it.
inline int step_level() noexcept {
    static thread_local const int env = [] {
        const int cap = detail::env_cap_or_invalid();
        return cap < 0 ? int(kAvx512) : cap;
    }();
    return std::min({cpu_level(), detail::thread_cap(), env});
}

}  // namespace simd
}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
