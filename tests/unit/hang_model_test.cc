#include "parastack/stats/hang_model.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

namespace parastack::stats {
namespace {

// Feeds observations at the model's own schedule and turn order, like a monitor would.
class Driver {
 public:
  explicit Driver(ModelConfig config = {}) : model(config) {}
  Decision feed(int n_out, int n = 10) {
    t += model.interval();
    return model.observe({t, model.next_set(), n_out, n});
  }
  // Healthy samples: each of 10 ranks independently outside MPI with probability 0.5.
  Decision feed_healthy() { return feed(binomial(rng)); }
  HangModel model;
  double t = 0;
  std::mt19937_64 rng{42};
  std::binomial_distribution<int> binomial{10, 0.5};
};

// §3.1: r = rand(I) + I/2, uniform over [I/2, 3I/2] with mean I.
TEST(HangModel, RandomisedStepSpansHalfToThreeHalvesOfTheInterval) {
  ModelConfig config;
  config.initial_interval = 0.4;  // the paper's
  HangModel model{config};
  EXPECT_DOUBLE_EQ(model.next_delay(0.0), 0.2);
  EXPECT_DOUBLE_EQ(model.next_delay(0.5), 0.4);
  EXPECT_NEAR(model.next_delay(0.999999), 0.6, 1e-6);
}

TEST(HangModel, BuildsBeforeTesting) {
  Driver d;
  const auto first = d.feed_healthy();
  EXPECT_EQ(first.verdict, Verdict::Building);
  EXPECT_FALSE(first.threshold.has_value());
  EXPECT_FALSE(d.model.ready());
}

TEST(HangModel, NonRandomSamplingDoublesTheIntervalAndHalvesTheSamples) {
  ModelConfig config;
  config.sets = 1;
  config.initial_interval = 0.4;
  Driver d(config);
  // The paper's non-random example, as n_out of 10 ranks.
  const int example[] = {2, 1, 1, 2, 1, 1, 0, 0, 8, 9, 10, 8, 9, 1, 9, 9};
  Decision last;
  for (int n_out : example) last = d.feed(n_out);
  ASSERT_TRUE(last.runs_test.has_value());
  EXPECT_FALSE(last.runs_test->random);
  EXPECT_TRUE(last.interval_doubled);
  EXPECT_DOUBLE_EQ(d.model.interval(), 0.8);
  EXPECT_EQ(last.model_samples, 8u);  // 16 samples thinned to 8
}

TEST(HangModel, IntervalStopsAtItsMaximum) {
  ModelConfig config;
  config.sets = 1;
  config.initial_interval = 0.4;
  config.max_interval = 1.6;
  config.stasis.enabled = false;  // the paper's rule: a window that cannot be judged doubles I too
  Driver d(config);
  for (int i = 0; i < 16 * 10; ++i) d.feed(5);  // constant: never random
  EXPECT_DOUBLE_EQ(d.model.interval(), 1.6);
  EXPECT_FALSE(d.model.ready());
}

TEST(HangModel, AWindowThatCannotBeJudgedLeavesTheIntervalAloneWithStasis) {
  // A code that always polls in MPI (S always 0), or a hang during building: a longer interval
  // would not make its S vary, and stasis keeps its pace.
  ModelConfig config;
  config.sets = 1;
  Driver d(config);
  for (int i = 0; i < 16 * 10; ++i) d.feed(0);
  EXPECT_DOUBLE_EQ(d.model.interval(), config.initial_interval);
  EXPECT_FALSE(d.model.ready());
  // One odd sample in 16 (N1 = 1) cannot be judged either.
  for (int i = 0; i < 16; ++i) d.feed(i == 7 ? 1 : 0);
  EXPECT_DOUBLE_EQ(d.model.interval(), config.initial_interval);
}

TEST(HangModel, AlternatesSetsEveryTurn) {
  Driver d;
  for (int i = 0; i < 30; ++i) EXPECT_EQ(d.feed_healthy().observation.set, 0);
  for (int i = 0; i < 30; ++i) EXPECT_EQ(d.feed_healthy().observation.set, 1);
  EXPECT_EQ(d.feed_healthy().observation.set, 0);
}

TEST(HangModel, DetectsPersistentLowFractionAfterExactlyKSuspicions) {
  Driver d;
  while (!d.model.ready()) d.feed_healthy();
  for (int i = 0; i < 200; ++i) d.feed_healthy();
  // Switch to all-IN_MPI samples at the start of a turn and watch the streak grow.
  while (d.model.next_set() != 0) d.feed_healthy();
  const double onset = d.t + d.model.interval();
  Decision decision;
  int fed = 0;
  do {
    decision = d.feed(0);
    ++fed;
    ASSERT_TRUE(decision.threshold.has_value());
    ASSERT_LT(fed, 200) << "no hang after 200 suspicions";
  } while (decision.verdict == Verdict::Suspicion);
  EXPECT_EQ(decision.verdict, Verdict::Hang);
  EXPECT_EQ(decision.streak, fed);
  EXPECT_EQ(decision.required_streak, required_streak(decision.threshold->q, decision.test_alpha));
  EXPECT_EQ(decision.streak, decision.required_streak);
  EXPECT_DOUBLE_EQ(decision.streak_onset, onset);
}

// With the progress library a completed MPI call is progress: S = 0 then is no suspicion (a code whose
// ranks poll sits in MPI nearly all the time, and under load for longer than its model has seen),
// and the sample is learned as healthy; the same S without a completed call goes on with the streak.
TEST(HangModel, AnObservationInWhichAnMpiCallCompletedIsNoSuspicion) {
  ModelConfig one_set;
  one_set.sets = 1;
  Driver d(one_set);
  while (!d.model.ready()) d.feed_healthy();
  const auto first = d.feed(0);
  ASSERT_EQ(first.verdict, Verdict::Suspicion);
  EXPECT_EQ(first.streak, 1);
  d.t += d.model.interval();
  Observation progressed{d.t, d.model.next_set(), 0, 10};
  progressed.progressed = true;
  const auto moved = d.model.observe(progressed);
  EXPECT_EQ(moved.verdict, Verdict::Healthy);
  EXPECT_EQ(moved.streak, 0);
  EXPECT_GT(moved.model_samples, first.model_samples);  // the held sample and this one, learned
  const auto again = d.feed(0);
  EXPECT_EQ(again.verdict, Verdict::Suspicion);
  EXPECT_EQ(again.streak, 1);
}

// An observation that came long after its time says nothing about the time before it: the streak
// it would have extended ends, unlearned, and a new one must be watched from the start.
TEST(HangModel, ALateObservationEndsTheStreakUnlearnedAndIsNoSuspicion) {
  ModelConfig one_set;
  one_set.sets = 1;
  Driver d(one_set);
  while (!d.model.ready()) d.feed_healthy();
  d.feed(0);
  const auto second = d.feed(0);
  ASSERT_EQ(second.streak, 2);
  d.t += 20;
  Observation late{d.t, 0, 0, 10};
  late.late_by = 20;
  const auto unwatched = d.model.observe(late);
  EXPECT_EQ(unwatched.verdict, Verdict::Unwatched);
  EXPECT_EQ(unwatched.streak, 0);
  EXPECT_EQ(unwatched.model_samples, second.model_samples) << "neither it nor the streak was learned";
  const auto after = d.feed(0);
  EXPECT_EQ(after.verdict, Verdict::Suspicion);
  EXPECT_EQ(after.streak, 1);
  EXPECT_EQ(after.streak_onset, d.t);
  // Late by less than late_after: an observation like any other.
  d.t += d.model.interval();
  Observation slightly{d.t, 0, 0, 10};
  slightly.late_by = one_set.late_after / 2;
  EXPECT_EQ(d.model.observe(slightly).streak, 2);
}

// The job's serial end (Observation::serial_end): rank 0 works alone outside MPI while the others
// wait in MPI_Finalize. S stays at 1/10 for as long as it works, which the model (learned on the
// job's main phase) would soon call a hang; such observations are no evidence and are not learned.
// The same S without the finished ranks fires, as any persistently low fraction does.
TEST(HangModel, TheJobsSerialEndIsNoEvidence) {
  ModelConfig one_set;
  one_set.sets = 1;
  const auto serial_end = [&](bool ending) {
    Driver d(one_set);
    while (!d.model.ready()) d.feed_healthy();
    Decision decision;
    for (int i = 0; i < 10000 && decision.verdict != Verdict::Hang; ++i) {
      d.t += d.model.interval();
      Observation o{d.t, 0, 1, 10};
      o.finished = ending ? 9 : 0;
      o.serial_end = ending;
      decision = d.model.observe(o);
      if (ending) {
        EXPECT_EQ(decision.verdict, Verdict::Unwatched);
        EXPECT_EQ(decision.streak, 0);
      }
    }
    return decision;
  };
  const auto ending = serial_end(true);
  EXPECT_NE(ending.verdict, Verdict::Hang);
  EXPECT_EQ(serial_end(false).verdict, Verdict::Hang);
}

TEST(HangModel, StreakSamplesAreHeldBackUntilTheStreakBreaks) {
  Driver d;
  while (!d.model.ready()) d.feed_healthy();
  while (d.model.next_set() != 0) d.feed_healthy();
  // S = 1 is never a suspicion: a threshold at the largest value would have F = 1 and q >= 1.
  const auto before = d.feed(10);  // committed at once
  const std::size_t committed = before.model_samples;
  const auto s1 = d.feed(0);
  const auto s2 = d.feed(0);
  ASSERT_EQ(s2.verdict, Verdict::Suspicion);
  EXPECT_EQ(s1.model_samples, committed);
  EXPECT_EQ(s2.model_samples, committed);
  EXPECT_EQ(s2.threshold->value, s1.threshold->value);  // frozen for the streak
  EXPECT_EQ(s2.thresholds_tested, s1.thresholds_tested);
  EXPECT_GT(s2.thresholds_tested, 1);  // every sample value is under test
  const auto broken = d.feed(10);
  EXPECT_EQ(broken.verdict, Verdict::Healthy);
  EXPECT_EQ(broken.streak, 0);
  EXPECT_EQ(broken.model_samples, std::min<std::size_t>(committed + 3, 2048));
}

// CI's healthy 4-rank polling job: S was 0 or 1/4 for good after one early sample of 2/4. The
// threshold at 1/4 then covered nearly every sample (q within 1e-4 of 1, k in the tens of
// thousands), so every sample extended its streak and was held back: the model stood at 95 samples
// for the rest of the job. Such a threshold is not tested, and the model keeps learning.
TEST(HangModel, AThresholdNearlyEverySampleReachesIsNotTestedAndTheModelKeepsLearning) {
  ModelConfig config;
  config.sets = 1;
  Driver d(config);
  std::bernoulli_distribution one_out{0.4};
  const auto polling = [&] { return d.feed(one_out(d.rng) ? 1 : 0, 4); };
  for (int i = 0; i < 20; ++i) polling();
  d.feed(2, 4);  // the one rare moment two ranks were out
  while (!d.model.ready()) polling();
  Decision decision;
  std::size_t most_held = 0;
  for (int i = 0; i < 3000; ++i) {
    decision = polling();
    ASSERT_NE(decision.verdict, Verdict::Hang) << "at t = " << d.t;
    if (decision.threshold) {
      ASSERT_LT(decision.threshold->value, 0.25) << "tested at t = " << d.t << " with k = " << decision.required_streak;
    }
    ASSERT_LE(decision.required_streak, config.max_required_streak);
    most_held = std::max(most_held, static_cast<std::size_t>(decision.streak));
  }
  EXPECT_EQ(decision.model_samples, config.window);  // full: it learned all along
  EXPECT_LT(most_held, 100u);
}

TEST(HangModel, StreakOfOneSetSurvivesTheOtherSetsTurns) {
  ModelConfig config;
  config.observations_per_turn = 3;  // shorter than any k
  Driver d(config);
  while (!d.model.ready()) d.feed_healthy();
  for (int i = 0; i < 300; ++i) d.feed_healthy();
  // Set 1 holds a faulty rank (always OUT_MPI): its samples never look suspicious. Set 0 is hung.
  Decision decision;
  for (int i = 0; i < 600; ++i) {
    decision = d.model.next_set() == 0 ? d.feed(0) : d.feed(1);
    if (decision.verdict == Verdict::Hang) break;
  }
  EXPECT_EQ(decision.verdict, Verdict::Hang);
  EXPECT_EQ(decision.observation.set, 0);
  EXPECT_GT(decision.streak, config.observations_per_turn);
}

TEST(HangModel, ResumeAfterSlowdownRestartsTheStreak) {
  Driver d;
  while (!d.model.ready()) d.feed_healthy();
  while (d.model.next_set() != 0) d.feed_healthy();
  Decision decision;
  do decision = d.feed(0);
  while (decision.verdict != Verdict::Hang);
  const std::size_t before = decision.model_samples;
  d.model.resume_after_slowdown(0);
  const auto next = d.feed(0);
  EXPECT_EQ(next.streak, 1);
  EXPECT_EQ(next.verdict, Verdict::Suspicion);
  // The new one-sample streak and the healthy sample join the model; the k dropped ones do not.
  EXPECT_EQ(d.feed(10).model_samples, before + 2);
}

TEST(HangModel, PaperRuleTestsOnlyTheTightestThreshold) {
  ModelConfig config;
  config.thresholds = ThresholdRule::Paper;
  Driver paper(config);
  Driver ladder;
  Decision a, b;
  for (int i = 0; i < 2000; ++i) {
    a = paper.feed_healthy();
    b = ladder.feed_healthy();
  }
  ASSERT_EQ(a.verdict == Verdict::Building, false);
  EXPECT_EQ(a.thresholds_tested, 1);
  EXPECT_DOUBLE_EQ(a.threshold->tolerance, 0.05);
  EXPECT_GT(b.thresholds_tested, 1);
  EXPECT_DOUBLE_EQ(b.test_alpha * b.thresholds_tested, a.test_alpha);  // alpha is split
  for (int i = 0; i < 30; ++i) b = ladder.feed(0);                     // a streak: report the threshold that fires
  EXPECT_EQ(b.verdict, Verdict::Hang);
}

// A busy-waiting hang: ranks poll MPI_Test and are seen in their own loop 5% of the time, so S is
// often 0.1 or 0.2, rarely 0 for long. Testing every value still confirms it.
TEST(HangModel, LadderConfirmsAHangWhoseFractionStaysLowButNotZero) {
  auto hang_after = [](ThresholdRule rule) {
    ModelConfig config;
    config.thresholds = rule;
    Driver d(config);
    // Healthy: 30% of the time every sampled rank waits in a collective (S = 0), so the tightest
    // step's threshold is S <= 0.
    std::bernoulli_distribution collective{0.3};
    for (int i = 0; i < 3000; ++i) {
      if (collective(d.rng)) {
        d.feed(0);
      } else {
        d.feed_healthy();
      }
    }
    std::binomial_distribution<int> polling{10, 0.05};
    for (int i = 1; i <= 5000; ++i) {
      if (d.feed(polling(d.rng)).verdict == Verdict::Hang) return i;
    }
    return -1;
  };
  const int ladder = hang_after(ThresholdRule::EveryValue);
  EXPECT_GT(ladder, 0);
  EXPECT_LT(ladder, 100);
  const int tightest = hang_after(ThresholdRule::Paper);
  EXPECT_TRUE(tightest < 0 || tightest > ladder) << "tightest " << tightest << " vs ladder " << ladder;
}

TEST(HangModel, InvalidObservationsAreSkipped) {
  HangModel model{ModelConfig{}};
  EXPECT_EQ(model.observe({1, 0, 0, 0}).verdict, Verdict::Skipped);   // nobody classified
  EXPECT_EQ(model.observe({1, 5, 1, 10}).verdict, Verdict::Skipped);  // no such set
  EXPECT_EQ(model.observe({1, 0, 11, 10}).verdict, Verdict::Skipped);
}

TEST(HangModel, ConfigErrorsAreExplained) {
  ModelConfig config;
  EXPECT_FALSE(config_error(config).has_value());
  config.alarm.alpha = 1.5;
  EXPECT_TRUE(config_error(config).has_value());
  EXPECT_THROW(HangModel{config}, std::invalid_argument);
  config = {};
  config.max_interval = config.initial_interval / 2;
  EXPECT_TRUE(config_error(config).has_value());
  config = {};
  config.late_after = 0;
  EXPECT_TRUE(config_error(config).has_value());
  config = {};
  config.max_required_streak = 0;
  EXPECT_TRUE(config_error(config).has_value());
}

// The reason for the per-job budget: on a long healthy stream of independent samples, the
// paper's per-test rule raises alarms, the per-job budget does not.
int alarms_on_healthy_stream(AlarmBudget budget, SuspicionBound bound = SuspicionBound::Ladder) {
  ModelConfig config;
  config.alarm.budget = budget;
  config.bound = bound;
  config.stasis.enabled = false;  // S alone: these streams carry no call paths
  config.initial_interval = 0.4;
  Driver d(config);
  int alarms = 0;
  for (int i = 0; i < 400'000; ++i) {  // about 44 hours at I = 0.4 s
    const auto decision = d.feed_healthy();
    if (decision.verdict == Verdict::Hang) {
      ++alarms;
      d.model.resume_after_slowdown(decision.observation.set);
    }
  }
  return alarms;
}

TEST(HangModel, PerJobBudgetRemovesTheFalseAlarmsOfThePerTestRule) {
  EXPECT_GT(alarms_on_healthy_stream(AlarmBudget::PerTest), 5);
  EXPECT_EQ(alarms_on_healthy_stream(AlarmBudget::PerJob), 0);
  // The exact bound is tighter than the ladder's, and still spent under the same alpha.
  EXPECT_EQ(alarms_on_healthy_stream(AlarmBudget::PerJob, SuspicionBound::Exact), 0);
}

// The evidence must come from the data, not from waiting: a trace of S alone (the old format, no
// call paths), one observation every 4 s, where a healthy suspicion (S = 0 of 10 ranks, each out
// of MPI half the time) has probability 1/1024 < 1e-3, confirms a hang within 35 s of its onset.
TEST(HangModel, AnOldTraceOfSAloneConfirmsAHangWithin35SecondsAt4SecondsPerObservation) {
  ModelConfig config;
  config.initial_interval = 4;
  config.max_interval = 4;
  HangModel model{config};
  std::mt19937_64 rng(2026);
  std::binomial_distribution<int> healthy(10, 0.5);
  double t = 0;
  std::uint64_t i = 0;
  for (; t < 2 * 3600; ++i) {
    t += 4;
    const auto d = model.observe({t, static_cast<int>((i / 30) % 2), healthy(rng), 10});
    ASSERT_NE(d.verdict, Verdict::Hang) << "a false alarm at t=" << t;
  }
  ASSERT_TRUE(model.ready());
  const double onset = t;
  Decision d;
  do {
    t += 4;
    d = model.observe({t, static_cast<int>((i++ / 30) % 2), 0, 10});
  } while (d.verdict != Verdict::Hang && t < onset + 600);
  EXPECT_EQ(d.verdict, Verdict::Hang);
  EXPECT_EQ(d.evidence, Evidence::Fraction);
  EXPECT_LE(t - onset, 35);
}

}  // namespace
}  // namespace parastack::stats
