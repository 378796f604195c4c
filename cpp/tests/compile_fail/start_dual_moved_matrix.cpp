// Must not compile: std::move(K) hands over storage the engine would only view (named start).
#include "fixture.hpp"

#include <utility>

int main() {
    relucore_compile_fail::Inputs in;
    relucore::DualGD gd(std::move(in.K), in.y, in.dual_start(), in.settings);
    return gd.steps_taken() == 0 ? 0 : 1;
}
