// Exact binomial confidence bounds, for the model's suspicion probabilities.
//
// The paper bounds a suspicion probability p by p̂ + e with a tolerance ladder whose tightest step is
// e = 0.05, so q >= 0.05 even when not one of thousands of healthy samples was a suspicion, and the
// geometric test then needs many suspicions in a row. The one-sided Clopper-Pearson bound is exact
// (no normal approximation) and shrinks with the sample count: with no suspicion in n samples it is
// 1 - beta^(1/n) (about 3/n at beta = 0.05, the "rule of three").
#pragma once

#include <cstdint>

namespace parastack::stats {

// P(X <= successes) for X ~ Binomial(trials, p).
double binomial_cdf(std::uint64_t successes, std::uint64_t trials, double p);

// The smallest p_up with P(X <= successes | trials, p) <= beta for every p >= p_up: a bound with
// P(p <= p_up) >= 1 - beta whatever the true p (one-sided Clopper-Pearson). 1 when successes >= trials
// or trials == 0. Requires 0 < beta < 1.
double binomial_upper_bound(std::uint64_t successes, std::uint64_t trials, double beta);

// The share of a total error budget given to the j-th (0-based) of an open-ended series of
// estimates: 6 / (pi^2 (j+1)^2), which sums to 1 over all j, so a bound refreshed again and again
// stays valid for all refreshes at once (union bound).
double refresh_share(int j);

}  // namespace parastack::stats
