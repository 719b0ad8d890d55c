// The stasis tests (stats/stasis.h) against exact probabilities and on synthetic streams.
#include "parastack/stats/stasis.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "parastack/stats/hang_model.h"
#include "parastack/stats/set_signature.h"

namespace parastack::stats {
namespace {

constexpr double kBeta = 1e-4;

// Observations of a set of 4 ranks, all in MPI (few outside), at one place each time.
struct Stream {
  StasisModel model;
  double t = 0;
  explicit Stream(StasisConfig config = {}) : model(config, kBeta) {}
  StasisDecision feed(std::uint64_t path, double alpha = 1e-9, int n_out = 0, bool polling = false) {
    t += 0.1;
    Observation o{t, 0, n_out, 4, path, polling};
    if (!polling) {  // nobody busy-waits: every known rank is active
      o.active_path = path;
      o.active_out = n_out;
    }
    return model.observe(o, alpha);
  }
  // A set of 4 whose busy-waiting ranks hop between polling calls (the full path changes every
  // time) while its active ranks are at `active` (kEveryoneWaiting: none), active_out of them OUT.
  StasisDecision feed_polling(std::uint64_t active, int active_out = 0, int active_ranks = 1) {
    t += 0.1;
    Observation o{t,
                  0,
                  active_out,
                  4,
                  1000 + static_cast<std::uint64_t>(t * 10) % 2,
                  true,
                  active,
                  active_out,
                  active == kEveryoneWaiting || active == 0 ? 0 : active_ranks};
    return model.observe(o, 0);
  }
};

// Places drawn independently: place 1 with probability 0.6, places 2 and 3 with 0.2 each.
std::uint64_t draw(std::mt19937_64& rng) {
  const double u = std::uniform_real_distribution<double>(0, 1)(rng);
  return u < 0.6 ? 1 : u < 0.8 ? 2 : 3;
}

// How far the model sees: the shortest run at a place never seen that fires, c+ s+^(L-1) <= alpha,
// checked against the bounds it reports; none from a few pairs that mostly stood still.
TEST(Stasis, TheShortestFiringRunAtANewPlaceMatchesTheBounds) {
  Stream few;
  StasisDecision d;
  for (int i = 0; i < 12; ++i) d = few.feed(i % 6 == 0 ? 2 : 1);
  EXPECT_GT(d.first_bound, 0.5);
  EXPECT_TRUE(d.new_place_streak == 0 || d.new_place_streak > 2048) << d.new_place_streak;

  Stream many;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 4000; ++i) d = many.feed(draw(rng));
  const int length = d.new_place_streak;
  ASSERT_GT(length, 1);
  EXPECT_LT(length, 200);
  const auto bound = [&](int l) { return d.first_bound * std::pow(d.continue_bound, l - 1); };
  EXPECT_LE(bound(length), 1e-9);
  EXPECT_GT(bound(length - 1), 1e-9);
  EXPECT_EQ(many.model.observe_late({many.t + 0.1, 0, 0, 4, 9, false, 9, 0}).new_place_streak, 0);  // nothing fires
}

TEST(Stasis, TheBoundOfARunAtAPlaceCoversItsExactProbability) {
  // Exactly, for independent places, a run of L still observations at place v (from a given
  // observation on) has probability p_v^(L+1); the model's bound for it is c+ s_v+^(L-1).
  Stream s;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 4000; ++i) s.feed(draw(rng));
  const double p_sticky = 0.6, c = 0.6 * 0.6 + 2 * 0.2 * 0.2;
  s.feed(5);  // leave the places, then stay at the sticky one
  s.feed(1);
  StasisDecision d;
  for (int length = 1; length <= 30; ++length) {
    d = s.feed(1);
    ASSERT_TRUE(d.still);
    ASSERT_EQ(d.streak, length);
    EXPECT_GE(d.streak_bound, std::pow(p_sticky, length + 1)) << "run of " << length;
  }
  EXPECT_GE(d.first_bound, c);
  EXPECT_GE(d.continue_bound, p_sticky);
  // Why a single pooled continuation would be wrong: s = sum p^3 / sum p^2 < 0.6, and c s^(L-1)
  // falls below the exact probability of a run at the sticky place.
  const double pooled = (0.216 + 2 * 0.008) / c;
  EXPECT_LT(c * std::pow(pooled, 29), std::pow(p_sticky, 31));
}

TEST(Stasis, ALongHealthyStreamNeverFires) {
  Stream s;
  std::mt19937_64 rng(11);
  int fired = 0, early = 0;
  for (int i = 0; i < 200'000; ++i) {  // about 5.5 hours at 0.1 s
    const auto d = s.feed(draw(rng));
    fired += d.fired ? 1 : 0;
    early += d.early_fired ? 1 : 0;
  }
  EXPECT_EQ(fired, 0);
  EXPECT_EQ(early, 0);
}

// Steps the stream onto `path` and keeps it there until the model fires (at most 1000 still
// observations): the last decision, and how many still observations it took.
std::pair<StasisDecision, int> stay_until_fired(Stream& s, std::uint64_t path) {
  int length = 0;
  StasisDecision d;
  s.feed(path);
  do {
    d = s.feed(path);
    ++length;
  } while (!d.fired && length < 1000);
  return {d, length};
}

// The decision also says how long a run the test needs at this alpha: the run fires exactly when
// it gets there (verification measures its window from that point).
TEST(Stasis, ARunAtAPlaceNeverSeenInHealthFiresWithinAFewObservations) {
  Stream s;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 2000; ++i) s.feed(draw(rng));
  const auto [d, length] = stay_until_fired(s, 42);
  ASSERT_TRUE(d.fired);
  EXPECT_LE(d.streak_bound, 1e-9);
  EXPECT_LE(length, 60);
  EXPECT_EQ(d.required_streak, d.streak);
  EXPECT_EQ(d.streak, length);
}

// A place healthy observations passed through a few times without ever staying is judged as one never
// seen: its own bound (three trials, no hit) would be near 1 and the run would never fire.
TEST(Stasis, APlaceSeenInPassingButNeverStayedAtIsJudgedAsANewOne) {
  Stream s;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 2000; ++i) {
    if (i % 500 == 250) s.feed(42);  // in passing: the next observation is elsewhere
    s.feed(draw(rng));
  }
  const auto [d, length] = stay_until_fired(s, 42);
  EXPECT_TRUE(d.fired);
  EXPECT_LE(length, 60);
  // A place that did stay once keeps its own bound: the same run is not judged as fast.
  Stream stayed;
  for (int i = 0; i < 2000; ++i) {
    if (i % 500 == 250) {
      stayed.feed(43);
      stayed.feed(43);
    }
    stayed.feed(draw(rng));
  }
  stayed.feed(43);
  for (int still = 1; still <= 60; ++still) EXPECT_FALSE(stayed.feed(43).fired) << still;
}

// A place whose visits last 1, 2, 3 or 4 observations (equally likely), between visits of one
// observation to one of four other places: a run of L still observations at place 1 starting at a
// given observation has exactly the probability E[max(0, D - L)] / 3.5 (a cycle is 3.5 observations
// on average): 1.5, 0.75, 0.25 and 0 (L = 1 .. 4) over 3.5. Its stickiness depends on how long
// the run has lasted (2/3 after one still observation, 1/3 after two or more), which a chain that
// remembers the run learns and a first-order one (one s_v = 0.6 for every step) does not.
struct Visits {
  Stream stream;
  explicit Visits(int run_memory, int observations = 20000) : stream(config(run_memory)) {
    std::mt19937_64 rng(5);
    for (int fed = 0; fed < observations;) {
      const int duration = 1 + static_cast<int>(rng() % 4);
      for (int i = 0; i < duration; ++i, ++fed) stream.feed(1);
      stream.feed(2 + rng() % 4);
      ++fed;
    }
    stream.feed(2);
  }
  static StasisConfig config(int run_memory) {
    StasisConfig c;
    c.run_memory = run_memory;
    return c;
  }
};

TEST(Stasis, AChainThatRemembersTheRunBoundsEachStepAndTheRunByItsExactProbability) {
  Visits visits(3);
  const std::array<double, 4> exact{1.5 / 3.5, 0.75 / 3.5, 0.25 / 3.5, 0};
  visits.stream.feed(1);
  for (int length = 1; length <= 4; ++length) {
    const auto d = visits.stream.feed(1);
    ASSERT_EQ(d.streak, length);
    EXPECT_GE(d.streak_bound, exact[static_cast<std::size_t>(length - 1)]) << "run of " << length;
    EXPECT_EQ(d.steps, 1);
    EXPECT_GE(d.first_bound, 1.5 / 3.5);
    EXPECT_GE(d.step_bounds[0], 2.0 / 3);  // after one still observation
    EXPECT_GE(d.continue_bound, 1.0 / 3);  // after two or more
    // ... and learned, not the pooled fallback of a place never seen this deep: about 1/3 over some
    // hundreds of trials, well below the first-order 0.6.
    EXPECT_LT(d.continue_bound, 0.5);
  }
}

TEST(Stasis, ARunLongerThanAPlaceEverHeldFiresSoonerWhenTheChainRemembersTheRun) {
  Visits first_order(1), remembering(3);
  const int first_order_length = stay_until_fired(first_order.stream, 1).second;
  const auto [d, length] = stay_until_fired(remembering.stream, 1);
  ASSERT_TRUE(d.fired);
  EXPECT_EQ(d.required_streak, length);
  EXPECT_LT(length, first_order_length * 2 / 3) << "first order: " << first_order_length;
  // c x s_1 x s^(L-2), as reports print it
  const std::string formula = bound_formula(d);
  EXPECT_EQ(std::count(formula.begin(), formula.end(), 'x'), 2) << formula;
  EXPECT_NE(formula.find("^" + std::to_string(length - 2)), std::string::npos) << formula;
}

TEST(Stasis, ARunMemoryOutsideOneToFourIsRefused) {
  EXPECT_THROW(StasisModel(Visits::config(0), kBeta), std::invalid_argument);
  EXPECT_THROW(StasisModel(Visits::config(kMaxRunMemory + 1), kBeta), std::invalid_argument);
}

TEST(Stasis, UnknownPathsAndManyRanksOutsideAreNeverStill) {
  Stream s;
  s.feed(9);
  EXPECT_TRUE(s.feed(9).still);
  EXPECT_FALSE(s.feed(0).known);           // unknown: no evidence, the run ends
  EXPECT_FALSE(s.feed(9).still);           // the pair (unknown, 9) is not known
  EXPECT_FALSE(s.feed(9, 1e-9, 2).still);  // 2 of 4 outside MPI: not the picture of a hang
}

// hpcc at 4 ranks: rank 1 spins, the others poll in one loop and now and then a sample finds one
// of them in the loop's own code. That poller waits (§3.3): the set is still, with one rank
// outside MPI that counts. Counted as a second rank outside, it cut the hang's run, the cut run
// was learned as healthy stillness, and the hang's place could never fire again.
TEST(Stasis, ABusyWaitingRankSeenInItsLoopCodeDoesNotCutTheRun) {
  SetSignatures signatures;
  Stream s;
  const RankSnapshot spinning{RankState::OutMpi, {}, 7};
  const RankSnapshot polling{RankState::InMpi, "MPI_Test", 20};
  const RankSnapshot in_loop_code{RankState::OutMpi, {}, 20};
  int longest = 0;
  for (int i = 0; i < 50; ++i) {
    s.t += 0.1;
    const auto o = signatures.observe(
        s.t, 0, {polling, spinning, i % 5 == 4 ? in_loop_code : polling, i % 7 == 6 ? in_loop_code : polling});
    EXPECT_LE(o.waiting_out, 2);
    const auto d = s.model.observe(o, 1e-9);
    if (i > 0) {
      EXPECT_TRUE(d.still) << "observation " << i << ": n_out " << o.n_out << ", waiting_out " << o.waiting_out;
    }
    longest = std::max(longest, d.streak);
  }
  EXPECT_EQ(longest, 49);
}

// The model-free rule: no model needed, so a hang in the first seconds is found.
TEST(Stasis, TheModelFreeRuleFiresAfterItsMinimumOnAJobThatHasMoved) {
  StasisConfig config;
  Stream s(config);
  for (int i = 0; i < 30; ++i) s.feed(1 + i % 3);  // 3 s of movement
  StasisDecision d = s.feed(7);
  const double stopped = s.t;  // first seen at the place it stays at
  do d = s.feed(7);
  while (!d.early_fired && s.t < 100);
  EXPECT_TRUE(d.early_applies);
  EXPECT_NEAR(s.t - stopped, config.early_min_seconds, 0.15);  // max(5 s, 3 s / 8)
}

// A late observation (the monitor or a rank was kept off the CPU) ends both kinds of run without
// teaching the model anything; stillness must then be watched afresh, for the rule's whole minimum.
TEST(Stasis, ALateObservationEndsTheRunsAndTheTimeBeforeItIsNotWatched) {
  StasisConfig config;
  Stream s(config);
  for (int i = 0; i < 30; ++i) s.feed(1 + i % 3);  // 3 s of movement
  StasisDecision d = s.feed(7);
  for (int i = 0; i < 30; ++i) d = s.feed(7);  // 3 s at one place, short of the rule's 5 s
  ASSERT_FALSE(d.early_fired);
  ASSERT_EQ(d.early_streak, 30);
  ASSERT_EQ(d.streak, 30);
  const std::uint64_t pairs = d.pairs;

  s.t += 20;  // nothing watched for 20 s; the job is found where it was
  Observation late{s.t, 0, 0, 4, 7, false, 7, 0};
  late.late_by = 20;
  d = s.model.observe_late(late);
  EXPECT_FALSE(d.early_fired);
  EXPECT_FALSE(d.fired);
  EXPECT_EQ(d.early_streak, 0);
  EXPECT_EQ(d.streak, 0);
  EXPECT_EQ(d.pairs, pairs) << "the run was learned as a step of the model";

  const double anchored = s.t;
  do d = s.feed(7);
  while (!d.early_fired && s.t < 100);
  EXPECT_EQ(d.early_onset, anchored) << "the new run starts at the late observation";
  EXPECT_NEAR(s.t - anchored, config.early_min_seconds, 0.15) << "the 3 s before the gap were counted";
}

TEST(Stasis, TheModelFreeRuleWaitsLongerInAnOlderJob) {
  Stream s;
  for (int i = 0; i < 4000; ++i) s.feed(1 + i % 3);  // 400 s of movement
  StasisDecision d = s.feed(7, 0);                   // alpha 0: only the model-free rule can fire
  const double stopped = s.t;
  do d = s.feed(7, 0);
  while (!d.early_fired && s.t < 1000);
  EXPECT_NEAR(s.t - stopped, 400 * 0.125, 0.2);
}

TEST(Stasis, TheModelFreeRuleDoesNotApplyToAJobThatNeverMoved) {
  // One MPI call site around a tiny computation: always the same path. Nothing to go on.
  Stream s;
  StasisDecision d;
  for (int i = 0; i < 2000; ++i) d = s.feed(7, 0);
  EXPECT_FALSE(d.early_applies);
  EXPECT_FALSE(d.early_fired);
}

// A rank that stands at one place outside MPI from the job's first observation while the others
// wait in MPI (a rank spinning from its first MPI call; a user's first test program) is no loop
// around one MPI call: before the job has shown movement it is judged at four times the rule's
// length, 20 s, and 80 s beside busy-waiting ranks. Not before: the job never gave the rule a
// past. Once it has shown movement the same run needs the plain 5 s, as a job that moved always did.
TEST(Stasis, BeforeTheJobHasMovedARankStillOutsideMpiIsJudgedAtFourTimesTheLength) {
  const auto still_from_start = [](bool beside_waiters, StasisDecision& d) {
    Stream s;
    d = beside_waiters ? s.feed_polling(7, 1) : s.feed(7, 0, 1);
    const double stopped = s.t;
    do {
      d = beside_waiters ? s.feed_polling(7, 1) : s.feed(7, 0, 1);
      EXPECT_TRUE(d.early_applies);
      EXPECT_TRUE(d.early_before_movement);
    } while (!d.early_fired && s.t < 1000);
    return s.t - stopped;
  };
  StasisDecision d;
  EXPECT_NEAR(still_from_start(false, d), 4 * 5, 0.15);
  EXPECT_NEAR(d.early_needed, 4 * 5, 1e-9);
  EXPECT_NEAR(still_from_start(true, d), 4 * 4 * 5, 0.15);
  EXPECT_NEAR(d.early_needed, 4 * 4 * 5, 1e-9);

  // The same ranks all in MPI: a loop around one MPI call site, never judged (the test above).
  Stream in_mpi;
  for (int i = 0; i < 2000; ++i) d = in_mpi.feed(7, 0, 0);
  EXPECT_FALSE(d.early_before_movement);
  EXPECT_FALSE(d.early_fired);

  // After movement, the usual length (TheModelFreeRuleFiresAfterItsMinimumOnAJobThatHasMoved).
  Stream moved;
  for (int i = 0; i < 30; ++i) moved.feed(1 + i % 3);
  d = moved.feed(7, 0, 1);
  const double stopped = moved.t;
  do d = moved.feed(7, 0, 1);
  while (!d.early_fired && moved.t < 100);
  EXPECT_FALSE(d.early_before_movement);
  EXPECT_NEAR(moved.t - stopped, 5, 0.15);
}

// Nor once the job ends: a job still from its start (hung at its first MPI call) is killed, and its
// last observations read fewer ranks, or none. Its run ends there (the safe side), but no rank was
// seen leaving its place, so the job has still not shown that it moves (the report said it was
// watched for its last 0.14 s: Run.AJobHungAtItsFirstMpiCallSaysWithinAMinuteThatItIsNotWatched,
// 2026-12-05). A run whose ranks are all read elsewhere has ended by itself, as before.
TEST(Stasis, ARunEndedByRanksThatCouldNotBeReadShowsNoMovement) {
  const auto ended_by = [](std::vector<Observation> ending) {
    Stream s;
    for (int i = 0; i < 600; ++i) s.feed(7, 0);
    StasisDecision d;
    for (Observation& o : ending) {
      s.t += 0.1;
      o.t = s.t;
      d = s.model.observe(o, 0);
      EXPECT_FALSE(d.early_fired);
    }
    for (int i = 0; i < 5; ++i) d = s.feed(9, 0);  // a place never seen: judged only if it moved
    return d.early_applies;
  };
  const Observation two_left{0, 0, 0, 2, 11, false, 11, 0, 2};  // two ranks ended, two read elsewhere
  const Observation none_read{0, 0, 0, 0};
  EXPECT_FALSE(ended_by({two_left}));
  EXPECT_FALSE(ended_by({none_read, none_read, none_read, none_read, none_read}));
  EXPECT_FALSE(ended_by({none_read, two_left, none_read}));
  const Observation all_elsewhere{0, 0, 0, 4, 11, false, 11, 0, 4};
  EXPECT_TRUE(ended_by({all_elsewhere})) << "a run its ranks were all seen to leave is movement";
}

// Nor do such endings make a job look mostly moving: a job whose ranks habitually stand still at
// a place, its runs each cut by an observation that read only two of its four ranks, keeps the
// longer minimum of a habit. (Counted as moving links, they outnumbered the still ones.)
TEST(Stasis, RunsEndedByFewerReadableRanksAreNoMovementForTheHabitEither) {
  StasisConfig config;
  Stream s(config);
  for (int i = 0; i < 16; ++i) s.feed(1 + i % 3);  // shown moving
  for (int cycle = 0; cycle < 60; ++cycle) {
    for (int i = 0; i < 3; ++i) s.feed(7, 0);  // a run of two still observations at 7
    s.t += 0.1;
    s.model.observe(Observation{s.t, 0, 0, 2, 11, false, 11, 0}, 0);  // two ranks read, elsewhere
  }
  StasisDecision d;
  for (int i = 0; i < 10; ++i) d = s.feed(7, 0);
  ASSERT_TRUE(d.early_applies);
  EXPECT_NEAR(d.early_needed, config.early_min_seconds * config.early_habit_factor, 1e-9);
}

// With the progress library every rank's count of completed MPI calls is part of its place, so a
// loop around one MPI call site moves with every call it completes, and a set that stands still
// from its first observation (a deadlock at the job's first MPI call) is judged after the rule's
// plain minimum, with no past of movement. One rank without a count would leave it unjudged.
TEST(Stasis, ACountedSetStillFromItsFirstObservationIsJudged) {
  const auto counted_run = [](bool every_rank_counted) {
    Stream s;
    StasisDecision d;
    do {
      s.t += 0.1;
      Observation o{s.t, 0, 0, 4, 42, false, 42, 0, 4};
      o.counted = every_rank_counted;
      d = s.model.observe(o, 0);
      EXPECT_EQ(d.early_applies, every_rank_counted);
    } while (!d.early_fired && s.t < 600);
    return std::pair{d.early_fired, s.t};
  };
  const auto [fired, at] = counted_run(true);
  EXPECT_TRUE(fired);
  EXPECT_NEAR(at, 0.1 + 5, 0.15);  // the run began after the first observation
  EXPECT_FALSE(counted_run(false).first);
}

// A run that began uncounted (the library's page not read yet) does not become judgeable halfway:
// its past was not evidence of standing still by counts.
TEST(Stasis, ARunCountedOnlyFromItsMiddleNeedsThePastOfMovement) {
  Stream s;
  StasisDecision d;
  for (int i = 0; i < 3000; ++i) {
    s.t += 0.1;
    Observation o{s.t, 0, 0, 4, 42, false, 42, 0, 4};
    o.counted = i >= 20;
    d = s.model.observe(o, 0);
    ASSERT_FALSE(d.early_fired) << s.t;
  }
}

TEST(Stasis, TheModelFreeRuleLearnsTheLongestStillRunThatEnded) {
  Stream s;
  for (int i = 0; i < 100; ++i) s.feed(1 + i % 3);
  for (int i = 0; i < 30; ++i) s.feed(8);  // a 3 s standstill that ended by itself: healthy
  for (int i = 0; i < 100; ++i) s.feed(1 + i % 3);
  StasisDecision d;
  const double stopped = s.t;
  do d = s.feed(7, 0);
  while (!d.early_fired && s.t < 1000);
  EXPECT_GE(s.t - stopped, 3 * 2.9);  // three times the run it has seen end
}

// Busy-waiting ranks say nothing either way (set_signature.h): a set whose ranks all poll, for
// ever, is no evidence of a hang, however long it lasts.
TEST(Stasis, EveryoneBusyWaitingIsNoEvidence) {
  Stream s;
  for (int i = 0; i < 100; ++i) s.feed(1 + i % 3);
  StasisDecision d;
  for (int i = 0; i < 2000; ++i) d = s.feed_polling(kEveryoneWaiting);
  EXPECT_EQ(d.early_streak, 0);
  EXPECT_FALSE(d.early_fired);
}

// hpcc's RandomAccess: every rank polls all the time; then one rank spins outside MPI for ever
// while the others poll on (hopping between MPI_Test and MPI_Testany). The active rank standing
// still is the hang, found after the rule's minimum: the job's known observations (everyone
// waiting, the odd active rank that moved on) are what it had shown.
TEST(Stasis, AnActiveRankStandingStillAmongBusyWaitersIsFound) {
  Stream s;
  for (int i = 0; i < 40; ++i) {
    const bool odd_active_rank = i % 10 == 0;
    s.feed_polling(odd_active_rank ? 100 + static_cast<std::uint64_t>(i) : kEveryoneWaiting, odd_active_rank ? 1 : 0);
  }
  StasisDecision d = s.feed_polling(7, 1);
  const double stopped = s.t;
  do d = s.feed_polling(7, 1);
  while (!d.early_fired && s.t < 100);
  EXPECT_TRUE(d.early_applies);
  EXPECT_NEAR(s.t - stopped, 20, 0.15);  // 4 x 5 s beside busy-waiting ranks (they might work)
}

// hpcc's deadlock: in health one rank sits in a blocking call at its usual place for 1.6 s at a
// time while the others poll, so most links are still; the faulty rank blocks in a receive at a
// place the job never showed. The share guard is for usual places: the new one is judged by T.
TEST(Stasis, AStandstillAtANewPlaceIsJudgedByItsLengthAlone) {
  Stream s;
  for (int cycle = 0; cycle < 3; ++cycle) {
    for (int i = 0; i < 16; ++i) s.feed_polling(50, 1);  // 1.6 s at the usual place
    s.feed_polling(kEveryoneWaiting);
  }
  StasisDecision d = s.feed_polling(60, 1);  // never seen
  const double stopped = s.t;
  do d = s.feed_polling(60, 1);
  while (!d.early_fired && s.t < 100);
  EXPECT_TRUE(d.early_fired);
  EXPECT_NEAR(s.t - stopped, 20, 0.15);  // 4 x 5 s beside busy-waiting ranks
  // The same standstill at the usual place must be 4 times longer: such runs are this job's habit.
  Stream usual;
  for (int cycle = 0; cycle < 3; ++cycle) {
    for (int i = 0; i < 16; ++i) usual.feed_polling(50, 1);
    usual.feed_polling(kEveryoneWaiting);
  }
  StasisDecision e = usual.feed_polling(50, 1);
  const double usual_stop = usual.t;
  do e = usual.feed_polling(50, 1);
  while (!e.early_fired && usual.t < 200);
  EXPECT_NEAR(e.early_needed, 80, 1e-9);
  EXPECT_NEAR(usual.t - usual_stop, 80, 0.15);
}

// Every active rank blocked in MPI while others poll: the pollers may be the ones working (a
// healthy hpcc on an overloaded node kept ranks in MPI_Waitany for 5 s and for 22 s while the
// others worked inside their MPI_Testany loops). At a place the job never left (hpcc's deadlock: a
// receive nobody sends) the model-free rule needs four times the 20 s it needs beside busy-waiting
// ranks; at a place the job has left before, it never calls that a hang, not even when a poller
// cannot be read now and then.
TEST(Stasis, RanksBlockedInMpiBesidePollersNeedFourTimesLongerAtANewPlaceAndNeverAtAUsualOne) {
  Stream s;
  for (int i = 0; i < 40; ++i) s.feed_polling(kEveryoneWaiting);
  StasisDecision d = s.feed_polling(9, 0);
  const double stopped = s.t;
  do d = s.feed_polling(9, 0);
  while (!d.early_fired && s.t < 400);
  EXPECT_TRUE(d.early_fired);
  EXPECT_NEAR(d.early_needed, 80, 1e-9);
  EXPECT_NEAR(s.t - stopped, 80, 0.15);

  // The job's ranks sat blocked at place 9 before, for 1.5 s at a time, and left it.
  Stream t;
  for (int cycle = 0; cycle < 5; ++cycle) {
    for (int i = 0; i < 8; ++i) t.feed_polling(kEveryoneWaiting);
    for (int i = 0; i < 15; ++i) t.feed_polling(9, 0);
  }
  for (int i = 0; i < 8; ++i) t.feed_polling(kEveryoneWaiting);
  for (int fed = 1; fed < 3000; ++fed) {
    t.t += 0.1;
    const bool unreadable_poller = fed % 7 == 0;
    Observation o{t.t, 0, 0, 3, 77, !unreadable_poller, 9, 0, 1};
    d = t.model.observe(o, 0);
    ASSERT_FALSE(d.early_fired) << t.t;
  }
  EXPECT_TRUE(d.early_applies);
  EXPECT_EQ(d.early_needed, std::numeric_limits<double>::infinity());
}

// The same with the progress library (--mpi-progress): every poller's count of completed MPI calls
// is known, so pollers are active ranks, still while their counts stand, and no rank waits unseen.
// A deadlock beside pollers (one rank blocked in a receive, the others polling for it for ever)
// is then judged like a deadlock of blocked ranks: after the rule's plain minimum.
TEST(Stasis, WithEveryPollersCountBlockedRanksBesidePollersAreJudged) {
  Stream s;
  const auto counted = [&](std::uint64_t active) {
    s.t += 0.1;
    Observation o{s.t, 0, 1, 4, active ^ 0x55, true, active, 0, 4};
    o.counted = true;
    return s.model.observe(o, 0);
  };
  StasisDecision d;
  for (int i = 0; i < 40; ++i) {
    d = counted(100 + static_cast<std::uint64_t>(i));  // healthy: some count moved every time
    ASSERT_FALSE(d.early_fired);
  }
  d = counted(9);
  const double stopped = s.t;
  do d = counted(9);
  while (!d.early_fired && s.t < 100);
  EXPECT_TRUE(d.early_fired);
  EXPECT_NEAR(s.t - stopped, 5, 0.15);
  // A rank that could not be placed (known state, no path and no count) may be working: beside it
  // the rule keeps its caution, 4 x 4 x 5 s for ranks blocked at a place never left.
  Stream u;
  for (int i = 0; i < 40; ++i) {
    u.t += 0.1;
    Observation o{u.t, 0, 0, 4, 300 + static_cast<std::uint64_t>(i), true, 300 + static_cast<std::uint64_t>(i), 0, 3};
    o.counted = true;
    u.model.observe(o, 0);
  }
  const double blocked = u.t;
  do {
    u.t += 0.1;
    Observation o{u.t, 0, 0, 4, 77, true, 9, 0, 3};
    o.counted = true;
    d = u.model.observe(o, 0);
  } while (!d.early_fired && u.t < 400);
  EXPECT_TRUE(d.early_fired);
  EXPECT_NEAR(u.t - (blocked + 0.1), 80, 0.15);  // from the first observation at the place
}

// A job's end: ranks in MPI_Finalize (Observation::finished, set_signature.h) beside ranks that
// all wait in MPI. From the ranks' snapshots, through the set's signatures, to the model-free rule:
// rank 0 in a receive that rank 1 never sent while ranks 1..3 finish (the classic last-message
// hang) is found after the rule's plain minimum, with the progress library or without; a rank
// computing alone at one place beside the finished ones (rank 0 writing up its results) is never
// judged by the rule, as before. With the library, finished ranks are no ranks that "could not be
// placed" (which may be working), so they leave the rule its plain minimum.
TEST(Stasis, RanksInMpiFinalizeBesideRanksWaitingInMpiAreNoReasonToWait) {
  const auto standstill = [](bool library, RankSnapshot rank0, int finishing) {
    SetSignatures signatures;
    StasisModel model({}, kBeta);
    const auto with_count = [&](RankSnapshot r, std::uint64_t count) {
      if (library) r.mpi_completed = count;
      return r;
    };
    double t = 0;
    StasisDecision d;
    for (int i = 0; i < 30; ++i) {  // 3 s of a healthy loop: four ranks through two calls
      t += 0.1;
      const auto call =
          i % 2 == 0 ? RankSnapshot{RankState::InMpi, "MPI_Allreduce", 50} : RankSnapshot{RankState::OutMpi, {}, 51};
      model.observe(signatures.observe(t, 0, std::vector<RankSnapshot>(4, with_count(call, i))), 0);
    }
    std::vector<RankSnapshot> end(4, with_count({RankState::InMpi, "MPI_Finalize", 0}, 30));
    end[0] = with_count(rank0, 30);
    for (int i = 1; i < 4 - finishing; ++i) end[i] = with_count({RankState::InMpi, "MPI_Barrier", 60}, 30);
    const double stopped = t + 0.1;
    do {
      t += 0.1;
      d = model.observe(signatures.observe(t, 0, end), 0);
    } while (!d.early_fired && t < 600);
    return d.early_fired ? t - stopped : std::numeric_limits<double>::infinity();
  };
  const RankSnapshot waiting{RankState::InMpi, "MPI_Recv", 61}, computing{RankState::OutMpi, {}, 62};
  for (const bool library : {false, true}) {
    SCOPED_TRACE(library ? "with the progress library" : "without it");
    EXPECT_NEAR(standstill(library, waiting, 3), 5, 0.15);
    EXPECT_NEAR(standstill(library, waiting, 2), 5, 0.15);  // two finish, one waits in a barrier
    EXPECT_EQ(standstill(library, computing, 3), std::numeric_limits<double>::infinity());
  }
}

// The same endings from the job's first observation, before it has shown its ranks moving (the
// classic first test program: a receive nobody sends at the first MPI call, the others gone on to
// MPI_Finalize). Ranks in MPI_Finalize have left every loop, so the run is no loop around one MPI
// call site: it is judged at four times the rule's length, 20 s, as a rank still outside MPI is
// then. A rank computing beside them is the job's serial end (never judged), and ranks all in MPI
// with none finished may be such a loop (never judged before movement). With the library every
// place has its count, and the plain minimum applies from the start.
TEST(Stasis, BeforeTheJobHasMovedRanksBlockedBesideFinishedOnesAreJudgedAtFourTimesTheLength) {
  const auto standstill = [](bool library, RankSnapshot rank0, int finishing, StasisDecision& d) {
    SetSignatures signatures;
    StasisModel model({}, kBeta);
    std::vector<RankSnapshot> end(4, {RankState::InMpi, "MPI_Finalize", 0});
    end[0] = rank0;
    for (int i = 1; i < 4 - finishing; ++i) end[i] = {RankState::InMpi, "MPI_Barrier", 60};
    if (library) {
      for (RankSnapshot& r : end) r.mpi_completed = 1;
    }
    double t = 0.1;
    d = model.observe(signatures.observe(t, 0, end), 0);
    const double stopped = t;
    do {
      t += 0.1;
      d = model.observe(signatures.observe(t, 0, end), 0);
    } while (!d.early_fired && t < 600);
    return d.early_fired ? t - stopped : std::numeric_limits<double>::infinity();
  };
  const RankSnapshot waiting{RankState::InMpi, "MPI_Recv", 61}, computing{RankState::OutMpi, {}, 62};
  StasisDecision d;
  EXPECT_NEAR(standstill(false, waiting, 3, d), 4 * 5, 0.15);
  EXPECT_TRUE(d.early_before_movement);
  EXPECT_NEAR(d.early_needed, 4 * 5, 1e-9);
  EXPECT_NEAR(standstill(false, waiting, 2, d), 4 * 5, 0.15);  // two finish, one waits in a barrier
  EXPECT_TRUE(d.early_before_movement);
  EXPECT_EQ(standstill(false, computing, 3, d), std::numeric_limits<double>::infinity());  // a serial end
  EXPECT_EQ(standstill(false, waiting, 0, d), std::numeric_limits<double>::infinity());    // none finished
  EXPECT_FALSE(d.early_applies);
  EXPECT_NEAR(standstill(true, waiting, 3, d), 5, 0.15);
  EXPECT_FALSE(d.early_before_movement);
}

// hpcc after a rank fell asleep: the others step out of their polling loops now and then (one
// observation shows a second active rank), and the sleeper is where it was at the next one. Those
// steps do not restart the run: it is found 20 s after the rank fell asleep.
TEST(Stasis, AnotherRankSteppingOutForOneObservationDoesNotRestartTheRun) {
  Stream s;
  for (int i = 0; i < 40; ++i) s.feed_polling(kEveryoneWaiting);
  StasisDecision d = s.feed_polling(7, 1);
  const double stopped = s.t;
  int fed = 0;
  do {
    const bool step_out = ++fed % 13 == 0;
    d = step_out ? s.feed_polling(500 + static_cast<std::uint64_t>(fed), 2, 2) : s.feed_polling(7, 1);
    if (step_out) {
      EXPECT_FALSE(d.early_fired);
    }
  } while (!d.early_fired && s.t < 100);
  EXPECT_NEAR(s.t - stopped, 20, 0.15);  // 4 x 5 s beside busy-waiting ranks
  EXPECT_NEAR(d.early_onset, stopped, 1e-9);
}

// Steps out two and three observations long do not end it either (a real 4-rank ps_poller whose
// rank 1 spun from t = 2.2 s showed one of them every 10-20 s, and the run never lasted 20 s:
// tests/data/poller-spin-early.trace.jsonl).
TEST(Stasis, StepsOutOfUpToThreeObservationsDoNotEndTheRun) {
  for (const int steps : {2, 3}) {
    SCOPED_TRACE(std::to_string(steps) + " steps out in a row");
    Stream s;
    for (int i = 0; i < 40; ++i) s.feed_polling(kEveryoneWaiting);
    for (int i = 0; i < 30; ++i) s.feed_polling(7, 1);
    StasisDecision d;
    for (int i = 0; i < steps; ++i) {
      d = s.feed_polling(600 + static_cast<std::uint64_t>(i), 2, 2);
      EXPECT_FALSE(d.early_fired);
    }
    d = s.feed_polling(7, 1);
    EXPECT_EQ(d.early_streak, 30);
  }
}

// But the run's own rank moving, even for one observation, or four steps out in a row, end it.
TEST(Stasis, TheRunsOwnRankMovingOrFourStepsOutEndTheRun) {
  Stream s;
  for (int i = 0; i < 40; ++i) s.feed_polling(kEveryoneWaiting);
  for (int i = 0; i < 30; ++i) s.feed_polling(7, 1);
  s.feed_polling(8, 1);  // the same one active rank, elsewhere
  StasisDecision d = s.feed_polling(7, 1);
  EXPECT_EQ(d.early_streak, 0);  // back at 7: a new run begins with the next still observation
  d = s.feed_polling(7, 1);
  EXPECT_EQ(d.early_streak, 1);
  for (int i = 0; i < 30; ++i) s.feed_polling(7, 1);
  for (int i = 0; i < 4; ++i) s.feed_polling(500 + static_cast<std::uint64_t>(i), 2, 2);
  d = s.feed_polling(7, 1);
  EXPECT_EQ(d.early_streak, 0);
  // Everyone waiting, for one observation, ends it too: the run's own rank went into a wait.
  for (int i = 0; i < 30; ++i) s.feed_polling(7, 1);
  s.feed_polling(kEveryoneWaiting);
  d = s.feed_polling(7, 1);
  EXPECT_EQ(d.early_streak, 0);
}

// A hang cut into pieces by other ranks stepping out four times in a row: its own still runs make
// the job look habitually still, but the spinning rank never left its place for real, so the run is
// not judged as a habit (4 x longer) but as a spin beside busy-waiting ranks (20 s).
TEST(Stasis, AHangCutIntoPiecesIsNotAHabit) {
  Stream s;
  for (int i = 0; i < 40; ++i) s.feed_polling(kEveryoneWaiting);
  for (int piece = 0; piece < 3; ++piece) {
    for (int i = 0; i < 40; ++i) s.feed_polling(7, 1);
    for (int i = 0; i < 4; ++i) s.feed_polling(600 + static_cast<std::uint64_t>(10 * piece + i), 2, 2);
  }
  StasisDecision d;
  for (int i = 0; i < 20; ++i) d = s.feed_polling(7, 1);
  EXPECT_GT(d.early_streak, 0);
  EXPECT_NEAR(d.early_needed, 20, 1e-9);
}

// ... but only while few of them are outside MPI: busy-waiting ranks do not make a set of
// computing ranks look like a hang.
TEST(Stasis, ActiveRanksMostlyOutsideMpiAreNotStill) {
  Stream s;
  for (int i = 0; i < 40; ++i) s.feed_polling(kEveryoneWaiting);
  StasisDecision d;
  for (int i = 0; i < 2000; ++i) d = s.feed_polling(7, 2);
  EXPECT_EQ(d.early_streak, 0);
}

TEST(Stasis, AfterASlowdownOnlyTheRunAfterTheMovementCounts) {
  Stream s;
  for (int i = 0; i < 100; ++i) s.feed(1 + i % 3);
  for (int i = 0; i < 20; ++i) s.feed(7, 0);
  const double moved = s.t - 0.55;  // verification saw a rank move here
  s.model.resume_after_slowdown(moved);
  const auto d = s.feed(7, 0);
  EXPECT_EQ(d.streak, 7);  // the 6 observations after the movement, and this one
  EXPECT_NEAR(d.streak_onset, moved, 1e-9);
}

// The whole model: a deadlock 3 s into a job is found before any S model exists.
TEST(Stasis, AHangInTheFirstSecondsIsFoundWithoutAModel) {
  HangModel model{ModelConfig{}};
  double t = 0;
  std::mt19937_64 rng(5);
  for (int i = 0; i < 30; ++i) {
    t += 0.1;
    const int n_out = static_cast<int>(rng() % 3);
    const std::uint64_t path = 1 + rng() % 5;
    model.observe({t, 0, n_out, 4, path, false, path, n_out});
  }
  Decision d;
  const double onset = t;
  do {
    t += 0.1;
    d = model.observe({t, 0, 0, 4, 99, false, 99, 0});
  } while (d.verdict != Verdict::Hang && t < 60);
  EXPECT_EQ(d.verdict, Verdict::Hang);
  EXPECT_EQ(d.evidence, Evidence::EarlyStasis);
  EXPECT_FALSE(model.ready());
  EXPECT_LT(t - onset, 6);
}

}  // namespace
}  // namespace parastack::stats
