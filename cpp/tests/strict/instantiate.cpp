// Instantiates the templates of the public headers (positive_start(), the
// engines' runs with and without a callback) so that the strict-warning check
// of .ci/cpp.sh and .ci/tidy.sh see their bodies; a header on its own only
// shows the code that does not depend on a template parameter. Compiled with
// -fsyntax-only there, never run.
#include "relucore/analysis.hpp"

int main() {  // NOLINT(bugprone-exception-escape): a throw here is a failure, as intended
    using namespace relucore;
    const RowMatrix X = RowMatrix::Random(6, 12);
    const Vector y = Vector::Ones(6), outer = Vector::Ones(2);
    RowMatrix K(6, 6), beta0(2, 6), alpha0(2, 6), W0(2, 12);
    Vector mu(6);
    Scalar eta = 0, tol = 0;
    if (positive_start(X, y, outer, StartOptions{}, K, mu, beta0, alpha0, W0, eta, tol) != StartCheck::ok) return 1;
    GDSettings s;
    s.eta = eta;
    s.max_steps = 50;
    History history;
    DualGD::PositiveStart ps;
    ps.outer = outer;
    ps.offset = 1e-3;
    DualGD dual = DualGD::positive_start(X, y, ps, s);
    dual.run(&history, 10, [](DualGD& e) { return e.loss() < 1e-12; });
    dual.run(nullptr, 10, [](DualGD&) {});
    DenseGD::Start ds;
    ds.outer = outer;
    ds.W = W0;
    ds.alpha = alpha0;
    DenseGD dense(X, y, std::move(ds), s);
    dense.run(&history, 10, [](DenseGD& e) { return e.loss() < 1e-12; });
    return dense.run().status == Status::converged ? 0 : 1;
}
