#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "parastack/stats/random.h"
#include "parastack/stats/watchdog.h"

namespace parastack::stats {
namespace {

// A healthy rank at one 0.1-s tick: computing or waiting in MPI at random, a fresh draw each tick,
// at call sites that move.
RankSnapshot computes_or_waits(int rank, std::uint64_t tick) {
  if (to_unit(mix64(mix64(static_cast<std::uint64_t>(rank)) ^ tick)) < 0.5)
    return {RankState::OutMpi, {}, 0x100 + tick % 3};
  return {RankState::InMpi, "MPI_Allreduce", 0x200 + tick % 7};
}

// Four ranks that compute or wait in MPI at random, a fresh draw every 0.1 s, until `before`.
// Then every rank waits in MPI, still moving between call sites (S = 0, no stasis), until
// `onset`, when all of them block in one MPI_Recv for good: a deadlock whose S streak began just
// before it, with a movement in between.
class LookAlikeThenDeadlock : public JobProbe {
 public:
  LookAlikeThenDeadlock(double before, double onset) : before_(before), onset_(onset) {}
  double now() override { return t_; }
  bool wait_until(double t) override {
    t_ = std::max(t_, t);
    return t_ < onset_ + 600;
  }
  std::vector<RankSnapshot> snapshot(const std::vector<int>& ranks) override {
    std::vector<RankSnapshot> states;
    const auto tick = static_cast<std::uint64_t>(t_ / 0.1);
    for (int rank : ranks) {
      if (t_ >= onset_) {
        states.push_back({RankState::InMpi, "MPI_Recv", 0x600});
      } else if (t_ >= before_) {
        states.push_back(tick % 2 ? RankSnapshot{RankState::InMpi, "MPI_Allreduce", 0x200 + tick % 7}
                                  : RankSnapshot{RankState::InMpi, "MPI_Waitall", 0x300 + tick % 5});
      } else {
        states.push_back(computes_or_waits(rank, tick));
      }
    }
    return states;
  }
  std::vector<std::optional<WorkCounters>> work_counters() override { return {}; }

 private:
  double before_, onset_, t_ = 0;
};

// The S streak that fired began before the deadlock, so verification sees the job move at the
// onset and calls it a slowdown. The part after that movement is kept and, because verification's
// own snapshots are observations too, it has grown meanwhile: the model fires again soon, and the
// stillness already watched since that evidence sufficed counts towards the next verification,
// which then waits less than half the evidence's length again (before, it waited all of it).
TEST(Watchdog, AStreakCutAtAMovementJustBeforeTheHangIsConfirmedWithoutASecondLongWait) {
  WatchdogConfig config;
  config.model.stasis.enabled = false;  // S alone: the streak that begins before the onset fires
  const double onset = 600;
  LookAlikeThenDeadlock probe(onset - 0.15, onset);
  std::vector<Alarm> alarms;
  WatchdogHooks hooks;
  hooks.on_alarm = [&](const Alarm& alarm) { alarms.push_back(alarm); };
  Watchdog watchdog(config, 4, 11);
  const auto finding = watchdog.watch(probe, hooks);

  ASSERT_TRUE(finding.has_value()) << "the deadlock was never confirmed";
  ASSERT_GE(alarms.size(), 2u);
  const Alarm& first = alarms[alarms.size() - 2];
  EXPECT_TRUE(first.slowdown) << "the scenario needs the first alarm judged a slowdown: " << first.evidence;
  EXPECT_LT(first.decision.onset(), onset) << "its streak began before the deadlock";
  EXPECT_GE(first.decision.observation.t, onset);
  for (std::size_t a = 0; a + 2 < alarms.size(); ++a) {
    EXPECT_TRUE(alarms[a].slowdown) << "an alarm before the onset confirmed";
  }

  const Decision& confirmed = finding->decision;
  EXPECT_GE(confirmed.onset(), onset) << "the confirmed streak starts at the movement, not before";
  const double evidence = confirmed.observation.t - confirmed.onset();
  const double verification = finding->confirmed_at - confirmed.observation.t;
  EXPECT_LT(verification, config.verification_fraction * evidence)
      << "the second verification waited half the evidence again (" << verification << " s of " << evidence
      << " s): the stillness watched during the first one was not counted";
}

// Four ranks of a healthy polling code: each is found in MPI_Test in its polling loop, or now and
// then (7 %) in the work it does between two polls. Each rank polls in one loop only, so its
// stack never shows a wait ending (a rank of ps_poller hops between the loops of its step, which
// verification counts as movement; here only S can show the job alive). From `burst` on the node
// is loaded: the ranks, which yield the CPU in MPI_Test, wait their turn inside it, and every
// sample finds all four there, until shortly after the model's alarm (the CI's false hang: 73
// observations in a row at S = 0 against a healthy chance of 0.75 each, then S = 1/4 again).
class LoadedPollers : public JobProbe {
 public:
  explicit LoadedPollers(double burst) : burst_(burst) {}
  void alarm_fired() {
    if (!burst_end_) burst_end_ = t_ + 0.3;
  }
  bool burst_ended() const { return burst_end_ && t_ >= *burst_end_; }
  double now() override { return t_; }
  bool wait_until(double t) override {
    t_ = std::max(t_, t);
    return t_ < 600;
  }
  std::vector<RankSnapshot> snapshot(const std::vector<int>& ranks) override {
    std::vector<RankSnapshot> states;
    const bool loaded = t_ >= burst_ && !burst_ended();
    const auto look = ++looks_;
    for (int rank : ranks) {
      const std::uint64_t draw = mix64(mix64(static_cast<std::uint64_t>(rank) + 1) ^ look);
      const auto loop = static_cast<std::uint64_t>(rank);
      if (!loaded && to_unit(mix64(draw)) < 0.07) {
        states.push_back({RankState::OutMpi, {}, 0x510 + loop});
      } else {
        states.push_back({RankState::InMpi, "MPI_Test", 0x500 + loop});
      }
    }
    return states;
  }
  std::vector<std::optional<WorkCounters>> work_counters() override { return {}; }

 private:
  double burst_, t_ = 0;
  std::optional<double> burst_end_;
  std::uint64_t looks_ = 0;
};

// A low fraction that rises again while verification watches did not persist: a slowdown, not a
// hang, even though the stacks of busy-waiting ranks cannot show the job moving.
TEST(Watchdog, ALowFractionThatRisesAgainDuringVerificationIsNoHang) {
  LoadedPollers probe(200);
  std::vector<Alarm> alarms;
  WatchdogHooks hooks;
  hooks.on_decision = [&](const Decision& d) {
    if (d.verdict == Verdict::Hang) probe.alarm_fired();
  };
  hooks.on_alarm = [&](const Alarm& alarm) { alarms.push_back(alarm); };
  Watchdog watchdog(WatchdogConfig{}, 4, 5);
  const auto finding = watchdog.watch(probe, hooks);

  ASSERT_FALSE(alarms.empty()) << "the loaded stretch never fired the model: the scenario tests nothing";
  EXPECT_FALSE(finding.has_value()) << "a healthy polling job was confirmed hung at t=" << finding->confirmed_at
                                    << " (evidence " << to_string(finding->decision.evidence) << ")";
  const Alarm& first = alarms.front();
  EXPECT_EQ(first.decision.evidence, Evidence::Fraction);
  EXPECT_GT(first.decision.onset(), 195.0) << "an alarm long before the load";
  EXPECT_TRUE(first.slowdown);
  EXPECT_NE(first.evidence.find("did not persist"), std::string::npos) << first.evidence;
}

// The same polling job on a node loaded from `burst` on for good: its ranks never run again (their
// run-queue counters say so), and every sample finds all four waiting in MPI_Test for ever. The
// low fraction persists through any verification; only the counters tell the node from the job.
class StarvedPollers : public LoadedPollers {
 public:
  explicit StarvedPollers(double burst) : LoadedPollers(burst), burst_(burst) {}
  std::vector<std::optional<WorkCounters>> work_counters() override {
    // 4 ranks on 2 cores: half the time on a CPU, half waiting; none at all once the load came.
    const double t = now(), before = std::min(t, burst_), during = std::max(0.0, t - burst_);
    const auto ns = [](double seconds) { return static_cast<std::uint64_t>(seconds * 1e9); };
    std::vector<std::optional<WorkCounters>> counters;
    for (int r = 0; r < 4; ++r) {
      counters.push_back(WorkCounters{.io_bytes = 0,
                                      .resident_bytes = 50 << 20,
                                      .cpu_ns = ns(before / 2),
                                      .run_delay_ns = ns(before / 2 + during),
                                      .age_ns = ns(t + 1)});
    }
    return counters;
  }

 private:
  double burst_;
};

TEST(Watchdog, AJobItsNodeDoesNotLetRunIsNotJudged) {
  StarvedPollers probe(200);
  std::vector<Alarm> alarms;
  WatchdogHooks hooks;
  hooks.on_alarm = [&](const Alarm& alarm) { alarms.push_back(alarm); };
  Watchdog watchdog(WatchdogConfig{}, 4, 5);
  const auto finding = watchdog.watch(probe, hooks);

  ASSERT_FALSE(alarms.empty()) << "the starved stretch never fired the model: the scenario tests nothing";
  EXPECT_FALSE(finding.has_value()) << "a job its node starved was confirmed hung at t=" << finding->confirmed_at;
  for (const Alarm& alarm : alarms) {
    EXPECT_TRUE(alarm.slowdown && alarm.held) << alarm.evidence;
    EXPECT_NE(alarm.evidence.find("short of CPU"), std::string::npos) << alarm.evidence;
  }
}

// Four ranks of a healthy polling code like ps_poller: each polls at the five waits of its step
// (the halos', its sends', the global sum's), often caught in its work between polls. A sample
// finds a polling rank where it yields, which on a busy node is the one wait that dominates,
// iteration after iteration: for the first 3 s of every 20 s here, every sample finds every rank at
// the same wait, a different one each time, though the job runs on (ps_poller beside another
// polling job: 13 observations in a row, 1.4 s, while it made 2,500 iterations a second). The rest
// of the time the samples show the ranks hop between the waits, and S is rarely 0.
class PhaseLockedPollers : public JobProbe {
 public:
  static constexpr double kPeriod = 20, kLocked = 3;
  static constexpr std::uint64_t kWaits = 5;
  double now() override { return t_; }
  bool wait_until(double t) override {
    t_ = std::max(t_, t);
    return t_ < 300;
  }
  std::vector<RankSnapshot> snapshot(const std::vector<int>& ranks) override {
    std::vector<RankSnapshot> states;
    const bool locked = std::fmod(t_, kPeriod) < kLocked;
    const auto lock = static_cast<std::uint64_t>(t_ / kPeriod) % kWaits;  // the wait this stretch locks to
    const auto look = ++looks_;
    for (int rank : ranks) {
      const auto r = static_cast<std::uint64_t>(rank);
      const std::uint64_t draw = mix64(mix64(r + 1) ^ look);
      const auto wait = locked ? lock : static_cast<std::uint64_t>(to_unit(draw) * kWaits);
      if (!locked && to_unit(mix64(draw)) < 0.4) {
        states.push_back({RankState::OutMpi, {}, 0x7c0 + r});  // its work between two polls
      } else {
        states.push_back({RankState::InMpi, "MPI_Test", 0x700 + 0x1000 * wait + r});
      }
    }
    return states;
  }
  std::vector<std::optional<WorkCounters>> work_counters() override { return {}; }

 private:
  double t_ = 0;
  std::uint64_t looks_ = 0;
};

// Under a test made loose on purpose (alpha 0.5 for each test, as in the MPI test
// Run.AHealthyPollingJobUnderALooseTestIsNeverConfirmedHung) every locked stretch after the first
// raises an alarm within half a second, and verification must see the job move: it watches until
// the run has outlasted 1.5 times the longest stretch a busy-waiting set stood still and then moved
// (the first, at the start). Before, only freezes that verification had seen counted: the first
// alarm's window closed 0.8 s into a 3-s stretch, the checks of all ranks ended a second later,
// still in it, and the job was confirmed hung (the CI's false hang of 2026-12-06, in short).
TEST(Watchdog, APollingJobWhoseSamplesLockToOneWaitForStretchesIsNotJudgedHung) {
  WatchdogConfig config;
  config.model.alarm.budget = AlarmBudget::PerTest;
  config.model.alarm.alpha = 0.5;
  PhaseLockedPollers probe;
  std::vector<Alarm> alarms;
  WatchdogHooks hooks;
  hooks.on_alarm = [&](const Alarm& alarm) { alarms.push_back(alarm); };
  Watchdog watchdog(config, 4, 7);
  const auto finding = watchdog.watch(probe, hooks);

  ASSERT_FALSE(finding.has_value()) << "a healthy polling job was confirmed hung at t=" << finding->confirmed_at
                                    << " (evidence " << to_string(finding->decision.evidence) << ", onset "
                                    << finding->decision.onset() << ") after " << alarms.size() << " alarm(s)";
  EXPECT_GE(alarms.size(), 5u) << "the locked stretches hardly fired the model: the scenario tests little";
  for (const Alarm& alarm : alarms) EXPECT_TRUE(alarm.slowdown) << alarm.evidence;
}

// A healthy 4-rank job like ps_solver's: rank 2 computes twice as long as the others, so it is
// mostly found in its one compute loop, the others waiting for it in MPI. From `from` to `to` the
// node stops running it (a virtual machine whose host took its CPUs away, a rank kept off the
// CPU): the ranks stay where they were, and the monitor gets the CPU only for 0.3 s every 20 s, its
// sleep overrunning to the next such moment. The CI's false hang: the model-free rule counted 50 s
// of stillness from samples 20 s apart that found the job where it stood, and confirmed it.
class StalledNode : public JobProbe {
 public:
  StalledNode(double from, double to) : from_(from), to_(to) {}
  double now() override { return t_; }
  bool wait_until(double t) override {
    t_ = std::max(t_, t);
    if (stalled(t_)) {
      const double into = std::fmod(t_ - from_, 20.0);
      if (into >= 0.3) t_ += 20.0 - into;
    }
    return t_ < 400;
  }
  std::vector<RankSnapshot> snapshot(const std::vector<int>& ranks) override {
    std::vector<RankSnapshot> states;
    const auto tick = static_cast<std::uint64_t>(t_ / 0.1);
    for (int rank : ranks) {
      const std::uint64_t draw = mix64(mix64(static_cast<std::uint64_t>(rank) + 1) ^ tick);
      const double u = to_unit(draw);
      if (stalled(t_)) {
        states.push_back(rank == 2 ? RankSnapshot{RankState::OutMpi, {}, 0x100}
                                   : RankSnapshot{RankState::InMpi, "MPI_Sendrecv", 0x301});
      } else if (u < (rank == 2 ? 0.6 : 0.3)) {
        states.push_back({RankState::OutMpi, {}, 0x100 + static_cast<std::uint64_t>(rank)});
      } else if (u < 0.8) {
        states.push_back({RankState::InMpi, "MPI_Sendrecv", 0x300 + draw % 3});
      } else {
        states.push_back({RankState::InMpi, "MPI_Allreduce", 0x310});
      }
    }
    return states;
  }
  std::vector<std::optional<WorkCounters>> work_counters() override { return {}; }
  bool stalled(double t) const { return t >= from_ && t < to_; }

 private:
  double from_, to_, t_ = 0;
};

TEST(Watchdog, AJobTheNodeStoppedRunningIsNotJudgedOnSamplesThatCameLate) {
  auto watch = [](double late_after, int& unwatched, std::vector<Alarm>& alarms) {
    StalledNode probe(10, 130);
    WatchdogConfig config;
    config.model.late_after = late_after;
    WatchdogHooks hooks;
    hooks.on_decision = [&](const Decision& d) { unwatched += d.verdict == Verdict::Unwatched ? 1 : 0; };
    hooks.on_alarm = [&](const Alarm& alarm) { alarms.push_back(alarm); };
    return Watchdog(config, 4, 7).watch(probe, hooks);
  };
  int unwatched = 0;
  std::vector<Alarm> alarms;
  const auto finding = watch(WatchdogConfig{}.model.late_after, unwatched, alarms);
  EXPECT_FALSE(finding.has_value()) << "a job its node stopped running was confirmed hung at t="
                                    << finding->confirmed_at << " (evidence " << to_string(finding->decision.evidence)
                                    << ")";
  EXPECT_GE(unwatched, 6) << "each of the stall's windows began with a late observation";

  // The same job judged with lateness ignored: the scenario is the CI's false hang.
  int ignored = 0;
  std::vector<Alarm> ignored_alarms;
  const auto confirmed = watch(1e9, ignored, ignored_alarms);
  ASSERT_TRUE(confirmed.has_value()) << "without the rule the stall is no hang either: the test tests nothing";
  EXPECT_EQ(ignored, 0);
  EXPECT_LT(confirmed->confirmed_at, 130);
}

// A job of 30 ranks (two sampled sets of 10) that computes or waits in MPI at random, a fresh draw
// every 0.1 s, until `end`; then every rank but `last` waits in MPI_Finalize for good, and `last`
// either works on alone outside MPI (the job's serial end, healthy: it would finish by itself) or
// waits in MPI_Recv for a message a finished rank never sent (the last-message hang). The end
// lasts 600 s, or, with `checks_before_exit`, until that many checks of all ranks have been taken.
class JobEnd : public JobProbe {
 public:
  JobEnd(double end, int last, bool working, int checks_before_exit = -1)
      : end_(end), last_(last), working_(working), checks_left_(checks_before_exit) {}
  double now() override { return t_; }
  bool wait_until(double t) override {
    t_ = std::max(t_, t);
    return t_ < end_ + 600 && checks_left_ != 0;
  }
  std::vector<RankState> all_states(int rank_count) override {
    if (checks_left_ > 0) --checks_left_;
    return JobProbe::all_states(rank_count);
  }
  std::vector<RankSnapshot> snapshot(const std::vector<int>& ranks) override {
    std::vector<RankSnapshot> states;
    const auto tick = static_cast<std::uint64_t>(t_ / 0.1);
    for (int rank : ranks) {
      if (t_ >= end_ && rank == last_) {
        states.push_back(working_ ? RankSnapshot{RankState::OutMpi, {}, 0x700}
                                  : RankSnapshot{RankState::InMpi, "MPI_Recv", 0x710});
      } else if (t_ >= end_) {
        states.push_back({RankState::InMpi, "MPI_Finalize", 0});
      } else {
        states.push_back(computes_or_waits(rank, tick));
      }
    }
    return states;
  }
  std::vector<std::optional<WorkCounters>> work_counters() override { return {}; }

 private:
  double end_;
  int last_;
  bool working_;
  int checks_left_;
  double t_ = 0;
};

// The serial end of a job too large to sample whole: whether or not the working rank is in a
// sampled set, the job is never confirmed hung. A set without it sees only finished ranks (S = 0)
// and raises an alarm; the checks of all ranks find the rank at work beside them, and from then on
// the job's end is not judged (a set with it is in the serial end by itself, set_signature.h). A rank blocked in MPI
// beside the finished ones instead is a hang, of communication, in both cases.
TEST(Watchdog, AJobsSerialEndIsNotJudgedAndALastMessageNeverSentIsAHang) {
  constexpr double kEnd = 300;
  const Watchdog layout(WatchdogConfig{}, 30, 5);
  const auto& sets = layout.sets();
  const auto sampled = [&](int rank) {
    return std::any_of(sets.begin(), sets.end(),
                       [&](const std::vector<int>& s) { return std::find(s.begin(), s.end(), rank) != s.end(); });
  };
  int inside = 0, outside = 0;
  while (!sampled(inside)) ++inside;
  while (sampled(outside)) ++outside;
  for (const int last : {inside, outside}) {
    SCOPED_TRACE(sampled(last) ? "the last rank is sampled" : "the last rank is not sampled");
    {
      JobEnd probe(kEnd, last, true);
      std::vector<Alarm> alarms;
      int unwatched_after = 0, judged_after = 0;
      WatchdogHooks hooks;
      hooks.on_alarm = [&](const Alarm& alarm) { alarms.push_back(alarm); };
      hooks.on_decision = [&](const Decision& d) {
        if (d.observation.t < kEnd + 60) return;  // the end's first minute: recognised by then
        (d.verdict == Verdict::Unwatched ? unwatched_after : judged_after) += 1;
      };
      Watchdog watchdog(WatchdogConfig{}, 30, 5);
      const auto finding = watchdog.watch(probe, hooks);
      EXPECT_FALSE(finding.has_value()) << "a healthy serial end confirmed as a hang of rank(s) "
                                        << (finding && !finding->faulty_ranks.empty() ? finding->faulty_ranks[0] : -1);
      EXPECT_GT(unwatched_after, 0);
      EXPECT_EQ(judged_after, 0) << "the serial end was judged after its first minute";
      // The set without the working rank: its alarm goes to the checks of all ranks (reported
      // first, not a slowdown), which withdraw it.
      ASSERT_FALSE(alarms.empty()) << "the set of finished ranks never raised an alarm: the test tests nothing";
      EXPECT_TRUE(alarms.back().serial_end && alarms.back().slowdown && alarms.back().withdrawn);
      EXPECT_NE(alarms.back().evidence.find("MPI_Finalize"), std::string::npos) << alarms.back().evidence;
      EXPECT_NE(alarms.back().evidence.find("rank(s) " + std::to_string(last) + " work"), std::string::npos)
          << alarms.back().evidence;
    }
    JobEnd probe(kEnd, last, false);
    const auto finding = Watchdog(WatchdogConfig{}, 30, 5).watch(probe);
    ASSERT_TRUE(finding.has_value()) << "the last message never sent was not found";
    EXPECT_EQ(finding->type(), HangType::Communication);
    EXPECT_GE(finding->decision.onset(), kEnd - 1);
  }
}

// A serial end shorter than the checks of all ranks: the job finishes by itself after two of them.
// The checks taken found the rank at work beside finished ones, so it is the serial end, as it
// would have been had they all been taken, and no hang is reported of a job that completed (the
// simulator's job-ends shape, seed 69: "a hang of undetermined type" 1.5 s before the job ended).
TEST(Watchdog, ASerialEndThatFinishesUnderTheChecksIsNoHang) {
  constexpr double kEnd = 300;
  const Watchdog layout(WatchdogConfig{}, 30, 5);
  const auto& sets = layout.sets();
  int outside = 0;
  while (std::any_of(sets.begin(), sets.end(),
                     [&](const std::vector<int>& s) { return std::find(s.begin(), s.end(), outside) != s.end(); })) {
    ++outside;
  }
  JobEnd probe(kEnd, outside, true, 2);
  std::vector<Alarm> alarms;
  WatchdogHooks hooks;
  hooks.on_alarm = [&](const Alarm& alarm) { alarms.push_back(alarm); };
  const auto finding = Watchdog(WatchdogConfig{}, 30, 5).watch(probe, hooks);
  EXPECT_FALSE(finding.has_value()) << "a job that completed was reported hung ("
                                    << (finding ? to_string(finding->type()) : "") << ")";
  ASSERT_FALSE(alarms.empty()) << "the set of finished ranks never raised an alarm: the test tests nothing";
  EXPECT_TRUE(alarms.back().serial_end && alarms.back().withdrawn) << alarms.back().evidence;
  EXPECT_NE(alarms.back().evidence.find("rank(s) " + std::to_string(outside) + " work"), std::string::npos)
      << alarms.back().evidence;
}

// Four ranks that compute or wait in MPI at random until `phase`. From then on every rank's comm
// thread polls in MPI_Iprobe, each at its own place (an MPI_THREAD_MULTIPLE code's communication
// thread: the rank is IN_MPI for S, so S = 0), beside a main thread that works: with `all_work`
// every rank's, in one kernel (a long phase of a healthy code); otherwise only rank `worker`'s,
// going round two helpers for ever (its place alternates), while the other main threads block in
// the step's MPI_Allreduce (a spin that hangs the job).
class CommThreadsBesideWork : public JobProbe {
 public:
  CommThreadsBesideWork(double phase, bool all_work, int worker)
      : phase_(phase), all_work_(all_work), worker_(worker) {}
  double now() override { return t_; }
  bool wait_until(double t) override {
    t_ = std::max(t_, t);
    return t_ < phase_ + 600;
  }
  std::vector<RankSnapshot> snapshot(const std::vector<int>& ranks) override {
    std::vector<RankSnapshot> states;
    const auto tick = static_cast<std::uint64_t>(t_ / 0.1);
    for (int rank : ranks) {
      const auto r = static_cast<std::uint64_t>(rank);
      if (t_ < phase_) {
        states.push_back(computes_or_waits(rank, tick));
      } else if (all_work_ || rank == worker_) {
        RankSnapshot s{RankState::InMpi, "MPI_Iprobe", all_work_ ? 0x900 + r : 0x980 + tick % 2};
        s.at_work_outside = true;
        s.mpi_thread_path = 0x800 + r;
        states.push_back(std::move(s));
      } else {
        states.push_back({RankState::InMpi, "MPI_Allreduce", 0x600});
      }
    }
    return states;
  }
  std::vector<std::optional<WorkCounters>> work_counters() override { return {}; }

 private:
  double phase_;
  bool all_work_;
  int worker_;
  double t_ = 0;
};

// A long phase in which every rank works beside its comm thread's poll: S = 0 and nothing moves,
// so the model alarms; verification sees no step, and every rank is OUT_MPI in every check of all
// ranks. Nobody waits for anybody: the job computes, and it is not killed (before, every rank was
// named faulty).
TEST(Watchdog, EveryRankWorkingBesideItsCommThreadInEveryCheckIsNoHang) {
  CommThreadsBesideWork probe(120, true, -1);
  std::vector<Alarm> alarms;
  WatchdogHooks hooks;
  hooks.on_alarm = [&](const Alarm& alarm) { alarms.push_back(alarm); };
  const auto finding = Watchdog(WatchdogConfig{}, 4, 5).watch(probe, hooks);
  EXPECT_FALSE(finding.has_value()) << "a computing job confirmed hung, " << finding->faulty_ranks.size()
                                    << " rank(s) named faulty";
  ASSERT_FALSE(alarms.empty()) << "the phase raised no alarm: the test tests nothing";
  EXPECT_TRUE(alarms.back().slowdown && alarms.back().withdrawn) << alarms.back().evidence;
  EXPECT_NE(alarms.back().evidence.find("every rank works outside MPI"), std::string::npos) << alarms.back().evidence;
}

// One rank's main thread going round two helpers for ever beside its comm thread's poll, the other
// ranks blocked: its place (both threads') alternates, and verification read that as the comm
// thread's wait ending at every other snapshot, so the hang was never confirmed. Its comm thread's
// own place stands: found, with the rank named.
TEST(Watchdog, AMainThreadSpinningThroughHelpersBesideItsCommThreadIsFound) {
  CommThreadsBesideWork probe(120, false, 2);
  const auto finding = Watchdog(WatchdogConfig{}, 4, 5).watch(probe);
  ASSERT_TRUE(finding.has_value()) << "the spin was never confirmed";
  EXPECT_EQ(finding->type(), HangType::Computation);
  EXPECT_EQ(finding->faulty_ranks, std::vector<int>{2});
  EXPECT_GE(finding->decision.onset(), 120 - 1);
}

}  // namespace
}  // namespace parastack::stats
