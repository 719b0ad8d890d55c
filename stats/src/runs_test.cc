#include "parastack/stats/runs_test.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace parastack::stats {
namespace {

// Binomial coefficient as a double; exact for the n <= 40 used by the exact test.
double choose(int n, int k) {
  if (k < 0 || n < 0 || k > n) return 0;
  k = std::min(k, n - k);
  double result = 1;
  for (int i = 1; i <= k; ++i) result = result * (n - k + i) / i;
  return std::round(result);
}

int max_runs(int n_pos, int n_neg) { return 2 * std::min(n_pos, n_neg) + (n_pos != n_neg ? 1 : 0); }

// Two-sided critical value z of the standard normal, P(|Z| > z) = significance: the 5% level
// ParaStack uses is exact, other levels are found by bisection on erfc.
double normal_two_sided_critical(double significance) {
  if (std::abs(significance - 0.05) < 1e-12) return 1.959963984540054;
  double lo = 0, hi = 10;
  for (int i = 0; i < 200; ++i) {
    double mid = (lo + hi) / 2;
    (std::erfc(mid / std::sqrt(2.0)) > significance ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

}  // namespace

double runs_probability(int runs, int n_pos, int n_neg) {
  if (n_pos <= 0 || n_neg <= 0) return runs == 1 && n_pos + n_neg > 0 ? 1.0 : 0.0;
  if (runs < 2 || runs > max_runs(n_pos, n_neg)) return 0;
  double total = choose(n_pos + n_neg, n_pos);
  if (runs % 2 == 0) {
    int k = runs / 2;
    return 2 * choose(n_pos - 1, k - 1) * choose(n_neg - 1, k - 1) / total;
  }
  int k = (runs - 1) / 2;
  return (choose(n_pos - 1, k - 1) * choose(n_neg - 1, k) + choose(n_pos - 1, k) * choose(n_neg - 1, k - 1)) / total;
}

RunsRegion exact_runs_region(int n_pos, int n_neg, double significance) {
  if (n_pos < 1 || n_neg < 1) throw std::invalid_argument("runs region needs both kinds");
  const int top = max_runs(n_pos, n_neg);
  const double tail = significance / 2;
  // A tiny slack so that a tail equal to the level (as in the published tables) counts as inside.
  constexpr double kSlack = 1e-12;
  RunsRegion region{1, top + 1};
  double cumulative = 0;
  for (int r = 2; r <= top; ++r) {
    cumulative += runs_probability(r, n_pos, n_neg);
    if (cumulative > tail + kSlack) break;
    region.lower = r;
  }
  cumulative = 0;
  for (int r = top; r >= 2; --r) {
    cumulative += runs_probability(r, n_pos, n_neg);
    if (cumulative > tail + kSlack) break;
    region.upper = r;
  }
  return region;
}

RunsTestResult runs_test(std::span<const double> samples, double significance) {
  RunsTestResult result;
  if (samples.empty()) return result;
  const double sum = std::accumulate(samples.begin(), samples.end(), 0.0);
  const double n = static_cast<double>(samples.size());
  result.boundary = sum / n;
  // Compare n*x >= sum rather than x >= sum/n, with a relative tolerance, so that a sample equal
  // to the mean (e.g. a constant sequence) is coded positive despite rounding.
  const double tolerance = 1e-9 * std::max(1.0, std::abs(sum));
  bool previous = false;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const bool positive = n * samples[i] >= sum - tolerance;
    (positive ? result.n_pos : result.n_neg)++;
    if (i == 0 || positive != previous) result.runs++;
    previous = positive;
  }
  if (result.n_pos <= 1 || result.n_neg <= 1) return result;  // not random, by decision
  if (result.n_pos <= kExactRunsLimit && result.n_neg <= kExactRunsLimit) {
    result.exact = true;
    result.region = exact_runs_region(result.n_pos, result.n_neg, significance);
    result.random = result.region.contains(result.runs);
    return result;
  }
  const double n1 = result.n_pos, n0 = result.n_neg, total = n1 + n0;
  const double mean = 2 * n1 * n0 / total + 1;
  const double variance = 2 * n1 * n0 * (2 * n1 * n0 - total) / (total * total * (total - 1));
  result.z = (result.runs - mean) / std::sqrt(variance);
  result.random = std::abs(result.z) < normal_two_sided_critical(significance);
  return result;
}

}  // namespace parastack::stats
