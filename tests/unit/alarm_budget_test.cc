#include "parastack/stats/alarm_budget.h"

#include <gtest/gtest.h>

#include <random>

namespace parastack::stats {
namespace {

TEST(AlarmBudget, PerTestIsAlphaEveryTime) {
  AlarmPolicy policy{AlarmBudget::PerTest, 0.001, 3600};
  EXPECT_DOUBLE_EQ(watched_time_alpha(policy, 0.1, 0.1), 0.001);
  EXPECT_DOUBLE_EQ(watched_time_alpha(policy, 25.6, 1e9), 0.001);
}

TEST(AlarmBudget, PerJobSpendsHalfOverTheHorizonThenHalvesPerEpoch) {
  AlarmPolicy policy{AlarmBudget::PerJob, 0.001, 3600};
  const double h = 3600;
  EXPECT_DOUBLE_EQ(watched_time_alpha(policy, 0.1, 0.1), 0.001 * 0.1 / (2 * h));
  EXPECT_DOUBLE_EQ(watched_time_alpha(policy, 1.6, h - 1), 0.001 * 1.6 / (2 * h));  // 16 times the 0.1 s test
  EXPECT_DOUBLE_EQ(watched_time_alpha(policy, 0.1, h), 0.001 * 0.1 / (8 * h));      // epoch 1: [H, 3H)
  EXPECT_DOUBLE_EQ(watched_time_alpha(policy, 0.1, 3 * h - 1), 0.001 * 0.1 / (8 * h));
  EXPECT_DOUBLE_EQ(watched_time_alpha(policy, 0.1, 3 * h), 0.001 * 0.1 / (32 * h));  // epoch 2: [3H, 7H)
  // At a constant interval it is the old per-test budget with M = H / I tests per horizon.
  EXPECT_DOUBLE_EQ(watched_time_alpha(policy, 0.1, 5), 0.001 / (2 * (h / 0.1)));
}

// Whatever the stretches (random intervals, which double now and then, gaps), the tests of a job
// spend at most alpha in all, and close to all of it over a long enough job.
TEST(AlarmBudget, PerJobTotalNeverExceedsAlphaWhateverTheIntervals) {
  AlarmPolicy policy{AlarmBudget::PerJob, 0.001, 3600};
  std::mt19937_64 rng(5);
  for (int job = 0; job < 20; ++job) {
    double watched = 0, total = 0, interval = 0.1;
    while (watched < 100 * policy.horizon_seconds) {
      const double stretch = interval * std::uniform_real_distribution<double>(0.5, 1.5)(rng);
      watched += stretch;
      total += watched_time_alpha(policy, stretch, watched);
      if (std::uniform_int_distribution<int>(0, 20'000)(rng) == 0 && interval < 25.6) interval *= 2;
    }
    EXPECT_LE(total, 0.001) << "job " << job;
    // 100 horizons reach into epoch 6: 1/2 + ... + 1/64 of alpha and part of the next.
    EXPECT_GT(total, 0.001 * 63.0 / 64) << "job " << job;
  }
}

}  // namespace
}  // namespace parastack::stats
