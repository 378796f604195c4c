/// @file gd/rescaled_run.hpp
/// A run on an exactly rescaled problem (gd/scaling.hpp): the problem's data and the options given in
/// its units in the units the run uses, and the run's results back in the caller's units, exactly.
///
/// A C++ caller with data far from unit scale (X 2^-400, say) prepares it with PrepareRequest::rescale
/// (prepare_start() of gd/prepare.hpp plans the exponents, rescales the data, the given step,
/// tolerance and start, and computes the start on the copy it returns), or plans and rescales it
/// itself with rescale_problem() (gd/scaling.hpp) and scale_down_settings(); it runs on the
/// rescaled copy and calls scale_back_run(): the result is the unit-scale run's, times the exact
/// powers of two of its units.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/status.hpp"
#include "relucore/core/types.hpp"
#include "relucore/gd/run.hpp"
#include "relucore/gd/scaling.hpp"

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {
namespace scaling {

/// A step and a tolerance given in the caller's units in the rescaled units, exactly (eta as
/// 4^-ex, tol as a gradient norm, 2^-(ex+ey)).
inline void scale_down_settings(Exponents e, GDSettings& s) {
    scale(&s.eta, 1, -power(units::ETA, e));
    scale(&s.tol, 1, -power(units::GRAD, e));
}

/// Whether the results of a run on the rescaled problem fit in float64 once scaled back (a diverged
/// run always does: it reports what it reached): the states alpha, beta (m x n) and W (m x d, or
/// empty) by their largest entries, the summary's loss, gradient norm and unresolved bound for
/// overflow only (they may round into the subnormals near zero).
inline bool representable_run(Exponents e, const RunSummary& r, const ConstMatrixRef& alpha, const ConstMatrixRef& beta,
                              const ConstMatrixRef& W) {
    if (!rescaled(e) || r.status == Status::diverged) return true;
    return representable(alpha.data(), alpha.size(), units::ALPHA, e, false) &&
           representable(beta.data(), beta.size(), units::Y, e, false) &&
           representable(W.data(), W.size(), units::W, e, false) && representable(&r.loss, 1, units::LOSS, e, true) &&
           representable(&r.grad_norm, 1, units::GRAD, e, true) &&
           representable(&r.unresolved_bound, 1, units::GRAD, e, true);
}

/// The results of a run on the rescaled problem in the caller's units, in place: the summary's
/// loss, gradient norm and unresolved bound, and the states alpha, beta (m x n) and W (m x d, or
/// empty), each multiplied by the exact power of two of its unit. Returns false, changing nothing,
/// where representable_run() does not hold (unrepresentable_message() says why).
inline bool scale_back_run(Exponents e, RunSummary& r, MatrixRef alpha, MatrixRef beta, MatrixRef W) {
    if (!rescaled(e)) return true;
    if (!representable_run(e, r, alpha, beta, W)) return false;
    scale(alpha.data(), alpha.size(), power(units::ALPHA, e));
    scale(beta.data(), beta.size(), power(units::Y, e));
    scale(W.data(), W.size(), power(units::W, e));
    scale(&r.loss, 1, power(units::LOSS, e));
    scale(&r.grad_norm, 1, power(units::GRAD, e));
    scale(&r.unresolved_bound, 1, power(units::GRAD, e));
    return true;
}

}  // namespace scaling
}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
