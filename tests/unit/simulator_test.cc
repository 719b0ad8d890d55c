#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <limits>

#include "parastack/sim/campaign.h"
#include "parastack/sim/workload.h"
#include "parastack/stats/watchdog.h"

namespace parastack::sim {
namespace {

WorkloadShape shape_named(const std::string& name) {
  for (const auto& s : standard_shapes()) {
    if (s.name == name) return s;
  }
  throw std::runtime_error("no shape " + name);
}

double out_fraction(const SyntheticJob& job, double from, double to, int samples = 20000) {
  int out = 0;
  for (int i = 0; i < samples; ++i) {
    const double t = from + (to - from) * (i + 0.5) / samples;
    out += job.is_out(i % job.shape().ranks, t) ? 1 : 0;
  }
  return static_cast<double>(out) / samples;
}

TEST(Simulator, HealthyJobSpendsItsComputeFractionOutsideMpi) {
  const auto shape = shape_named("solver-50ms");
  const SyntheticJob job(shape, 7, 3600, {});
  // Compute fraction 0.6 of the cycle minus the start offset (mean 5% of the cycle).
  EXPECT_NEAR(out_fraction(job, 10, 3500), 0.6, 0.05);
}

TEST(Simulator, SnapshotAgreesWithIsOut) {
  const auto shape = shape_named("busy-wait");
  const SyntheticJob job(shape, 3, 3600, {});
  for (int i = 0; i < 5000; ++i) {
    const double t = 1 + i * 0.0137;
    const int rank = i % shape.ranks;
    EXPECT_EQ(job.snapshot(rank, t).state == stats::RankState::OutMpi, job.is_out(rank, t));
  }
}

TEST(Simulator, ComputationHangFreezesFaultyRanksOutsideAndOthersInside) {
  const auto shape = shape_named("solver-50ms");
  Fault fault{FaultKind::Computation, 100.0, {17}};
  const SyntheticJob job(shape, 11, 3600, fault);
  for (double t : {101.0, 150.0, 900.0}) {
    EXPECT_EQ(job.snapshot(17, t).state, stats::RankState::OutMpi);
    for (int r : {0, 16, 18, 2000, 4095}) {
      const auto s = job.snapshot(r, t);
      EXPECT_EQ(s.state, stats::RankState::InMpi) << "rank " << r << " t " << t;
      EXPECT_EQ(s.mpi_function, r == 16 || r == 18 ? "MPI_Waitall" : "MPI_Allreduce");
    }
  }
}

TEST(Simulator, DeadlockLeavesEveryRankInsideMpi) {
  const auto shape = shape_named("imbalanced");
  const SyntheticJob job(shape, 5, 3600, Fault{FaultKind::Deadlock, 200.0, {}});
  EXPECT_EQ(out_fraction(job, 202, 3000), 0.0);  // 2 s > one 0.5 s cycle after the onset
  EXPECT_GT(out_fraction(job, 10, 190), 0.3);
}

TEST(Simulator, BusyWaitHangKeepsPollingMpiTest) {
  const auto shape = shape_named("busy-wait");
  const SyntheticJob job(shape, 9, 3600, Fault{FaultKind::Deadlock, 50.0, {}});
  int in_test = 0, out = 0;
  for (int i = 0; i < 2000; ++i) {
    const auto s = job.snapshot(i % shape.ranks, 60 + i * 0.01);
    if (s.state == stats::RankState::OutMpi) ++out;
    if (s.mpi_function == "MPI_Test") ++in_test;
  }
  EXPECT_EQ(in_test + out, 2000);
  EXPECT_NEAR(out / 2000.0, shape.poll_out_fraction, 0.02);
}

TEST(Simulator, StragglerSlowdownLowersTheOutFraction) {
  auto shape = shape_named("noisy");
  shape.noise_per_hour = 0;
  shape.slowdowns_per_hour = 40;
  shape.slowdown_min_factor = shape.slowdown_max_factor = 10;
  const SyntheticJob slowed(shape, 21, 3600, {});
  shape.slowdowns_per_hour = 0;
  const SyntheticJob steady(shape, 21, 3600, {});
  ASSERT_GT(slowed.slowdown_count(), 10u);
  EXPECT_LT(out_fraction(slowed, 0, 3600, 50000), out_fraction(steady, 0, 3600, 50000) - 0.1);
}

TEST(Simulator, CheckpointHoldsEveryRankInCollectiveIo) {
  auto shape = shape_named("checkpoint");
  shape.checkpoints_per_hour = 60;
  const SyntheticJob job(shape, 4, 3600, {});
  // Scan for stretches where every sampled rank is in MPI_File_write_all: they must exist, and
  // outside them the job computes as usual.
  int in_io = 0, out = 0;
  for (int i = 0; i < 36000; ++i) {
    const auto s = job.snapshot(i % shape.ranks, i * 0.1);
    in_io += s.mpi_function == "MPI_File_write_all" ? 1 : 0;
    out += s.state == stats::RankState::OutMpi ? 1 : 0;
  }
  EXPECT_GT(in_io, 36000 / 10);
  EXPECT_GT(out, 36000 / 4);
}

TEST(Simulator, HealthyJobRaisesNoAlarmAndHangIsFoundWithItsFaultyRank) {
  CampaignConfig config;
  const auto shape = shape_named("solver-50ms");
  const auto healthy = run_job(shape, 0, config, 1, 4 * 3600, {});
  EXPECT_FALSE(healthy.false_alarm);
  EXPECT_TRUE(healthy.ready_at.has_value());
  const auto hung = run_job(shape, 0, config, 2, 3600 + 1200, Fault{FaultKind::Computation, 1200, {321}});
  ASSERT_TRUE(hung.detected);
  EXPECT_TRUE(hung.hang_after_ready);
  EXPECT_GT(hung.delay, 0);
  EXPECT_TRUE(hung.type_correct);
  EXPECT_TRUE(hung.faulty_found);
  EXPECT_DOUBLE_EQ(hung.faulty_precision, 1.0);
}

// A hang's delay splits into when the evidence that fired began, the evidence, and verification with
// the checks. In a 10-s step a rank that freezes at the step's start is invisible until the others
// finish their own 8.1-8.9 s of work and block: most of slow-10s's delay is that wait, before any
// evidence can begin (docs/statistics.md, Known limits, "Long cycles").
TEST(Simulator, WhereAHangsDelayGoesAddsUpToItAndSaysWhichTestFired) {
  CampaignConfig config;
  // Every rank computes at 1 s into the step (a cycle starts with at most 1 s in the last call).
  const auto slow =
      run_job(shape_named("slow-10s"), 0, config, 11, 1801 + 3600, Fault{FaultKind::Computation, 1801, {7}});
  const auto fast =
      run_job(shape_named("stencil-1ms"), 0, config, 12, 1800 + 3600, Fault{FaultKind::Deadlock, 1800, {}});
  for (const auto* hung : {&slow, &fast}) {
    ASSERT_TRUE(hung->detected);
    EXPECT_NE(hung->evidence, stats::Evidence::None);
    EXPECT_GT(hung->evidence_seconds, 0);
    EXPECT_GT(hung->checks_seconds, 0);
    EXPECT_NEAR(hung->evidence_began + hung->evidence_seconds + hung->checks_seconds, hung->delay, 1e-9);
  }
  EXPECT_GT(slow.evidence_began, 7.0);  // the earliest any other rank finishes its step
  EXPECT_LT(fast.evidence_began, 0.5);  // 1 ms steps: everyone blocks at once

  const auto summaries = run_campaign({shape_named("stencil-1ms")}, [] {
    CampaignConfig c;
    c.healthy_hours_per_shape = 0;
    c.hangs_per_shape = 3;
    return c;
  }());
  ASSERT_EQ(summaries.size(), 1u);
  const auto& s = summaries[0];
  EXPECT_EQ(s.fired_by_fraction + s.fired_by_stasis + s.fired_by_early_stasis, s.detected);
  EXPECT_EQ(s.evidence_seconds.size(), static_cast<std::size_t>(s.detected));
  const auto table = format_delay_table(summaries);
  EXPECT_NE(table.find("| stencil-1ms | " + std::to_string(s.detected) + " | "), std::string::npos) << table;
  EXPECT_NE(table.find("| **all** | "), std::string::npos) << table;
}

// A healthy polling code in a phase of almost no work sits in MPI_Test nearly all the time, a low S
// its model (learned in the busier phase) never saw, for minutes: the S test raises alarms, and
// only the ranks' moves from one polling loop to another, seen in verification, show that their
// waits keep ending. Without that rule such a job was confirmed hung (a real 4-rank ps_poller once
// was). Its hangs are still found: hung pollers each stay in the loop they wait in.
TEST(Simulator, APollingCodeInAPhaseOfNearlyNoWorkIsNotAHang) {
  CampaignConfig config;
  const auto shape = shape_named("polling-phases");
  const auto healthy = run_job(shape, 0, config, 5, 1500, {});
  EXPECT_GT(healthy.healthy_alarms, 0) << "the low phase raised no alarm: nothing was verified";
  EXPECT_EQ(healthy.healthy_rejected, healthy.healthy_alarms);
  EXPECT_FALSE(healthy.false_alarm);
  // Onsets in the low phase (300-600 s) and in the busy one.
  for (const double onset : {450.0, 750.0}) {
    const auto deadlock = run_job(shape, 0, config, 6, onset + 600, Fault{FaultKind::Deadlock, onset, {}});
    EXPECT_TRUE(deadlock.detected) << "onset " << onset;
    EXPECT_FALSE(deadlock.false_alarm) << "onset " << onset;
    EXPECT_TRUE(deadlock.type_correct) << "onset " << onset;
  }
}

// A job's end: healthy jobs end with rank 0 alone outside MPI while the others wait in
// MPI_Finalize, which is no hang however long; the last message never sent is one, of
// communication. Several jobs, so that rank 0 is in a sampled set in some and not in others.
TEST(Simulator, ASerialEndIsNoHangAndALastMessageNeverSentIsOne) {
  CampaignConfig config;
  const auto shape = shape_named("job-ends");
  const SyntheticJob ending(shape, 1, 1200, {});
  double serial_from = 0;
  while (!(ending.is_out(0, serial_from) && ending.snapshot(1, serial_from).mpi_function == "MPI_Finalize")) {
    serial_from += 0.5;
  }
  EXPECT_GE(1200 - serial_from, shape.serial_end_min_seconds - 1);
  EXPECT_LE(1200 - serial_from, shape.serial_end_max_seconds + 1);
  EXPECT_EQ(ending.snapshot(1, 1199).path, 0u);
  EXPECT_FALSE(ending.is_out(63, 1199));
  int with_alarms = 0;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    const auto healthy = run_job(shape, 0, config, seed, 1200, {});
    EXPECT_FALSE(healthy.false_alarm) << "seed " << seed << ": killed at " << healthy.false_alarm_at << " s";
    with_alarms += healthy.healthy_alarms > 0 ? 1 : 0;
    const auto hung = run_job(shape, 0, config, seed, 1500, Fault{FaultKind::Deadlock, 900, {}});
    EXPECT_TRUE(hung.detected) << "seed " << seed;
    EXPECT_TRUE(hung.type_correct) << "seed " << seed;
  }
  EXPECT_GT(with_alarms, 0) << "no serial end raised an alarm: the checks of all ranks were never tested";
}

// hpcc's RandomAccess on a node: ranks work inside their polling loops and those done wait blocked
// in MPI beside them, for many seconds, a picture the model-free rule must not judge before 80 s
// at a place never left, and never at one left before (docs/statistics.md, section 3). Its hangs:
// a spin beside pollers, and a deadlock that is one rank in a receive nobody sends.
TEST(Simulator, PollAndBlockRanksBlockBesideRanksWorkingInsideTheirPollingLoops) {
  const auto shape = shape_named("poll-and-block");
  const SyntheticJob job(shape, 3, 3600, {});
  // The longest stretch in the first ten cycles in which some rank is blocked in MPI (not polling)
  // while some other rank polls: a healthy standstill beside pollers.
  // And every rank blocked, nobody working: only the cycle's collective, never long (in a job
  // whose every rank is sampled and counted, a long one would rightly be a hang).
  double longest = 0, since = -1, longest_all_blocked = 0, all_blocked_since = -1;
  for (double t = 0; t < 300; t += 0.01) {
    int blocked = 0, polling = 0;
    for (int r = 0; r < shape.ranks; ++r) {
      const auto s = job.snapshot(r, t);
      if (s.state == stats::RankState::InMpi && s.mpi_function != "MPI_Test") ++blocked;
      if (s.mpi_function == "MPI_Test") ++polling;
    }
    if (blocked > 0 && polling > 0) {
      if (since < 0) since = t;
      longest = std::max(longest, t - since);
    } else {
      since = -1;
    }
    if (blocked == shape.ranks) {
      if (all_blocked_since < 0) all_blocked_since = t;
      longest_all_blocked = std::max(longest_all_blocked, t - all_blocked_since);
    } else {
      all_blocked_since = -1;
    }
  }
  EXPECT_GT(longest, 10.0);
  EXPECT_LT(longest, 30.0);
  EXPECT_LT(longest_all_blocked, 0.2);

  const SyntheticJob deadlocked(shape, 4, 3600, Fault{FaultKind::Deadlock, 100, {}});
  int in_recv = 0, polling = 0;
  for (int r = 0; r < shape.ranks; ++r) {
    const auto s = deadlocked.snapshot(r, 150);
    in_recv += s.mpi_function == "MPI_Recv" ? 1 : 0;
    polling += s.mpi_function == "MPI_Test" || s.state == stats::RankState::OutMpi ? 1 : 0;
  }
  EXPECT_EQ(in_recv, 1);
  EXPECT_EQ(polling, shape.ranks - 1);

  CampaignConfig config;
  const auto healthy = run_job(shape, 0, config, 5, 3 * 3600, {});
  EXPECT_FALSE(healthy.false_alarm) << "killed at " << healthy.false_alarm_at << " s";
  const auto spin = run_job(shape, 0, config, 6, 30 + 600, Fault{FaultKind::Computation, 30, {5}});
  ASSERT_TRUE(spin.detected);
  EXPECT_TRUE(spin.type_correct);
  EXPECT_TRUE(spin.faulty_found);
  const auto deadlock = run_job(shape, 0, config, 7, 30 + 600, Fault{FaultKind::Deadlock, 30, {}});
  ASSERT_TRUE(deadlock.detected);
  EXPECT_TRUE(deadlock.type_correct);
  EXPECT_FALSE(deadlock.false_alarm);
}

TEST(Simulator, DeadlockIsReportedAsCommunicationError) {
  CampaignConfig config;
  const auto hung = run_job(shape_named("stencil-1ms"), 0, config, 3, 5000, Fault{FaultKind::Deadlock, 1500, {}});
  ASSERT_TRUE(hung.detected);
  EXPECT_TRUE(hung.type_correct);
}

// A deadlocked synthetic job watched by the real Watchdog, with one rank held by a debugger from
// `held_from` until `held_until`.
class HeldDeadlockProbe : public stats::JobProbe {
 public:
  // From `unseen_from` no rank can be sampled (they are gone) while wait_until still accepts: the
  // probe has not noticed the end yet.
  HeldDeadlockProbe(const SyntheticJob& job, double end, double held_from,
                    double unseen_from = std::numeric_limits<double>::infinity(),
                    double held_until = std::numeric_limits<double>::infinity(), stats::HeldRank how = {3, 4242})
      : job_(job), end_(end), held_from_(held_from), held_until_(held_until), unseen_from_(unseen_from), how_(how) {}
  double now() override { return t_; }
  bool wait_until(double t) override {
    t_ = std::max(t_, t);
    return t_ < end_;
  }
  std::vector<stats::RankSnapshot> snapshot(const std::vector<int>& ranks) override {
    std::vector<stats::RankSnapshot> states;
    for (int rank : ranks) states.push_back(t_ < unseen_from_ ? job_.snapshot(rank, t_) : stats::RankSnapshot{});
    return states;
  }
  std::vector<std::optional<stats::WorkCounters>> work_counters() override { return {}; }
  // Held now, or at some time of the window asked about.
  std::vector<stats::HeldRank> held_ranks(double within_seconds) override {
    windows_.push_back(within_seconds);
    if (t_ < held_from_ || held_until_ < t_ - within_seconds) return {};
    return {how_};
  }
  const std::vector<double>& windows() const { return windows_; }

 private:
  const SyntheticJob& job_;
  double end_, held_from_, held_until_, unseen_from_, t_ = 0;
  stats::HeldRank how_;
  std::vector<double> windows_;
};

// A rank under a debugger stops its peers, which then look deadlocked: that is never a hang (a
// person is looking at the job), and every alarm says why. The same job unheld is found.
TEST(Simulator, ARankHeldByADebuggerIsNeverAHang) {
  const auto shape = shape_named("stencil-1ms");
  const SyntheticJob job(shape, 3, 5000, Fault{FaultKind::Deadlock, 1500, {}});
  const stats::WatchdogConfig config;
  stats::WatchdogHooks hooks;
  std::vector<std::string> evidence;
  hooks.on_alarm = [&](const stats::Alarm& alarm) { evidence.push_back(alarm.evidence); };

  HeldDeadlockProbe held(job, 5000, 1500);
  stats::Watchdog watched(config, shape.ranks, 7);
  EXPECT_FALSE(watched.watch(held, hooks).has_value()) << "a held job was called hung";
  ASSERT_FALSE(evidence.empty()) << "the deadlock raised no alarm at all: the test shows nothing";
  EXPECT_NE(evidence.back().find("rank 3 is held by a debugger (traced by pid 4242)"), std::string::npos)
      << evidence.back();

  HeldDeadlockProbe free(job, 5000, 1e18);
  stats::Watchdog unheld(config, shape.ranks, 7);
  EXPECT_TRUE(unheld.watch(free).has_value()) << "the same job, not held, is a hang";
}

// The same for a rank waiting in the kernel (state D: a stalled NFS or Lustre mount): its peers wait
// for it, and the file system, not the application, is at fault. The job is never killed for it.
TEST(Simulator, ARankWaitingInTheKernelIsNeverAHang) {
  const auto shape = shape_named("stencil-1ms");
  const SyntheticJob job(shape, 3, 5000, Fault{FaultKind::Deadlock, 1500, {}});
  std::vector<stats::Alarm> alarms;
  stats::WatchdogHooks hooks;
  hooks.on_alarm = [&](const stats::Alarm& alarm) { alarms.push_back(alarm); };
  HeldDeadlockProbe in_kernel(job, 5000, 1500, std::numeric_limits<double>::infinity(),
                              std::numeric_limits<double>::infinity(), {3, 0, false, true});
  stats::Watchdog watched(stats::WatchdogConfig{}, shape.ranks, 7);
  EXPECT_FALSE(watched.watch(in_kernel, hooks).has_value()) << "a job held by the kernel was called hung";
  ASSERT_FALSE(alarms.empty()) << "the standstill raised no alarm at all: the test shows nothing";
  EXPECT_TRUE(alarms.back().slowdown && alarms.back().held);
  EXPECT_EQ(alarms.back().evidence,
            "rank 3 was found waiting in the kernel (state D: a stalled file system or device, not the application)");
}

// A rank that waited in the kernel long before the job hung (its start-up reads from a slow shared
// file system) or that a debugger held and let go: the alarm is judged on its own evidence, and the
// old hold does not withhold it. The watchdog asks for the holds of the evidence's window only.
TEST(Simulator, AHoldLongBeforeTheHangDoesNotWithholdIt) {
  const auto shape = shape_named("stencil-1ms");
  const SyntheticJob job(shape, 3, 5000, Fault{FaultKind::Deadlock, 1500, {}});
  std::vector<stats::Alarm> alarms;
  stats::WatchdogHooks hooks;
  hooks.on_alarm = [&](const stats::Alarm& alarm) { alarms.push_back(alarm); };
  HeldDeadlockProbe held_early(job, 5000, 100, std::numeric_limits<double>::infinity(), 110, {3, 0, false, true});
  const auto found = stats::Watchdog(stats::WatchdogConfig{}, shape.ranks, 7).watch(held_early, hooks);
  ASSERT_TRUE(found.has_value()) << "the hang was withheld";
  for (const auto& alarm : alarms) EXPECT_FALSE(alarm.held) << alarm.evidence;
  ASSERT_FALSE(held_early.windows().empty());
  // The window reaches back to the streak's first observation, not to the start of the job.
  for (double window : held_early.windows()) {
    EXPECT_GT(window, 0);
    EXPECT_LT(window, 1000);
  }
}

// Every rank of a synthetic job as `stood` shows it until `moves_at`, then as `running` does: a job
// that stood still long enough to be confirmed hung, and then went on. Nobody holds a rank.
class ResumingProbe : public HeldDeadlockProbe {
 public:
  ResumingProbe(const SyntheticJob& stood, const SyntheticJob& running, double moves_at, double end)
      : HeldDeadlockProbe(stood, end, std::numeric_limits<double>::infinity()),
        running_(running),
        moves_at_(moves_at) {}
  std::vector<stats::RankSnapshot> snapshot(const std::vector<int>& ranks) override {
    if (now() < moves_at_) return HeldDeadlockProbe::snapshot(ranks);
    std::vector<stats::RankSnapshot> states;
    for (int rank : ranks) states.push_back(running_.snapshot(rank, now()));
    return states;
  }

 private:
  const SyntheticJob& running_;
  double moves_at_;
};

// A job that stands still through the streak and its verification and then moves while all its
// ranks are checked (a rank let go by a slow file system a moment after the hang was confirmed) is
// not hung: the confirmation is withdrawn as a slowdown, and the job is watched on, not killed.
TEST(Simulator, AJobThatMovesWhileItsRanksAreCheckedIsNotHung) {
  const auto shape = shape_named("stencil-1ms");
  const SyntheticJob stood(shape, 3, 5000, Fault{FaultKind::Computation, 1500, {17}});
  const SyntheticJob running(shape, 3, 5000, Fault{});
  const stats::WatchdogConfig config;
  ResumingProbe never(stood, running, 1e18, 5000);
  const auto found = stats::Watchdog(config, shape.ranks, 7).watch(never);
  ASSERT_TRUE(found.has_value()) << "the standstill is not even a hang: the test shows nothing";
  ASSERT_EQ(found->faulty_ranks, std::vector<int>{17});

  // After the second of the checks, 0.2 s apart.
  ResumingProbe resuming(stood, running, found->confirmed_at + 2.5 * config.identification_spacing, 5000);
  std::vector<stats::Alarm> alarms;
  stats::WatchdogHooks hooks;
  hooks.on_alarm = [&](const stats::Alarm& alarm) { alarms.push_back(alarm); };
  EXPECT_FALSE(stats::Watchdog(config, shape.ranks, 7).watch(resuming, hooks).has_value())
      << "a job that moved while it was checked was called hung";
  const auto withdrawn = std::find_if(alarms.begin(), alarms.end(), [](const auto& a) { return a.withdrawn; });
  ASSERT_NE(withdrawn, alarms.end()) << "the confirmation was not withdrawn";
  EXPECT_EQ(withdrawn->decision.observation.t, found->decision.observation.t);
  EXPECT_TRUE(withdrawn->slowdown);
  EXPECT_FALSE(withdrawn->held);
  EXPECT_TRUE(withdrawn->evidence.ends_with(" (while all ranks were checked)")) << withdrawn->evidence;
  ASSERT_NE(withdrawn, alarms.begin());
  EXPECT_FALSE(std::prev(withdrawn)->slowdown) << "raised as a hang first";
}

// A debugger takes a rank while all ranks are checked after a confirmed hang (a person looking at
// the hung job): the confirmation is withdrawn, as an alarm on a held job is never judged, and
// nothing is done to the job while it is held. Let go, a hang still there is found again.
TEST(Simulator, ARankTakenByADebuggerWhileTheRanksAreCheckedWithdrawsTheHang) {
  const auto shape = shape_named("stencil-1ms");
  const SyntheticJob job(shape, 3, 5000, Fault{FaultKind::Deadlock, 1500, {}});
  const stats::WatchdogConfig config;
  HeldDeadlockProbe free(job, 5000, 1e18);
  const auto found = stats::Watchdog(config, shape.ranks, 7).watch(free);
  ASSERT_TRUE(found.has_value());
  // After the first of the checks, 0.2 s apart.
  const double taken = found->confirmed_at + 1.5 * config.identification_spacing;

  for (const double let_go : {1e18, taken + 30}) {
    SCOPED_TRACE("let go at " + std::to_string(let_go));
    std::vector<stats::Alarm> alarms;
    stats::WatchdogHooks hooks;
    hooks.on_alarm = [&](const stats::Alarm& alarm) { alarms.push_back(alarm); };
    HeldDeadlockProbe held(job, 5000, taken, std::numeric_limits<double>::infinity(), let_go);
    const auto again = stats::Watchdog(config, shape.ranks, 7).watch(held, hooks);
    const auto withdrawn = std::find_if(alarms.begin(), alarms.end(), [](const auto& a) { return a.withdrawn; });
    ASSERT_NE(withdrawn, alarms.end()) << "the confirmed hang was not withdrawn";
    EXPECT_EQ(withdrawn->decision.observation.t, found->decision.observation.t);
    EXPECT_TRUE(withdrawn->slowdown && withdrawn->held);
    EXPECT_EQ(withdrawn->evidence,
              "rank 3 is held by a debugger (traced by pid 4242) (taken while all ranks were checked)");
    ASSERT_NE(withdrawn, alarms.begin());
    EXPECT_FALSE(std::prev(withdrawn)->slowdown) << "raised as a hang first";
    EXPECT_EQ(std::count_if(alarms.begin(), alarms.end(), [](const auto& a) { return a.withdrawn; }), 1);
    if (let_go > 5000) {
      EXPECT_FALSE(again.has_value()) << "a job held from the checks on was called hung";
    } else {
      ASSERT_TRUE(again.has_value()) << "the hang was not found again once the rank was let go";
      EXPECT_GT(again->confirmed_at, let_go);
      EXPECT_EQ(again->type(), stats::HangType::Communication);
    }
  }
}

// A job that ends between the hang's confirmation and the checks of all ranks that name the
// faulty ones (a second watchdog on the job acted first, or the user killed it) leaves the type
// undetermined: checks of dying ranks would show them gone, or outside MPI in their exit path,
// and name a "communication error" or a faulty rank that are not there.
TEST(Simulator, AJobThatEndsBeforeItsRanksAreCheckedHasAHangOfUndeterminedType) {
  const auto shape = shape_named("stencil-1ms");
  const SyntheticJob job(shape, 3, 5000, Fault{FaultKind::Computation, 1500, {17}});
  const stats::WatchdogConfig config;
  HeldDeadlockProbe runs_on(job, 5000, 1e18);
  const auto found = stats::Watchdog(config, shape.ranks, 7).watch(runs_on);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->type(), stats::HangType::Computation);
  EXPECT_EQ(found->faulty_ranks, std::vector<int>{17});
  ASSERT_EQ(found->checks.size(), static_cast<std::size_t>(config.identification_rounds));

  // The same watch, the job ending after the first two of the checks (0.2 s apart), or before any;
  // the probe saying so, or not yet (its ranks gone: a check samples nobody). Checks of no rank
  // would name a "communication error" (no rank persistently outside MPI), or the rank seen out
  // in the checks before the job's end.
  for (const bool noticed : {true, false}) {
    for (const double ends_after : {2.5 * config.identification_spacing, 0.5 * config.identification_spacing}) {
      SCOPED_TRACE((noticed ? "noticed, ends after " : "unnoticed, ends after ") + std::to_string(ends_after));
      const double end = found->confirmed_at + ends_after;
      HeldDeadlockProbe ends(job, noticed ? end : 1e18, 1e18, noticed ? 1e18 : end);
      const auto cut = stats::Watchdog(config, shape.ranks, 7).watch(ends);
      ASSERT_TRUE(cut.has_value());
      EXPECT_EQ(cut->confirmed_at, found->confirmed_at);
      EXPECT_EQ(cut->type(), stats::HangType::Undetermined);
      EXPECT_TRUE(cut->faulty_ranks.empty());
      EXPECT_EQ(cut->checks.size(), ends_after > 2 * config.identification_spacing ? 2u : 0u);
      EXPECT_EQ(stats::to_string(cut->type()), "undetermined");
    }
  }
}

TEST(Simulator, CampaignsAreReproducible) {
  CampaignConfig config;
  config.healthy_hours_per_shape = 5;
  config.hangs_per_shape = 4;
  config.threads = 2;
  const std::vector<WorkloadShape> shapes{shape_named("stencil-1ms"), shape_named("imbalanced")};
  const auto a = run_campaign(shapes, config);
  const auto b = run_campaign(shapes, config);
  ASSERT_EQ(a.size(), 2u);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].delays, b[i].delays);
    EXPECT_EQ(a[i].hangs, 4);
    EXPECT_GE(a[i].healthy_hours, 5);
  }
}

// A campaign lists every job it got wrong with what it takes to watch that job again alone, and
// watching it again gets it wrong the same way. Hangs 0.1-0.3 s after the start of a 4-rank job
// are missed by design (docs/statistics.md, Known limits: the job has not shown its ranks moving).
TEST(Simulator, AMissedHangIsListedAndWatchingItAgainMissesItAgain) {
  CampaignConfig config;
  config.healthy_hours_per_shape = 0;
  config.hangs_per_shape = 2;
  config.max_detection_wait_seconds = 120;
  config.computation_fault_share = 0;  // deadlocks
  auto shape = shape_named("small-4");
  shape.onset_min_seconds = 0.1;
  shape.onset_max_seconds = 0.3;
  const auto summaries = run_campaign({shape}, config);
  ASSERT_EQ(summaries.size(), 1u);
  ASSERT_EQ(summaries[0].hangs, 2);
  ASSERT_EQ(summaries[0].failures.size(), static_cast<std::size_t>(2 - summaries[0].detected));
  ASSERT_FALSE(summaries[0].failures.empty());
  for (const auto& failure : summaries[0].failures) {
    EXPECT_FALSE(failure.false_alarm);
    EXPECT_EQ(failure.fault.kind, FaultKind::Deadlock);
    EXPECT_GE(failure.fault.onset, 0.1);
    const auto again = run_job(shape, 0, config, failure.seed, failure.duration, failure.fault);
    EXPECT_TRUE(again.hang_job);
    EXPECT_FALSE(again.detected);
    EXPECT_EQ(record_trace(shape, config, failure.seed, failure.duration, failure.fault).size(), again.observations);
  }
}

}  // namespace
}  // namespace parastack::sim
