// The linear dynamics of one activation pattern (docs/math.md §13).
//
// With D_k = diag(active[k]) fixed and the entries sliding[k] held at zero, the residual on
// the examples A active in some neuron obeys r_A' = -M r_A (flow) or r_A <- (I - eta M) r_A
// (GD), M = sum_k s_k^2 (D_k Q_k D_k)_AA symmetric positive definite (Q_k = K without
// sliding entries: the Schur complement of K on them), and
//   beta_k(t) = beta_inf_k + B_k M^{-1} r_A(t),   alpha_k(t) = alpha_inf_k + C_k M^{-1} r_A(t).
// Shared by the certified GD limit and the exact gradient flow (both in relucore.gd.limit /
// relucore.theory.flow on the Python side).
#pragma once

#include "relucore/core/abi.hpp"

#include <Eigen/Dense>

#include "relucore/core/types.hpp"

#include <vector>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {
namespace flow {

using Mat = Eigen::MatrixXd;
using Vec = Eigen::VectorXd;
using BoolMat = Eigen::Array<bool, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// One phase in modal form: M = V diag(lam) V^T, c = V^T r_A, z = M^{-1} r_A.
struct Phase {
    std::vector<Index> A;  ///< examples active in some neuron
    Mat M, V;
    Vec lam, c, z, rA;
    Vec r;               ///< the full residual at the start of the phase
    std::vector<Mat> B;  ///< per neuron, n x |A|
    std::vector<Mat> C;  ///< per neuron, n x |A|
    RowMatrix beta_inf, alpha_inf;
};

/// Q = K - K_{:,S} K_SS^{-1} K_{S,:} with rows and columns S zeroed, and P = I - E_S K_SS^{-1} K_{S,:}.
inline void schur(const Mat& K, const std::vector<Index>& S, Mat& Q, Mat& P) {
    const Index n = K.rows();
    Q = K;
    P = Mat::Identity(n, n);
    if (S.empty()) return;
    const Index s = static_cast<Index>(S.size());
    Mat KSS(s, s), KS(s, n);
    for (Index a = 0; a < s; ++a) {
        KS.row(a) = K.row(S[detail::idx(a)]);
        for (Index b = 0; b < s; ++b) KSS(a, b) = K(S[detail::idx(a)], S[detail::idx(b)]);
    }
    const Mat G = KSS.partialPivLu().solve(KS);  // |S| x n
    Mat KcolS(n, s);
    for (Index a = 0; a < s; ++a) KcolS.col(a) = K.col(S[detail::idx(a)]);
    Q.noalias() -= KcolS * G;
    for (Index a = 0; a < s; ++a) {
        Q.row(S[detail::idx(a)]).setZero();
        Q.col(S[detail::idx(a)]).setZero();
        P.row(S[detail::idx(a)]) -= G.row(a);
    }
}

/// The phase of pattern (active, sliding) from the state (alpha, beta); r (length n) replaces
/// the residual computed from beta when given (the flow carries it in modal form).
inline Phase linear_phase(const Mat& K, const Vec& y, const Vec& signs, const RowMatrix& alpha, const RowMatrix& beta,
                          const BoolMat& active, const BoolMat& sliding, const Vec* r_in = nullptr) {
    const Index m = beta.rows(), n = beta.cols();
    Phase ph;
    for (Index i = 0; i < n; ++i)
        if (active.col(i).any()) ph.A.push_back(i);
    const Index nA = static_cast<Index>(ph.A.size());
    if (r_in) {
        ph.r = *r_in;
    } else {
        ph.r = -y;
        for (Index k = 0; k < m; ++k)
            for (Index i = 0; i < n; ++i)
                if (active(k, i)) ph.r(i) += signs(k) * beta(k, i);
    }
    ph.M = Mat::Zero(nA, nA);
    ph.B.assign(detail::idx(m), Mat::Zero(n, nA));
    ph.C.assign(detail::idx(m), Mat::Zero(n, nA));
    Mat Q, P;
    for (Index k = 0; k < m; ++k) {
        Vec Dk(nA);
        for (Index a = 0; a < nA; ++a) Dk(a) = active(k, ph.A[detail::idx(a)]) ? 1.0 : 0.0;
        if (!(Dk.array() > 0).any()) continue;
        std::vector<Index> S;
        for (Index i = 0; i < n; ++i)
            if (sliding(k, i)) S.push_back(i);
        schur(K, S, Q, P);
        for (Index a = 0; a < nA; ++a) {
            ph.B[detail::idx(k)].col(a) = signs(k) * Dk(a) * Q.col(ph.A[detail::idx(a)]);
            ph.C[detail::idx(k)].col(a) = signs(k) * Dk(a) * P.col(ph.A[detail::idx(a)]);
        }
        for (Index a = 0; a < nA; ++a)
            if (Dk(a) > 0) ph.M.row(a) += signs(k) * ph.B[detail::idx(k)].row(ph.A[detail::idx(a)]);
    }
    ph.M = 0.5 * (ph.M + ph.M.transpose()).eval();
    ph.rA.resize(nA);
    for (Index a = 0; a < nA; ++a) ph.rA(a) = ph.r(ph.A[detail::idx(a)]);
    if (nA > 0) {
        Eigen::SelfAdjointEigenSolver<Mat> es(ph.M);
        ph.lam = es.eigenvalues();
        ph.V = es.eigenvectors();
    } else {
        ph.lam.resize(0);
        ph.V.resize(0, 0);
    }
    ph.c = ph.V.transpose() * ph.rA;
    Vec modal(nA);
    for (Index a = 0; a < nA; ++a) modal(a) = ph.lam(a) > 0 ? ph.c(a) / ph.lam(a) : 0.0;
    ph.z = ph.V * modal;
    ph.beta_inf = beta;
    ph.alpha_inf = alpha;
    for (Index k = 0; k < m; ++k) {
        ph.beta_inf.row(k) -= (ph.B[detail::idx(k)] * ph.z).transpose();
        ph.alpha_inf.row(k) -= (ph.C[detail::idx(k)] * ph.z).transpose();
    }
    return ph;
}

}  // namespace flow
}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
