// Shared inputs of the compile-fail cases: each case is one engine
// construction that must not compile (control.cpp holds the ones that must).
#pragma once

#include "relucore/gd/dense_gd.hpp"
#include "relucore/gd/dual_gd.hpp"
#include "relucore/linalg/gram.hpp"

namespace relucore_compile_fail {

using namespace relucore;
using ColMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic>;

struct Inputs {
    RowMatrix X = RowMatrix::Identity(4, 6);
    RowMatrix K = gram_matrix(X);
    Vector y = Vector::Ones(4);
    Vector outer = Vector::Ones(2);
    RowMatrix alpha0 = RowMatrix::Zero(2, 4);
    RowMatrix beta0 = RowMatrix::Constant(2, 4, 1e-3);
    RowMatrix W0 = RowMatrix::Zero(2, 6);
    GDSettings settings = [] {
        GDSettings s;
        s.eta = 0.1;
        s.max_steps = 10;
        return s;
    }();

    /// The named starts of the same engines: the outer weights and two matrices
    /// (DualGD: alpha, beta; DenseGD: W, alpha).
    template <class S>
    S start(RowMatrix S::* first, const RowMatrix& v1, RowMatrix S::* second, const RowMatrix& v2) const {
        S s;
        s.outer = outer;
        s.*first = v1;
        s.*second = v2;
        return s;
    }
    DualGD::Start dual_start() const { return start(&DualGD::Start::alpha, alpha0, &DualGD::Start::beta, beta0); }
    DenseGD::Start dense_start() const { return start(&DenseGD::Start::W, W0, &DenseGD::Start::alpha, alpha0); }
};

}  // namespace relucore_compile_fail
