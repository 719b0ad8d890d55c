// How the significance level alpha is spent over the tests of one job.
//
// The paper applies alpha to each geometric test. Every observation made with a built model is such
// a test, and a 24-hour job sampled every 400 ms makes about 200,000 of them, so the chance that a
// healthy job sees a false alarm somewhere is far above alpha. PerJob spends alpha over the whole
// job instead: test i gets alpha_i with sum_i alpha_i <= alpha, so by the union bound the
// probability of any false alarm in a job is at most alpha, however long it runs.
// See docs/statistics.md for the derivation and what it costs in detection delay.
#pragma once

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

// Significance for a test that stands for `seconds` of watching (the time since its set's previous
// test), when `watched_seconds` (this test's included) are what all tests of the job so far stand
// for, summed over its sets. The budget is spent per second watched, not per test, so a job whose
// sampling interval grew (a code with long cycles) is not charged for tests it never made: epoch j
// covers watched time [H(2^j - 1), H(2^(j+1) - 1)) (H = horizon_seconds) and gets alpha / 2^(j+1),
// spread evenly: alpha_i = alpha * seconds / (2H * 4^j), j taken at the end of the test's stretch.
// The sum over all tests is at most alpha, whatever the intervals (docs/statistics.md). Watched
// time counts each set's: two sets spend the first half of alpha in the job's first H/2, as two
// tests per sample at the initial interval did before. PerTest returns alpha.
double watched_time_alpha(const AlarmPolicy& policy, double seconds, double watched_seconds);

}  // namespace parastack::stats
