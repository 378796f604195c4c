// One translation unit of the abi test, compiled once per configuration (the
// CMake test gives each copy its own ABI_TU_NAME and build settings). It asks
// relucore what it was built with, and runs a small DualGD whose result the
// main program compares across the configurations.
#include "relucore/relucore.hpp"

#include <string>

namespace abi_test {

struct Answer {
    bool openmp;
    bool simd_dispatch;
    std::string abi;  // the inline namespace's name
    double loss;      // after 50 steps of the fixed problem
};

#define ABI_STR_(x) #x
#define ABI_STR(x) ABI_STR_(x)

Answer ABI_TU_NAME() {
    Answer a;
    a.openmp = relucore::has_openmp();
#if defined(RELUCORE_SIMD_DISPATCH)
    a.simd_dispatch = true;
#else
    a.simd_dispatch = false;
#endif
    a.abi = ABI_STR(RELUCORE_ABI_NAMESPACE);
    const relucore::Index n = 20;
    relucore::RowMatrix X(n, 25);
    for (relucore::Index i = 0; i < n; ++i)
        for (relucore::Index j = 0; j < 25; ++j) X(i, j) = ((i * 7 + j * 3) % 11 - 5) / 9.0 + (i == j ? 1.0 : 0.0);
    relucore::Vector y(n);
    for (relucore::Index i = 0; i < n; ++i) y[i] = (i % 3 == 0 ? -1.0 : 1.0) * (0.5 + 0.05 * double(i));
    relucore::DualGD::PositiveStart start;
    start.outer = relucore::Vector::Constant(3, 1.0);
    start.offset = 1e-2;
    relucore::GDSettings s;
    s.eta = 0.05;
    relucore::DualGD gd = relucore::DualGD::positive_start(X, y, start, s);
    gd.step(50);
    a.loss = gd.loss();
    return a;
}

}  // namespace abi_test
