/// @file core/parallel.hpp
/// A parallel loop over independent problems.
///
/// OpenMP is optional (RELUCORE_WITH_OPENMP); the thread count is passed per
/// call and never changes global OpenMP state. An exception thrown by any
/// iteration is captured and rethrown on the calling thread after the loop,
/// because an exception escaping an OpenMP region terminates the program.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/types.hpp"

#include <exception>
#include <mutex>

#if defined(RELUCORE_WITH_OPENMP)
#include <omp.h>
#endif

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

/// Threads available to relucore when the caller does not say.
inline int default_threads() {
#if defined(RELUCORE_WITH_OPENMP)
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/// Whether relucore was compiled with OpenMP (RELUCORE_WITH_OPENMP).
inline bool has_openmp() {
#if defined(RELUCORE_WITH_OPENMP)
    return true;
#else
    return false;
#endif
}

/// Calls body(i) for i in [0, count) on up to n_threads threads (<= 0: the
/// default). Iterations must be independent; each is scheduled dynamically, so
/// results cannot depend on the thread count as long as body(i) only touches
/// problem i. Every iteration runs even if some throw; the first exception
/// captured is rethrown on the calling thread once the loop has finished.
template <class Body>
void parallel_for(Index count, int n_threads, Body&& body) {
    if (count <= 0) return;
    if (n_threads <= 0) n_threads = default_threads();
    if (n_threads > count) n_threads = static_cast<int>(count);
    std::exception_ptr error;
    std::mutex error_mutex;
#if defined(RELUCORE_WITH_OPENMP)
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads) if (n_threads > 1)
#endif
    for (Index i = 0; i < count; ++i) {
        try {
            body(i);
        } catch (...) {
            std::lock_guard<std::mutex> lock(error_mutex);
            if (!error) error = std::current_exception();
        }
    }
    if (error) std::rethrow_exception(error);
}

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
