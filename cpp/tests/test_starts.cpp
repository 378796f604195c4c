// gd/starts.hpp: the default assignment of the disjoint init and its beta0 against references
// written here by hand (Assumption 4, Appendix D of Lai et al. 2026), and every refusal.
#include "check.hpp"

#include "relucore/gd/starts.hpp"

#include <cstdint>
#include <vector>

using namespace relucore;
using namespace relucore_test;

TEST_CASE("default_assignment: round robin over the neurons of the label's sign") {
    const double outer[] = {1.0, -1.0, 2.0, -0.5, 1.0};  // positive: 0, 2, 4; negative: 1, 3
    const double y[] = {0.5, -1.0, 3.0, 2.0, -4.0, -1.0, 1.0};
    std::vector<std::int64_t> a(7, -1);
    CHECK(default_assignment(y, 7, outer, 5, a.data()) == AssignmentCheck::ok);
    CHECK((a == std::vector<std::int64_t>{0, 1, 2, 4, 3, 1, 0}));
}

TEST_CASE("default_assignment: the first example without a neuron of its sign, or with label 0, refuses") {
    std::vector<std::int64_t> a(3);
    const double pos_only[] = {1.0, 2.0};
    const double y_neg[] = {1.0, -1.0, 0.0};
    CHECK(default_assignment(y_neg, 3, pos_only, 2, a.data()) == AssignmentCheck::no_negative_neuron);
    const double neg_only[] = {-1.0};
    CHECK(default_assignment(y_neg, 3, neg_only, 1, a.data()) == AssignmentCheck::no_positive_neuron);
    const double both[] = {1.0, -1.0};
    CHECK(default_assignment(y_neg, 3, both, 2, a.data()) == AssignmentCheck::zero_label);
    CHECK(assignment_message(AssignmentCheck::zero_label) ==
          "init='disjoint' needs non-zero labels: y has a 0, and s_{a_i} y_i > 0 must hold");
    CHECK(assignment_message(AssignmentCheck::no_positive_neuron) ==
          "init='disjoint' needs a neuron with a positive sign for each positive label: y has one, signs has none");
    CHECK(assignment_message(AssignmentCheck::no_negative_neuron) ==
          "init='disjoint' needs a neuron with a negative sign for each negative label: y has one, signs has none");
    CHECK(assignment_message(AssignmentCheck::ok).empty());
}

TEST_CASE("disjoint_start: beta_k = eps_k - |y_i| / C_g where s_k y_i > 0 and a_i != k, else eps_k") {
    const double outer[] = {1.0, -1.0, 1.0};
    const double y[] = {2.0, -3.0, 5.0};
    const std::int64_t a[] = {0, 1, 2};
    const double eps[] = {0.1, 0.1, 0.1, 0.2, 0.2, 0.2, 0.3, 0.3, 0.3};
    std::vector<double> beta(9);
    disjoint_start(y, 3, outer, 3, eps, a, 4.0, beta.data());
    // k = 0 (s = +1): example 0 is its own, 1 has the other sign, 2 is neuron 2's: 0.1 - 5 / 4.
    // k = 1 (s = -1): example 1 is its own; 0 and 2 have the other sign.
    // k = 2 (s = +1): example 0 is neuron 0's: 0.3 - 2 / 4; 2 is its own.
    const std::vector<double> want = {0.1, 0.1, 0.1 - 1.25, 0.2, 0.2, 0.2, 0.3 - 0.5, 0.3, 0.3};
    CHECK(beta == want);
}

RELUCORE_TEST_MAIN
