// The abi test: the same header-only code compiled in three translation units
// with different settings (OpenMP on, OpenMP off, SIMD dispatch off) and linked
// into one program. Each unit's relucore functions live in the inline namespace
// of its own configuration (relucore/core/abi.hpp), so each answers for itself;
// were they one inline function, the linker would keep one body for all three.
#include <cstdio>
#include <string>

namespace abi_test {
struct Answer {
    bool openmp;
    bool simd_dispatch;
    std::string abi;
    double loss;
};
Answer tu_openmp();
Answer tu_serial();
Answer tu_serial_nosimd();
}  // namespace abi_test

int main() {
    using abi_test::Answer;
    const Answer a = abi_test::tu_openmp(), b = abi_test::tu_serial(), c = abi_test::tu_serial_nosimd();
    std::printf("openmp TU: has_openmp %d, dispatch %d, %s, loss %.17g\n", a.openmp, a.simd_dispatch, a.abi.c_str(),
                a.loss);
    std::printf("serial TU: has_openmp %d, dispatch %d, %s, loss %.17g\n", b.openmp, b.simd_dispatch, b.abi.c_str(),
                b.loss);
    std::printf("no-SIMD TU: has_openmp %d, dispatch %d, %s, loss %.17g\n", c.openmp, c.simd_dispatch, c.abi.c_str(),
                c.loss);
    bool ok =
        a.openmp && !b.openmp && !c.openmp && !c.simd_dispatch && a.abi != b.abi && b.abi != c.abi && a.abi != c.abi;
#if defined(__x86_64__)
    ok = ok && a.simd_dispatch && b.simd_dispatch;
#endif
    // OpenMP parallelises over independent problems only: one engine's numbers are
    // the serial ones bit for bit (the scalar path of c only to rounding).
    ok = ok && a.loss == b.loss && c.loss > 0 && c.loss < 2 * b.loss && b.loss < 2 * c.loss;
    std::printf("%s\n", ok ? "each translation unit answers for itself" : "FAILED");
    return ok ? 0 : 1;
}
