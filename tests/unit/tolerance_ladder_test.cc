#include "parastack/stats/tolerance_ladder.h"

#include <gtest/gtest.h>

#include <cmath>

#include "parastack/stats/binomial.h"
#include "parastack/stats/empirical_distribution.h"

namespace parastack::stats {
namespace {

// §3.2: the optimal points of the ladder are (0.47, 11), (0.27, 19), (0.12, 42), (0.06, 86).
TEST(ToleranceLadder, OptimalPointsMatchThePaper) {
  const struct {
    double e, p;
    int n;
  } expected[] = {{0.3, 0.47, 11}, {0.2, 0.27, 19}, {0.1, 0.12, 42}, {0.05, 0.06, 86}};
  for (const auto& row : expected) {
    const auto point = optimal_point(row.e);
    EXPECT_NEAR(point.p, row.p, 0.005) << "e=" << row.e;
    EXPECT_EQ(static_cast<int>(std::ceil(point.n)), row.n) << "e=" << row.e;
  }
}

TEST(ToleranceLadder, OptimalPointMinimisesTheSampleSize) {
  for (double e : kToleranceLadder) {
    const auto point = optimal_point(e);
    for (double p = 0.001; p <= 0.999; p += 0.001) {
      EXPECT_GE(min_sample_size(p, e), point.n - 1e-6) << "e=" << e << " p=" << p;
    }
  }
}

TEST(ToleranceLadder, MinSampleSizeFormula) {
  EXPECT_DOUBLE_EQ(min_sample_size(0.5, 0.3), std::max(10.0, 3.8416 * 0.25 / 0.09));
  EXPECT_DOUBLE_EQ(min_sample_size(0.9, 0.3), 5 / 0.1);  // 5/(1-p) dominates above one half
  EXPECT_TRUE(std::isinf(min_sample_size(0.0, 0.1)));
  EXPECT_TRUE(std::isinf(min_sample_size(1.0, 0.1)));
}

TEST(GeometricTest, RequiredStreakIsCeilLogQAlpha) {
  EXPECT_EQ(required_streak(0.5, 0.001), 10);   // log_0.5 0.001 = 9.97
  EXPECT_EQ(required_streak(0.77, 0.001), 27);  // the paper's bound: 26.5 -> 27
  EXPECT_EQ(required_streak(0.1, 0.001), 3);    // exact power stays 3
  EXPECT_EQ(required_streak(0.2, 0.001), 5);
  EXPECT_THROW(required_streak(1.0, 0.001), std::invalid_argument);
  for (double q = 0.05; q < 0.99; q += 0.01) {
    const int k = required_streak(q, 0.001);
    EXPECT_LE(std::pow(q, k), 0.001 * (1 + 1e-9));
    EXPECT_GT(std::pow(q, k - 1), 0.001);
  }
}

EmpiricalDistribution samples_with(std::initializer_list<std::pair<double, int>> counts) {
  EmpiricalDistribution d;
  for (const auto& [value, count] : counts) {
    for (int i = 0; i < count; ++i) d.add(value);
  }
  return d;
}

TEST(SuspicionThreshold, NothingBeforeTheFirstLadderStep) {
  // 10 samples cannot justify any step: the loosest needs 11.
  EXPECT_FALSE(choose_threshold(samples_with({{0.0, 5}, {0.5, 5}})).has_value());
}

TEST(SuspicionThreshold, LooseStepWithFewSamples) {
  // 12 samples, half at 0.1: t2 = 0.1 with F = 0.5, n(0.5, 0.3) = 10.67 <= 12.
  const auto t = choose_threshold(samples_with({{0.1, 6}, {0.6, 6}}));
  ASSERT_TRUE(t.has_value());
  EXPECT_DOUBLE_EQ(t->tolerance, 0.3);
  EXPECT_DOUBLE_EQ(t->value, 0.1);
  EXPECT_DOUBLE_EQ(t->p_hat, 0.5);
  EXPECT_DOUBLE_EQ(t->q, 0.8);
}

TEST(SuspicionThreshold, TightestJustifiedStepWins) {
  // 400 samples: F(0) = 0.02, F(0.1) = 0.15. At e = 0.05, p_m = 0.0588: t1 = 0 needs 250
  // samples (5/0.02), t2 = 0.1 needs max(33.3, 3.8416*0.15*0.85/0.0025) = 195.9, so t2 is chosen.
  const auto t = choose_threshold(samples_with({{0.0, 8}, {0.1, 52}, {0.5, 340}}));
  ASSERT_TRUE(t.has_value());
  EXPECT_DOUBLE_EQ(t->tolerance, 0.05);
  EXPECT_DOUBLE_EQ(t->value, 0.1);
  EXPECT_DOUBLE_EQ(t->p_hat, 0.15);
  EXPECT_NEAR(t->n_required, 3.8416 * 0.15 * 0.85 / 0.0025, 1e-9);
  EXPECT_DOUBLE_EQ(t->q, 0.2);
}

TEST(SuspicionThreshold, DegenerateSamplesGiveNoThreshold) {
  EXPECT_FALSE(choose_threshold(samples_with({{0.0, 500}})).has_value());  // F(0) = 1
}

TEST(SuspicionThreshold, CandidateWithQAtLeastOneIsSkipped) {
  // 90% of samples at 0: every step's only candidate has q = 0.9 + e >= 1 except e = 0.05
  // (q = 0.95), which 200 samples justify (5/(1-0.9) = 50).
  const auto t = choose_threshold(samples_with({{0.0, 180}, {0.3, 20}}));
  ASSERT_TRUE(t.has_value());
  EXPECT_DOUBLE_EQ(t->tolerance, 0.05);
  EXPECT_NEAR(t->q, 0.95, 1e-12);
}

TEST(SuspicionThreshold, EveryValueGetsTheTightestJustifiedTolerance) {
  // 400 samples: F(0) = 0.02 needs 250 samples at any e (5/p); F(0.1) = 0.15 is justified at
  // e = 0.05 (196 needed); F(0.5) = 1 can never be a threshold.
  const auto thresholds = every_value_thresholds(samples_with({{0.0, 8}, {0.1, 52}, {0.5, 340}}));
  ASSERT_EQ(thresholds.size(), 2u);
  EXPECT_DOUBLE_EQ(thresholds[0].value, 0.0);
  EXPECT_DOUBLE_EQ(thresholds[0].tolerance, 0.05);
  EXPECT_DOUBLE_EQ(thresholds[0].q, 0.07);
  EXPECT_DOUBLE_EQ(thresholds[1].value, 0.1);
  EXPECT_DOUBLE_EQ(thresholds[1].q, 0.2);
  // With 30 samples the same shape justifies only looser tolerances, or nothing.
  const auto few = every_value_thresholds(samples_with({{0.0, 1}, {0.1, 4}, {0.5, 25}}));
  ASSERT_EQ(few.size(), 1u);  // F(0) = 1/30 needs 150 samples
  EXPECT_DOUBLE_EQ(few[0].value, 0.1);
  EXPECT_DOUBLE_EQ(few[0].tolerance, 0.2);  // n(1/6, 0.1) = 53 > 30, n(1/6, 0.2) = 30 <= 30
}

TEST(EmpiricalDistribution, CdfWindowAndThinning) {
  EmpiricalDistribution d(4);
  for (double v : {0.1, 0.2, 0.3, 0.4, 0.5}) d.add(v);  // 0.1 is forgotten
  EXPECT_EQ(d.size(), 4u);
  EXPECT_DOUBLE_EQ(d.cdf(0.1), 0.0);
  EXPECT_DOUBLE_EQ(d.cdf(0.3), 0.5);
  d.thin_by_half();  // keeps the 2nd and 4th: 0.3, 0.5
  EXPECT_EQ(d.size(), 2u);
  EXPECT_DOUBLE_EQ(d.cdf(0.2), 0.0);
  EXPECT_DOUBLE_EQ(d.cdf(0.3), 0.5);
  ASSERT_EQ(d.cumulative().size(), 2u);
  EXPECT_EQ(d.cumulative()[1].second, 2u);
}

// The exact bound instead of p + e: every value's q is the Clopper-Pearson bound of its count.
TEST(SuspicionThreshold, ExactThresholdsBoundEachValuesProbability) {
  EmpiricalDistribution samples;
  for (int i = 0; i < 200; ++i) samples.add(i % 10 == 0 ? 0.0 : i % 10 < 4 ? 0.1 : 0.5);
  const auto thresholds = exact_thresholds(samples, 1e-4);
  ASSERT_EQ(thresholds.size(), 2u);  // 0 and 0.1; 0.5 has F = 1, q = 1
  EXPECT_DOUBLE_EQ(thresholds[0].value, 0.0);
  EXPECT_DOUBLE_EQ(thresholds[0].p_hat, 0.1);
  EXPECT_DOUBLE_EQ(thresholds[0].q, binomial_upper_bound(20, 200, 1e-4));
  EXPECT_DOUBLE_EQ(thresholds[1].q, binomial_upper_bound(80, 200, 1e-4));
  // Much tighter than the ladder's p + e at this count when nothing was suspicious.
  EmpiricalDistribution quiet;
  for (int i = 0; i < 2000; ++i) quiet.add(i == 0 ? 0.0 : 0.5);
  EXPECT_LT(exact_thresholds(quiet, 1e-4).front().q, 0.01);
  // The ladder cannot even use that value: p = 1/2000 needs 5/p = 10,000 samples.
  const auto ladder = every_value_thresholds(quiet);
  EXPECT_TRUE(ladder.empty() || ladder.front().q >= 0.05);
}

}  // namespace
}  // namespace parastack::stats
