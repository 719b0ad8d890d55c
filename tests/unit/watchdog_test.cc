#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "parastack/stats/random.h"
#include "parastack/stats/watchdog.h"

namespace parastack::stats {
namespace {

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
      const auto r = static_cast<std::uint64_t>(rank);
      if (t_ >= onset_) {
        states.push_back({RankState::InMpi, "MPI_Recv", 0x600});
      } else if (t_ >= before_) {
        states.push_back(tick % 2 ? RankSnapshot{RankState::InMpi, "MPI_Allreduce", 0x200 + tick % 7}
                                  : RankSnapshot{RankState::InMpi, "MPI_Waitall", 0x300 + tick % 5});
      } else if (to_unit(mix64(mix64(r) ^ tick)) < 0.5) {
        states.push_back({RankState::OutMpi, {}, 0x100 + tick % 3});
      } else {
        states.push_back({RankState::InMpi, "MPI_Allreduce", 0x200 + tick % 7});
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

}  // namespace
}  // namespace parastack::stats
