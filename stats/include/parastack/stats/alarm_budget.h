// How the significance level alpha is spent over the tests of one job.
//
// The paper applies alpha to each geometric test. Every observation made with a built model is such
// a test, and a 24-hour job sampled every 400 ms makes about 200,000 of them, so the chance that a
// healthy job sees a false alarm somewhere is far above alpha. PerJob spends alpha over the whole
// job instead: test i gets alpha_i with sum_i alpha_i <= alpha, so by the union bound the
// probability of any false alarm in a job is at most alpha, however long it runs.
// See docs/statistics.md for the derivation and what it costs in detection delay.
#pragma once

#include <cstdint>
#include <string_view>

namespace parastack::stats {

enum class AlarmBudget {
  PerTest,  // the paper's rule: every test at alpha
  PerJob,   // alpha bounds the false-alarm probability of the whole job (default)
};

std::string_view to_string(AlarmBudget budget);

struct AlarmPolicy {
  AlarmBudget budget = AlarmBudget::PerJob;
  double alpha = 0.001;
  // The job length the budget is planned for (e.g. the batch time limit). Jobs that run longer
  // stay covered: each further epoch, twice as long as the one before, gets half the budget left.
  double horizon_seconds = 24 * 3600.0;
};

// Significance for the test with 0-based index test_index, when the horizon holds about
// tests_per_horizon tests (horizon / sampling interval). Epoch j covers tests
// [M(2^j - 1), M(2^(j+1) - 1)) and gets alpha / 2^(j+1), spread evenly:
// alpha_i = alpha / (M * 2^(2j+1)). Sum over all i is alpha. PerTest returns alpha.
double test_alpha(const AlarmPolicy& policy, std::uint64_t test_index, std::uint64_t tests_per_horizon);

}  // namespace parastack::stats
