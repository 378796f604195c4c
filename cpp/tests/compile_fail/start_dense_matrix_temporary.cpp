// Must not compile: a RowMatrix temporary X dies at the end of the statement (named start).
#include "fixture.hpp"

int main() {
    relucore_compile_fail::Inputs in;
    relucore::DenseGD gd(relucore::RowMatrix(in.X), in.y, in.dense_start(), in.settings);
    return gd.steps_taken() == 0 ? 0 : 1;
}
