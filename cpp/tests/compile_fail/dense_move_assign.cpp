// Must not compile: an engine is bound to its X for life, so move assignment is
// deleted too (the compiler names DenseGD::operator=).
#include "fixture.hpp"

#include <utility>

int main() {
    relucore_compile_fail::Inputs in;
    relucore::DenseGD a(in.X, in.y, in.dense_start(), in.settings);
    relucore::DenseGD b(in.X, in.y, in.dense_start(), in.settings);
    b = std::move(a);
    return b.steps_taken() == 0 ? 0 : 1;
}
