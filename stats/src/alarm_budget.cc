#include "parastack/stats/alarm_budget.h"

#include <algorithm>
#include <cmath>

namespace parastack::stats {

std::string_view to_string(AlarmBudget budget) { return budget == AlarmBudget::PerTest ? "per-test" : "per-job"; }

double test_alpha(const AlarmPolicy& policy, std::uint64_t test_index, std::uint64_t tests_per_horizon) {
  if (policy.budget == AlarmBudget::PerTest) return policy.alpha;
  const double m = static_cast<double>(std::max<std::uint64_t>(1, tests_per_horizon));
  // Smallest j with i < M(2^(j+1) - 1), i.e. 2^(j+1) > i/M + 1.
  const double ratio = static_cast<double>(test_index) / m + 1;
  int epoch = 0;
  while (std::ldexp(1.0, epoch + 1) <= ratio) ++epoch;
  return policy.alpha / (m * std::ldexp(1.0, 2 * epoch + 1));
}

}  // namespace parastack::stats
