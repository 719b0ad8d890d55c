// Robust suspicion threshold from a small sample (ParaStack §3.2).
//
// The suspicion probability p is estimated from the empirical CDF F_n of the samples. With a
// tolerance error e at 95% confidence, a proportion p̂ needs at least
//     n(p̂) = max{5/p̂, 5/(1-p̂), 3.8416 p̂(1-p̂)/e²}
// samples (rule of thumb for the normal approximation, plus the confidence-interval width). For
// each e of the ladder {0.3, 0.2, 0.1, 0.05} the p̂ that minimises n gives the optimal point
// (0.47, 11), (0.27, 19), (0.12, 42), (0.06, 86). Samples are discrete, so the threshold uses the
// observed values t1, t2 on either side of the optimum, and q = p̂ + e over-estimates the true p.
#pragma once

#include <array>
#include <optional>
#include <vector>

namespace parastack::stats {

class EmpiricalDistribution;

inline constexpr std::array<double, 4> kToleranceLadder{0.3, 0.2, 0.1, 0.05};

// n(p̂) above; +infinity outside (0, 1).
double min_sample_size(double p_hat, double tolerance);

struct LadderPoint {
  double tolerance;  // e
  double p;          // p̂_m, the proportion that needs the fewest samples at this tolerance
  double n;          // n̂_m = n(p̂_m), not rounded
};
// Minimises n(p̂) over (0, 0.5] (where 5/p̂ dominates 5/(1-p̂)) numerically.
LadderPoint optimal_point(double tolerance);

// The threshold chosen for the current samples: a sample s is a suspicion when s <= value.
struct SuspicionThreshold {
  double tolerance = 0;   // e: the ladder step in use
  double value = 0;       // t: a sample value
  double p_hat = 0;       // F_n(t), the estimated suspicion probability p̂_m'
  double n_required = 0;  // n̂_m' = n(p̂_m') <= number of samples
  double q = 0;           // p̂_m' + e, used by the geometric test
};

// Tightest tolerance whose sub-optimal point (t1 or t2 around p̂_m, the one needing fewer samples)
// is justified by the sample count and gives q < 1; nullopt while no step is (the model is not
// built yet). If the preferred candidate has q >= 1 the other one is tried (see docs/statistics.md).
std::optional<SuspicionThreshold> choose_threshold(const EmpiricalDistribution& samples);

// Every sample value v as a threshold, with p̂ = F_n(v) and the tightest ladder tolerance e that
// the sample count justifies for that p̂ (n >= n(p̂, e)), q = p̂ + e < 1. Ascending by value.
// Testing all of them (alpha split between them) confirms hangs whose S stays low but not below
// the paper's single threshold, e.g. busy-waiting codes (docs/statistics.md).
std::vector<SuspicionThreshold> every_value_thresholds(const EmpiricalDistribution& samples);

// Every sample value v as a threshold, with q the exact binomial upper bound of P(S <= v) at
// confidence 1 - beta (binomial.h) instead of p̂ + e; tolerance is then q - p̂. Ascending by value,
// those with q < 1.
std::vector<SuspicionThreshold> exact_thresholds(const EmpiricalDistribution& samples, double beta);

// Geometric significance test: the number of consecutive suspicions k = ceil(log_q alpha) at which
// P(Y >= k | healthy) = q^k <= alpha. Requires 0 < q < 1 and 0 < alpha < 1.
int required_streak(double q, double alpha);

}  // namespace parastack::stats
