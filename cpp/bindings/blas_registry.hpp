// The BLAS that relucore._core hands to linalg/blas.hpp: scipy's, registered
// on the first call that forms K = X X^T or W = W0 + C X (so that importing
// relucore never imports scipy.linalg), with its LAPACK (linalg/lapack.hpp).
// bind_blas.cpp holds the state.
#pragma once

#include <pybind11/pybind11.h>

#include "relucore/linalg/blas.hpp"
#include "relucore/linalg/lapack.hpp"

namespace relucore::bindings {

// Registers scipy's BLAS unless done, refused, or switched off (GIL held).
void ensure_blas();

// What a binding that forms K or W holds while it runs: the BLAS registered
// first, then its pool limited to one thread until the binding returns.
inline blas::SingleThreaded blas_for_call() {
    ensure_blas();
    return blas::SingleThreaded();
}

}  // namespace relucore::bindings
