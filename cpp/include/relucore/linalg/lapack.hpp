// The eigenvalues of a symmetric matrix behind one function,
// symmetric_eigenvalues(), used wherever the prepare step needs the spectrum
// of K (mu_1 for the default step and tolerance, mu_n for the conditioning
// rule).
//
// The call goes to LAPACK's dsyevd (eigenvalues only: a blocked Householder
// tridiagonalisation and the root-free QR of the tridiagonal matrix) when a
// LAPACK is registered (register_lapack()) and the matrix has at least
// defaults::lapack_eigen_min_rows rows, and to Eigen's
// SelfAdjointEigenSolver otherwise, so a C++ program that embeds the headers
// without any LAPACK builds and runs unchanged. The Python package registers,
// with its BLAS (linalg/blas.hpp), the LAPACK that scipy loads
// (scipy.linalg.cython_lapack; relucore/_core's bind_blas.cpp): its blocked
// tridiagonalisation is faster than Eigen's on large K.
//
// Threads: the LAPACK runs on the BLAS registered with it, whose pool a
// binding keeps to one thread while it runs (blas::SingleThreaded).
//
// Rounding: LAPACK and Eigen order their sums differently; their eigenvalues
// agree to a few ulps of mu_1 and may differ in the last bits. On one machine
// with one library a result is always the same.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/types.hpp"
#include "relucore/defaults.hpp"

#include <Eigen/Eigenvalues>

#include <algorithm>
#include <atomic>
#include <climits>
#include <vector>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

namespace lapack {

// The Fortran interface with 32-bit integers (LP64), every argument by
// pointer, as scipy.linalg.cython_lapack exports it.
using dsyevd_fn = void (*)(char* jobz, char* uplo, int* n, double* a, int* lda, double* w, double* work, int* lwork,
                           int* iwork, int* liwork, int* info);

/// A LAPACK to dispatch to.
struct Library {
    dsyevd_fn dsyevd = nullptr;
};

namespace detail {

inline std::atomic<const Library*>& library() {
    static std::atomic<const Library*> lib{nullptr};
    return lib;
}

}  // namespace detail

/// Makes `lib` (which must outlive its registration; nullptr: none) the LAPACK
/// that later calls use.
inline void register_lapack(const Library* lib) {
    detail::library().store(lib, std::memory_order_release);
}

/// The registered LAPACK, or nullptr when Eigen's solver is used.
inline const Library* registered_lapack() {
    return detail::library().load(std::memory_order_acquire);
}

}  // namespace lapack

namespace detail {

/// What Eigen::SelfAdjointEigenSolver<Matrix>(K, Eigen::EigenvaluesOnly) computes, bit for
/// bit (the same scaling into [-1, 1], Householder tridiagonalisation and implicit QR, through
/// Eigen's public Tridiagonalization and computeFromTridiagonal), without instantiating the
/// solver's compute(): that also compiles the accumulation of the Householder vectors into
/// eigenvectors (a run-time branch there), most of the solver's template instantiation.
template <class Matrix>
bool eigen_eigenvalues(const ConstMatrixRef& K, VectorRef mu) {
    using Solver = Eigen::SelfAdjointEigenSolver<Matrix>;
    using Square = typename Solver::EigenvectorsType;
    const Index n = K.rows();
    if (n <= 1) {  // the solver's own case: K(0, 0), unchecked
        if (n == 1) mu[0] = K(0, 0);
        return true;
    }
    Square mat = K.template triangularView<Eigen::Lower>();
    Scalar scale = mat.cwiseAbs().maxCoeff();
    if (scale == Scalar(0)) scale = Scalar(1);
    mat.template triangularView<Eigen::Lower>() /= scale;
    Eigen::Tridiagonalization<Square> tri;
    tri.compute(mat);
    Solver eig;
    eig.computeFromTridiagonal(tri.diagonal(), tri.subDiagonal(), Eigen::EigenvaluesOnly);
    if (eig.info() != Eigen::Success) return false;
    mu = eig.eigenvalues() * scale;
    return true;
}

}  // namespace detail

/// The eigenvalues of the symmetric matrix K (its lower triangle is read),
/// ascending, into mu (K.rows() entries). Returns false when the solver
/// failed (a non-finite K); mu is then unspecified. A template (Matrix is
/// always RowMatrix) so that Eigen's solver is compiled only in the
/// translation units that call it (docs/embedding.md, compile cost).
template <class Matrix = RowMatrix>
bool symmetric_eigenvalues(const ConstMatrixRef& K, VectorRef mu) {
    const Index n = K.rows();
    const lapack::Library* lib = lapack::registered_lapack();
    if (lib != nullptr && lib->dsyevd != nullptr && n >= defaults::lapack_eigen_min_rows && n <= Index(INT_MAX / 4)) {
        // The row-major copy is, read column-major, K^T = K: its upper triangle is K's lower one.
        Matrix a = K;
        char jobz = 'N', uplo = 'U';
        int nn = static_cast<int>(n), lda = nn, lwork = 2 * nn + 1, liwork = 1, info = 0, iwork = 0;
        std::vector<double> work(static_cast<std::size_t>(lwork));
        lib->dsyevd(&jobz, &uplo, &nn, a.data(), &lda, mu.data(), work.data(), &lwork, &iwork, &liwork, &info);
        return info == 0;
    }
    return detail::eigen_eigenvalues<Matrix>(K, mu);
}

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
