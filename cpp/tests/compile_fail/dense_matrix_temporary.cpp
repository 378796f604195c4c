// Must not compile (a borrowed view, relucore::borrow): a RowMatrix temporary X dies at the end of the statement.
#include "fixture.hpp"

int main() {
    relucore_compile_fail::Inputs in;
    relucore::DenseGD gd(relucore::borrow, relucore::RowMatrix(in.X), in.y, in.dense_start(), in.settings);
    return gd.steps_taken() == 0 ? 0 : 1;
}
