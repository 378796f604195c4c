/// @file gd/starts.hpp
/// The starting predictions beta0 of the disjoint init of Lai et al. 2026 (Assumption 4, Appendix D)
/// from the labels y and the offsets eps of one problem (that of the all-positive init is eps itself):
/// the one home of these definitions (relucore.gd.inits calls them). The prepare step (gd/prepare.hpp,
/// StartBeta::given) then solves K alpha0 = beta0 and forms W0 = alpha0 X. Computed from the labels
/// and offsets in the units the run uses, so that a run on exactly rescaled data (gd/scaling.hpp)
/// starts from the rescaled problem's own start.
#pragma once

#include "relucore/core/abi.hpp"

#include "relucore/core/types.hpp"

#include <cstdint>
#include <string>

namespace relucore {
inline namespace RELUCORE_ABI_NAMESPACE {

/// Why default_assignment() found no assignment (ok: it did).
enum class AssignmentCheck : int {
    ok = 0,
    no_positive_neuron = 1,  ///< a label is positive and no outer weight is
    no_negative_neuron = 2,  ///< a label is negative and no outer weight is
    zero_label = 3,          ///< a label is 0 (or not a number)
};

/// The round-robin assignment of the disjoint init: example i goes to the next neuron (in the order
/// of k) whose outer weight has the sign of y_i, cycling through them. a: n entries. Stops at the
/// first example that has none, with its reason.
inline AssignmentCheck default_assignment(const Scalar* y, Index n, const Scalar* outer, Index m, std::int64_t* a) {
    Index n_pos = 0, n_neg = 0;
    for (Index k = 0; k < m; ++k) {
        n_pos += outer[k] > 0 ? 1 : 0;
        n_neg += outer[k] < 0 ? 1 : 0;
    }
    Index ip = 0, ineg = 0;
    for (Index i = 0; i < n; ++i) {
        const bool positive = y[i] > 0;
        if (!positive && !(y[i] < 0)) return AssignmentCheck::zero_label;
        const Index count = positive ? n_pos : n_neg;
        if (count == 0) return positive ? AssignmentCheck::no_positive_neuron : AssignmentCheck::no_negative_neuron;
        Index& next = positive ? ip : ineg;
        Index seen = -1, k = 0;
        const Index want = next % count;
        for (; k < m; ++k) {
            if (positive ? outer[k] > 0 : outer[k] < 0) ++seen;
            if (seen == want) break;
        }
        a[i] = static_cast<std::int64_t>(k);
        ++next;
    }
    return AssignmentCheck::ok;
}

/// The error text of a refused default assignment (docs/errors.md).
inline std::string assignment_message(AssignmentCheck check) {
    switch (check) {
        case AssignmentCheck::no_positive_neuron:
            return "init='disjoint' needs a neuron with a positive sign for each positive label: y has one, signs has "
                   "none";
        case AssignmentCheck::no_negative_neuron:
            return "init='disjoint' needs a neuron with a negative sign for each negative label: y has one, signs has "
                   "none";
        case AssignmentCheck::zero_label:
            return "init='disjoint' needs non-zero labels: y has a 0, and s_{a_i} y_i > 0 must hold";
        case AssignmentCheck::ok:
            break;
    }
    return {};
}

/// beta0 of the disjoint init (Appendix D, Assumption 4): beta_k = (1/C_g) A_k y + eps_k with
/// (A_k)_ii = 0 where a_i = k or s_k y_i < 0, else -sign(y_i). eps and beta0: m x n, row-major
/// (beta0 may be eps itself).
inline void disjoint_start(const Scalar* y, Index n, const Scalar* outer, Index m, const Scalar* eps,
                           const std::int64_t* a, Scalar C_g, Scalar* beta0) {
    for (Index k = 0; k < m; ++k) {
        for (Index i = 0; i < n; ++i) {
            const Scalar e = eps[k * n + i];
            const bool other = a[i] != static_cast<std::int64_t>(k) && outer[k] * y[i] > 0;
            if (!other) {
                beta0[k * n + i] = e;
                continue;
            }
            const Scalar sign = y[i] > 0 ? Scalar(1) : (y[i] < 0 ? Scalar(-1) : y[i]);
            beta0[k * n + i] = e + -sign * y[i] / C_g;
        }
    }
}

}  // namespace RELUCORE_ABI_NAMESPACE
}  // namespace relucore
