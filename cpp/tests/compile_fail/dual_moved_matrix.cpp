// Must not compile: a moved-from RowMatrix is an rvalue the engine cannot keep.
#include "fixture.hpp"

#include <utility>

int main() {
    relucore_compile_fail::Inputs in;
    relucore::DualGD gd(std::move(in.K), in.y, in.outer, in.alpha0, in.beta0, in.settings);
    return gd.steps_taken() == 0 ? 0 : 1;
}
