#include "parastack/stats/runs_test.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

namespace parastack::stats {
namespace {

// §3.1's worked example: 16 samples of a 10-process job.
TEST(RunsTest, PaperExampleIsNotRandom) {
  const std::vector<double> samples{0.2, 0.1, 0.1, 0.2, 0.1, 0.1, 0.0, 0.0, 0.8, 0.9, 1.0, 0.8, 0.9, 0.1, 0.9, 0.9};
  const auto result = runs_test(samples);
  EXPECT_NEAR(result.boundary, 0.44375, 1e-12);
  EXPECT_EQ(result.n_pos, 7);
  EXPECT_EQ(result.n_neg, 9);
  EXPECT_EQ(result.runs, 4);
  EXPECT_TRUE(result.exact);
  EXPECT_EQ(result.region.lower, 4);
  EXPECT_EQ(result.region.upper, 14);
  EXPECT_FALSE(result.random);
}

TEST(RunsTest, ExactDistributionSumsToOne) {
  for (int n1 = 1; n1 <= 20; ++n1) {
    for (int n0 = 1; n0 <= 20; ++n0) {
      double total = 0;
      for (int r = 0; r <= n1 + n0 + 1; ++r) total += runs_probability(r, n1, n0);
      EXPECT_NEAR(total, 1.0, 1e-9) << n1 << "," << n0;
    }
  }
}

TEST(RunsTest, ExactDistributionMatchesBruteForceEnumeration) {
  // Every arrangement of 5 positives and 6 negatives, counted by its number of runs.
  const int n1 = 5, n0 = 6, n = n1 + n0;
  std::vector<int> by_runs(n + 2, 0);
  int arrangements = 0;
  for (unsigned mask = 0; mask < (1u << n); ++mask) {
    if (__builtin_popcount(mask) != n1) continue;
    ++arrangements;
    int runs = 1;
    for (int i = 1; i < n; ++i) runs += ((mask >> i) & 1u) != ((mask >> (i - 1)) & 1u);
    ++by_runs[runs];
  }
  for (int r = 0; r <= n + 1; ++r) {
    EXPECT_NEAR(runs_probability(r, n1, n0), static_cast<double>(by_runs[r]) / arrangements, 1e-12) << "R=" << r;
  }
}

// Swed & Eisenhart (1943) two-sided 5% critical values, as printed in textbooks.
TEST(RunsTest, RegionsMatchPublishedTables) {
  EXPECT_EQ(exact_runs_region(10, 10, 0.05).lower, 6);
  EXPECT_EQ(exact_runs_region(10, 10, 0.05).upper, 16);
  EXPECT_EQ(exact_runs_region(20, 20, 0.05).lower, 14);
  EXPECT_EQ(exact_runs_region(20, 20, 0.05).upper, 28);
  EXPECT_EQ(exact_runs_region(5, 5, 0.05).lower, 2);
  EXPECT_EQ(exact_runs_region(5, 5, 0.05).upper, 10);
}

TEST(RunsTest, RegionTailsRespectTheLevel) {
  for (int n1 = 2; n1 <= 20; ++n1) {
    for (int n0 = 2; n0 <= 20; ++n0) {
      const auto region = exact_runs_region(n1, n0, 0.05);
      double low_tail = 0, high_tail = 0;
      for (int r = 2; r <= region.lower; ++r) low_tail += runs_probability(r, n1, n0);
      for (int r = region.upper; r <= n1 + n0; ++r) high_tail += runs_probability(r, n1, n0);
      EXPECT_LE(low_tail, 0.025 + 1e-12);
      EXPECT_LE(high_tail, 0.025 + 1e-12);
      // One more value on either side would exceed the level: the region is as tight as allowed.
      EXPECT_GT(low_tail + runs_probability(region.lower + 1, n1, n0), 0.025);
      EXPECT_GT(high_tail + runs_probability(region.upper - 1, n1, n0), 0.025);
    }
  }
}

TEST(RunsTest, FewOfOneKindIsNotRandom) {
  EXPECT_FALSE(runs_test(std::vector<double>(16, 0.3)).random);  // constant
  std::vector<double> one_high(16, 0.0);
  one_high[7] = 1.0;  // N1 = 1
  const auto result = runs_test(one_high);
  EXPECT_EQ(result.n_pos, 1);
  EXPECT_FALSE(result.random);
}

TEST(RunsTest, AlternatingSequenceHasTooManyRuns) {
  std::vector<double> samples;
  for (int i = 0; i < 16; ++i) samples.push_back(i % 2 ? 0.9 : 0.1);
  const auto result = runs_test(samples);
  EXPECT_EQ(result.runs, 16);
  EXPECT_FALSE(result.random);
}

TEST(RunsTest, LargeSamplesUseNormalApproximation) {
  std::vector<double> samples;
  unsigned state = 12345;
  for (int i = 0; i < 200; ++i) {
    state = state * 1103515245u + 12345u;
    samples.push_back(((state >> 16) & 1u) ? 0.7 : 0.2);
  }
  const auto random = runs_test(samples);
  EXPECT_FALSE(random.exact);
  EXPECT_TRUE(random.random) << "z=" << random.z;
  std::sort(samples.begin(), samples.end());  // two runs: clearly not random
  const auto sorted = runs_test(samples);
  EXPECT_FALSE(sorted.exact);
  EXPECT_EQ(sorted.runs, 2);
  EXPECT_FALSE(sorted.random);
}

}  // namespace
}  // namespace parastack::stats
