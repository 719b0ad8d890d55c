#include "parastack/stats/alarm_budget.h"

#include <algorithm>
#include <cmath>

namespace parastack::stats {

std::string_view to_string(AlarmBudget budget) { return budget == AlarmBudget::PerTest ? "per-test" : "per-job"; }

double watched_time_alpha(const AlarmPolicy& policy, double seconds, double watched_seconds) {
  if (policy.budget == AlarmBudget::PerTest) return policy.alpha;
  const double horizon = std::max(policy.horizon_seconds, 1e-9);
  // Smallest j with W < H(2^(j+1) - 1), i.e. 2^(j+1) > W/H + 1. Taken at the stretch's end, every
  // second of it is charged at most what the epoch it lies in allows, so the sum stays <= alpha.
  const double ratio = std::max(watched_seconds, 0.0) / horizon + 1;
  int epoch = 0;
  while (std::ldexp(1.0, epoch + 1) <= ratio) ++epoch;
  return policy.alpha * std::max(seconds, 0.0) / (horizon * std::ldexp(1.0, 2 * epoch + 1));
}

}  // namespace parastack::stats
