// Must not compile (a borrowed view, relucore::borrow): a moved-from RowMatrix is an rvalue the engine cannot keep.
#include "fixture.hpp"

#include <utility>

int main() {
    relucore_compile_fail::Inputs in;
    relucore::DualGD gd(relucore::borrow, std::move(in.K), in.y, in.dual_start(), in.settings);
    return gd.steps_taken() == 0 ? 0 : 1;
}
