/// @file core/status.hpp
/// Every outcome of every engine and solver, in one table: the GD runs (train, Trainer), the
/// certified limit (steps=inf) and the exact flow, the mean-field SGD, the minimum-norm solvers,
/// and a sweep trial that raised. Each outcome has one name, one message and one success flag,
/// and every front end (C++ results, relucore.Status, the sweep store's status column, the
/// command line) reads them from here.
///
/// The rule for success is the same everywhere: a result succeeds when the claim its status makes
/// holds: a stationary point that leaves no example unfit (converged), a limit proved to be the
/// run's limit that leaves no example unfit (certified), a fixed budget run without a numerical
/// failure (completed), a solution proved optimal (optimal). Every other outcome is a failure.
#pragma once

#include "relucore/core/abi.hpp"

#include <cstddef>
#include <iterator>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

/// How a run or a solve ended. The values are the row indices of status_table.
enum class Status : int {
    converged = 0,          ///< the gradient norm fell below tol, no example left unfit
    max_steps = 1,          ///< the step budget was used up before the gradient norm fell below tol
    diverged = 2,           ///< the loss, the gradient or the state became non-finite or exploded
    cancelled = 3,          ///< the cancel flag was raised
    stopped = 4,            ///< the run's callback asked to stop
    stalled = 5,            ///< a stationary point or limit that leaves examples unfit
    certified = 6,          ///< a limit proved to be the run's limit, no example left unfit
    uncertified = 7,        ///< the limit reached failed its self-check
    t_max = 8,              ///< the flow stopped at t_max before its limit
    max_events = 9,         ///< the flow stopped after max_events events before its limit
    stuck = 10,             ///< no continuation of a flow event is consistent
    completed = 11,         ///< a fixed step budget ran with no numerical failure (no stopping test)
    optimal = 12,           ///< a minimum-norm solution proved optimal
    best_candidate = 13,    ///< the search budget ran out: the best solution found, not proved optimal
    max_iter = 14,          ///< the QP solver's iteration budget ran out
    singular = 15,          ///< the QP solver met a singular system
    infeasible_start = 16,  ///< the QP solver's start is infeasible
    nonfinite = 17,         ///< the solution's residuals are not finite
    error = 18,             ///< a sweep trial raised (its text is in the error column)
};

/// One row of status_table: the outcome, its name (as stored and printed), whether it is a
/// success, and what it means.
struct StatusInfo {
    Status status;
    const char* name;
    bool success;
    const char* message;
};

/// The name, success flag and message of every Status, in the order of their values.
inline constexpr StatusInfo status_table[] = {
    {Status::converged, "converged", true,
     "converged: the gradient norm fell below tol at a point that leaves no example unfit"},
    {Status::max_steps, "max_steps", false, "the step budget was used up before the gradient norm fell below tol"},
    {Status::diverged, "diverged", false,
     "diverged: the loss, the gradient or the weights became non-finite or exploded; try a smaller eta"},
    {Status::cancelled, "cancelled", false, "cancelled"},
    {Status::stopped, "stopped", false, "stopped by the callback"},
    {Status::stalled, "stalled", false,
     "stalled: a stationary point (or limit) that leaves examples unfit (no neuron active on them)"},
    {Status::certified, "certified", true,
     "certified limit: the returned state is proved to be the limit of the run and leaves no example unfit"},
    {Status::uncertified, "uncertified", false, "not certified: the limit failed its self-check"},
    {Status::t_max, "t_max", false, "the flow stopped at t_max before reaching its limit"},
    {Status::max_events, "max_events", false, "the flow stopped after max_events events before reaching its limit"},
    {Status::stuck, "stuck", false, "stuck: no continuation of a flow event is consistent"},
    {Status::completed, "completed", true, "completed: every requested step ran with no numerical failure"},
    {Status::optimal, "optimal", true, "optimal: the solution is proved to be the minimum-norm one"},
    {Status::best_candidate, "best_candidate", false,
     "best candidate: the search budget ran out before the solution was proved optimal (an upper bound)"},
    {Status::max_iter, "max_iter", false, "the solver's iteration budget ran out before the KKT conditions held"},
    {Status::singular, "singular", false, "the solver met a singular system"},
    {Status::infeasible_start, "infeasible_start", false, "the solver's starting point is infeasible"},
    {Status::nonfinite, "nonfinite", false, "the residuals of the solution are not finite"},
    {Status::error, "error", false, "the trial raised an exception (see its error text)"},
};

/// The number of outcomes (rows of status_table).
inline constexpr std::size_t status_count = std::size(status_table);

/// The row of status_table of an outcome.
constexpr const StatusInfo& status_info(Status s) {
    return status_table[static_cast<std::size_t>(s)];
}

/// The name of an outcome ("converged", ...), as the sweep store and the command line print it.
constexpr const char* status_name(Status s) {
    return status_info(s).name;
}

/// What an outcome means, in words.
constexpr const char* status_message(Status s) {
    return status_info(s).message;
}

/// Whether an outcome is a success (the rule in this file's comment).
constexpr bool status_success(Status s) {
    return status_info(s).success;
}

/// The one rule for a stationary outcome: a stationary point (converged) or a proved limit
/// (certified) that leaves examples unfit is stalled (every other outcome is returned as it is).
constexpr Status stalled_if_unfit(Status s, bool leaves_unfit) {
    return leaves_unfit && (s == Status::converged || s == Status::certified) ? Status::stalled : s;
}

namespace detail {
constexpr bool status_table_in_order() {
    for (std::size_t i = 0; i < status_count; ++i)
        if (static_cast<std::size_t>(status_table[i].status) != i) return false;
    return true;
}
}  // namespace detail
static_assert(detail::status_table_in_order(), "status_table's rows must follow the values of Status");

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
