// The eigenvalues of a symmetric matrix behind one function,
// symmetric_eigenvalues(), used wherever the prepare step needs the spectrum
// of K (mu_1 for the default step and tolerance, mu_n for the conditioning
// rule), and the Cholesky factorisation of the prepare step's solves for the
// start (class Cholesky: dpotrf, dpocon and dpotrs from
// defaults::lapack_cholesky_min_rows rows on, else Eigen's LLT).
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

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <vector>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

namespace lapack {

// The Fortran interface with 32-bit integers (LP64), every argument by
// pointer, as scipy.linalg.cython_lapack exports it.
using dsyevd_fn = void (*)(char* jobz, char* uplo, int* n, double* a, int* lda, double* w, double* work, int* lwork,
                           int* iwork, int* liwork, int* info);
using dpotrf_fn = void (*)(char* uplo, int* n, double* a, int* lda, int* info);
using dpotrs_fn = void (*)(char* uplo, int* n, int* nrhs, double* a, int* lda, double* b, int* ldb, int* info);
using dpocon_fn = void (*)(char* uplo, int* n, double* a, int* lda, double* anorm, double* rcond, double* work,
                           int* iwork, int* info);

/// A LAPACK to dispatch to (a null function: that routine is Eigen's).
struct Library {
    dsyevd_fn dsyevd = nullptr;
    dpotrf_fn dpotrf = nullptr;  ///< with dpotrs and dpocon: Cholesky (all three or none is used)
    dpotrs_fn dpotrs = nullptr;
    dpocon_fn dpocon = nullptr;
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

/// The Cholesky factorisation K = L L^T of a symmetric positive definite K (its lower triangle
/// is read) for the prepare step's solves of the start (gd/prepare.hpp): LAPACK's dpotrf, its
/// reciprocal condition estimate dpocon and the solve dpotrs when a LAPACK with all three is
/// registered and K has at least defaults::lapack_cholesky_min_rows rows, Eigen's LLT (and
/// its estimate) otherwise. The interface is the part of Eigen::LLT those solves read: info(),
/// rcond() (only after a successful factorisation) and solve_rows(). The blocked LAPACK
/// factorisation runs on the registered BLAS, faster than Eigen's on large K; the two round
/// differently and their estimates differ (both estimate the reciprocal 1-norm condition
/// number). On one machine with one library a result is always the same.
class Cholesky {
public:
    explicit Cholesky(const ConstMatrixRef& K) {
        const Index n = K.rows();
        const lapack::Library* lib = lapack::registered_lapack();
        if (lib == nullptr || lib->dpotrf == nullptr || lib->dpotrs == nullptr || lib->dpocon == nullptr ||
            n < defaults::lapack_cholesky_min_rows || n > Index(INT_MAX / 4)) {
            llt_.compute(K);
            info_ = llt_.info();
            return;
        }
        lib_ = lib;
        // The 1-norm of the symmetric matrix of K's lower triangle, for the estimate.
        std::vector<Scalar> col(static_cast<std::size_t>(n), Scalar(0));
        for (Index i = 0; i < n; ++i)
            for (Index j = 0; j <= i; ++j) {
                const Scalar a = std::abs(K(i, j));
                col[static_cast<std::size_t>(j)] += a;
                if (j != i) col[static_cast<std::size_t>(i)] += a;
            }
        anorm_ = n > 0 ? *std::max_element(col.begin(), col.end()) : Scalar(0);
        // The row-major copy is, read column-major, K^T = K: its upper triangle is K's lower one.
        factor_ = K;
        char uplo = 'U';
        int nn = static_cast<int>(n), info = 0;
        lib->dpotrf(&uplo, &nn, factor_.data(), &nn, &info);
        info_ = info == 0 ? Eigen::Success : Eigen::NumericalIssue;
    }

    Eigen::ComputationInfo info() const { return info_; }

    /// The estimate of 1 / (||K||_1 ||K^{-1}||_1) of the factorisation (which must have succeeded).
    Scalar rcond() const {
        if (lib_ == nullptr) return llt_.rcond();
        const Index n = factor_.rows();
        char uplo = 'U';
        int nn = static_cast<int>(n), info = 0;
        Scalar anorm = anorm_, rc = 0;
        std::vector<Scalar> work(static_cast<std::size_t>(3 * n));
        std::vector<int> iwork(static_cast<std::size_t>(n));
        lib_->dpocon(&uplo, &nn, const_cast<Scalar*>(factor_.data()), &nn, &anorm, &rc, work.data(), iwork.data(),
                     &info);
        return info == 0 ? rc : Scalar(0);
    }

    /// (K^{-1} B^T)^T for the m x n rows B: the solve of every row at once.
    RowMatrix solve_rows(const ConstMatrixRef& B) const {
        if (lib_ == nullptr) return llt_.solve(B.transpose()).transpose();
        // Row-major m x n is column-major n x m: the right-hand sides are B's rows, solved in place.
        RowMatrix out = B;
        char uplo = 'U';
        int nn = static_cast<int>(factor_.rows()), nrhs = static_cast<int>(B.rows()), info = 0;
        if (nrhs == 0) return out;
        lib_->dpotrs(&uplo, &nn, &nrhs, const_cast<Scalar*>(factor_.data()), &nn, out.data(), &nn, &info);
        return out;
    }

private:
    const lapack::Library* lib_ = nullptr;  // null: Eigen's llt_
    Eigen::LLT<RowMatrix> llt_;
    RowMatrix factor_;  // LAPACK's factor (U, column-major)
    Scalar anorm_ = 0;
    Eigen::ComputationInfo info_ = Eigen::NumericalIssue;
};

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
