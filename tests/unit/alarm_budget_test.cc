#include "parastack/stats/alarm_budget.h"

#include <gtest/gtest.h>

namespace parastack::stats {
namespace {

TEST(AlarmBudget, PerTestIsAlphaEveryTime) {
  AlarmPolicy policy{AlarmBudget::PerTest, 0.001, 3600};
  EXPECT_DOUBLE_EQ(test_alpha(policy, 0, 9000), 0.001);
  EXPECT_DOUBLE_EQ(test_alpha(policy, 1'000'000, 9000), 0.001);
}

TEST(AlarmBudget, PerJobSpendsHalfOverTheHorizonThenHalvesPerEpoch) {
  AlarmPolicy policy{AlarmBudget::PerJob, 0.001, 3600};
  const std::uint64_t m = 1000;
  EXPECT_DOUBLE_EQ(test_alpha(policy, 0, m), 0.001 / (2 * m));
  EXPECT_DOUBLE_EQ(test_alpha(policy, m - 1, m), 0.001 / (2 * m));
  EXPECT_DOUBLE_EQ(test_alpha(policy, m, m), 0.001 / (8 * m));  // epoch 1: [M, 3M)
  EXPECT_DOUBLE_EQ(test_alpha(policy, 3 * m - 1, m), 0.001 / (8 * m));
  EXPECT_DOUBLE_EQ(test_alpha(policy, 3 * m, m), 0.001 / (32 * m));  // epoch 2: [3M, 7M)
}

TEST(AlarmBudget, PerJobTotalNeverExceedsAlpha) {
  AlarmPolicy policy{AlarmBudget::PerJob, 0.001, 3600};
  const std::uint64_t m = 100;
  double total = 0;
  for (std::uint64_t i = 0; i < 100 * m; ++i) total += test_alpha(policy, i, m);
  EXPECT_LE(total, 0.001);
  // 100 horizons reach into epoch 6: 1/2 + ... + 1/64 of alpha plus 37/64 of its 1/128.
  EXPECT_NEAR(total, 0.001 * (63.0 / 64 + 37.0 / 64 / 128), 1e-9);
}

}  // namespace
}  // namespace parastack::stats
