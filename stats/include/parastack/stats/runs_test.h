// Wald–Wolfowitz runs test for randomness of a two-valued sequence (ParaStack §3.1).
//
// Samples are coded around their mean: a sample >= the mean is positive (+), below it negative (-).
// Under the hypothesis that the order is random, the number of runs R given N1 positives and N0
// negatives has the Swed–Eisenhart distribution. For N1, N0 <= 20 we use that exact distribution
// (computed here, never a hand-typed table); above, its normal approximation.
#pragma once

#include <span>

namespace parastack::stats {

// Exact probability P(R = runs | N1 = n_pos, N0 = n_neg) under randomness.
double runs_probability(int runs, int n_pos, int n_neg);

// The two-sided non-rejection region (lower, upper): the sequence is random iff lower < R < upper.
// lower is the largest r with P(R <= r) <= significance/2 (1 when no r qualifies), upper the
// smallest r with P(R >= r) <= significance/2 (max R + 1 when none does). Exact distribution.
struct RunsRegion {
  int lower;
  int upper;
  bool contains(int runs) const { return lower < runs && runs < upper; }
};
RunsRegion exact_runs_region(int n_pos, int n_neg, double significance = 0.05);

struct RunsTestResult {
  double boundary = 0;  // the mean the samples were coded around
  int n_pos = 0;        // N1: samples >= boundary
  int n_neg = 0;        // N0: samples < boundary
  int runs = 0;         // R
  bool exact = false;   // exact distribution (both counts <= 20) or normal approximation
  RunsRegion region{};  // exact non-rejection region (meaningful when exact)
  double z = 0;         // standardised R (meaningful when !exact)
  bool random = false;
};

// Counts up to this many of each kind use the exact distribution.
inline constexpr int kExactRunsLimit = 20;

// N1 <= 1 or N0 <= 1 (including a constant sequence) is reported as not random: there is no
// usable non-rejection region, and ParaStack must not believe a sampling it cannot check.
RunsTestResult runs_test(std::span<const double> samples, double significance = 0.05);

}  // namespace parastack::stats
