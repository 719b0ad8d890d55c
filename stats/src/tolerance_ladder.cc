#include "parastack/stats/tolerance_ladder.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "parastack/stats/binomial.h"
#include "parastack/stats/empirical_distribution.h"

namespace parastack::stats {
namespace {

constexpr double kZ95Squared = 3.8416;  // 1.96², the paper's constant

struct Candidate {
  double value;
  double p_hat;
  double n_required;
};

}  // namespace

double min_sample_size(double p_hat, double tolerance) {
  if (!(p_hat > 0 && p_hat < 1)) return std::numeric_limits<double>::infinity();
  return std::max({5 / p_hat, 5 / (1 - p_hat), kZ95Squared * p_hat * (1 - p_hat) / (tolerance * tolerance)});
}

LadderPoint optimal_point(double tolerance) {
  // On (0, 0.5] the first term falls and the third rises, so the minimum is where they cross
  // (or at 0.5 when the third never catches up). Bisection on their difference.
  const double c = kZ95Squared / (tolerance * tolerance);
  auto gap = [c](double p) { return 5 / p - c * p * (1 - p); };
  if (gap(0.5) >= 0) return {tolerance, 0.5, min_sample_size(0.5, tolerance)};
  double lo = 1e-9, hi = 0.5;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (gap(mid) > 0 ? lo : hi) = mid;
  }
  const double p = (lo + hi) / 2;
  return {tolerance, p, min_sample_size(p, tolerance)};
}

namespace {

// The threshold of one ladder step, or nullopt when the samples do not justify it.
std::optional<SuspicionThreshold> step_threshold(const LadderPoint& step, const EmpiricalDistribution& samples) {
  const double n = static_cast<double>(samples.size());
  // t1: the largest value with F_n < p̂_m; t2: the smallest value with F_n >= p̂_m.
  std::optional<Candidate> below, above;
  for (const auto& [value, count_at_or_below] : samples.cumulative()) {
    const double f = static_cast<double>(count_at_or_below) / n;
    Candidate candidate{value, f, min_sample_size(f, step.tolerance)};
    if (f < step.p) {
      below = candidate;
    } else {
      above = candidate;
      break;
    }
  }
  std::array<std::optional<Candidate>, 2> order{below, above};
  if (below && above && above->n_required < below->n_required) std::swap(order[0], order[1]);
  for (const auto& candidate : order) {
    if (!candidate || candidate->n_required > n) continue;
    const double q = candidate->p_hat + step.tolerance;
    if (q >= 1) continue;
    return SuspicionThreshold{step.tolerance, candidate->value, candidate->p_hat, candidate->n_required, q};
  }
  return std::nullopt;
}

// Tightest tolerance first: the smaller e, the closer q is to the true p and the faster a hang
// is confirmed. The ladder is fixed, so its optimal points are computed once.
const std::array<LadderPoint, kToleranceLadder.size()>& tightest_first() {
  static const auto points = [] {
    std::array<LadderPoint, kToleranceLadder.size()> result{};
    for (std::size_t i = 0; i < result.size(); ++i) {
      result[i] = optimal_point(kToleranceLadder[kToleranceLadder.size() - 1 - i]);
    }
    return result;
  }();
  return points;
}

}  // namespace

std::optional<SuspicionThreshold> choose_threshold(const EmpiricalDistribution& samples) {
  if (samples.empty()) return std::nullopt;
  for (const auto& step : tightest_first()) {
    if (auto threshold = step_threshold(step, samples)) return threshold;
  }
  return std::nullopt;
}

std::vector<SuspicionThreshold> every_value_thresholds(const EmpiricalDistribution& samples) {
  std::vector<SuspicionThreshold> thresholds;
  const double n = static_cast<double>(samples.size());
  for (const auto& [value, count_at_or_below] : samples.cumulative()) {
    const double p_hat = static_cast<double>(count_at_or_below) / n;
    for (auto e = kToleranceLadder.rbegin(); e != kToleranceLadder.rend(); ++e) {
      const double needed = min_sample_size(p_hat, *e);
      if (needed > n) continue;
      if (p_hat + *e < 1) thresholds.push_back({*e, value, p_hat, needed, p_hat + *e});
      break;
    }
  }
  return thresholds;
}

std::vector<SuspicionThreshold> exact_thresholds(const EmpiricalDistribution& samples, double beta) {
  std::vector<SuspicionThreshold> thresholds;
  const auto n = static_cast<std::uint64_t>(samples.size());
  for (const auto& [value, count_at_or_below] : samples.cumulative()) {
    const double q = binomial_upper_bound(count_at_or_below, n, beta);
    if (q >= 1) continue;
    const double p_hat = static_cast<double>(count_at_or_below) / static_cast<double>(n);
    thresholds.push_back({q - p_hat, value, p_hat, 0, q});
  }
  return thresholds;
}

int required_streak(double q, double alpha) {
  if (!(q > 0 && q < 1) || !(alpha > 0 && alpha < 1)) {
    throw std::invalid_argument("required_streak needs 0 < q < 1 and 0 < alpha < 1");
  }
  // The small slack keeps exact powers (q = 0.1, alpha = 0.001 -> 3) from rounding up to 4.
  // q within rounding of 1 makes k astronomically large (or log(q) zero): cap it, never wrap.
  const double k = std::log(alpha) / std::log(q);
  if (!(k < 1e9)) return 1'000'000'000;
  return std::max(1, static_cast<int>(std::ceil(k - 1e-9)));
}

}  // namespace parastack::stats
