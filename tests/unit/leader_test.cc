// The leader (watch::lead) over a scripted node worker: one monitor in this process, as `parastack
// run` has, whose "ranks" are a script instead of processes. The script stands in for what real
// processes cannot be made to do on cue: end in the second between a hang's confirmation and the
// checks of all ranks. (tests/mpi/run_test.cc has the leader on real Open MPI jobs.)
#include <gtest/gtest.h>
#include <signal.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "network/monitors.h"
#include "node/node_worker.h"
#include "support/mpi_job.h"
#include "support/watch_log.h"
#include "watch/leader.h"

namespace parastack::watch {
namespace {

using Clock = std::chrono::steady_clock;

// One scripted MPI program of four ranks: healthy (0.1 s steps, 60 % compute) for `healthy_for`
// seconds, then rank 2 spins outside MPI for ever while the others wait in MPI_Recv. It ends (every
// rank gone) at the `ends_at_check`-th check of all ranks (the first all_states), or after
// `healthy_for` when it never hangs. From the first check on, a debugger may hold every rank for
// `held_for` seconds (it cannot be sampled then, and held_ranks names its tracer).
struct Program {
  std::string instance;
  double healthy_for = 0;
  bool hangs = true;
  int ends_at_check = 0;  // 0: never ends by itself while hung
  double held_for = 0;
  // > 0: every rank stands in MPI_Recv from the start (a deadlock at the first MPI call) until it
  // is killed from outside at killed_at: ranks 0 and 1 end first, the others 0.5 s later, and the
  // program is gone at healthy_for.
  double killed_at = 0;
};

class ScriptedWorker final : public node::NodeWorker {
 public:
  explicit ScriptedWorker(std::vector<Program> programs) : programs_(std::move(programs)) {}

  std::vector<node::NodeRank> discover(const std::vector<std::string>&) override {
    if (adopted_ && gone() && current_ + 1 < programs_.size()) start_next();
    if (adopted_ || current_ >= programs_.size()) return {};
    return program_ranks();
  }
  void adopt(const std::string& instance) override {
    if (current_ < programs_.size() && instance == programs_[current_].instance) {
      adopted_ = true;
      started_ = Clock::now();
      ranks_ = program_ranks();
    }
  }
  const std::vector<node::NodeRank>& ranks() const override { return ranks_; }
  std::vector<stats::RankSnapshot> snapshot(const std::vector<int>& local) override {
    std::vector<stats::RankSnapshot> out;
    for (int r : local) out.push_back(state_of(r));
    samples_ += local.size();
    return out;
  }
  std::vector<stats::RankState> all_states() override {
    ++checks_;
    if (program().hangs && program().ends_at_check > 0 && checks_ >= program().ends_at_check) ended_ = true;
    if (program().held_for > 0 && !held_since_) held_since_ = Clock::now();
    std::vector<stats::RankState> states;
    for (int r = 0; r < kRanks; ++r) states.push_back(state_of(r).state);
    return states;
  }
  std::vector<std::optional<stats::WorkCounters>> work_counters() override {
    return std::vector<std::optional<stats::WorkCounters>>(kRanks, stats::WorkCounters{});
  }
  std::vector<node::HeldRank> held_ranks(double) override {
    std::vector<node::HeldRank> held;
    for (int r = 0; held_now() && r < kRanks; ++r) held.push_back({r, 4242});
    return held;
  }
  diagnosis::PrefixTree gather_stacks(std::vector<node::RankRecord>& records) override {
    for (int r = 0; r < kRanks; ++r) {
      const auto s = state_of(r);
      records.push_back(
          {r, 1000000 + r, "scripted", std::string(stats::to_string(s.state)), s.mpi_function, {}, {}, {}, {}});
    }
    return diagnosis::PrefixTree(diagnosis::TreeOptions{});
  }
  void signal(int signal) override { signals_.push_back(signal); }
  bool ranks_alive() override { return adopted_ && !gone(); }
  std::uint64_t samples_taken() const override { return samples_; }

  const std::vector<int>& signals() const { return signals_; }
  // When the debugger let go of the ranks, if it held them.
  std::optional<Clock::time_point> let_go() const {
    if (!held_since_) return std::nullopt;
    return *held_since_ +
           std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(program().held_for));
  }
  int checks() const { return checks_; }
  std::size_t programs_started() const { return current_ + (adopted_ ? 1 : 0); }

 private:
  static constexpr int kRanks = 4;
  const Program& program() const { return programs_[current_]; }
  double age() const { return std::chrono::duration<double>(Clock::now() - started_).count(); }
  bool held_now() const { return let_go() && Clock::now() < *let_go(); }
  bool gone() {
    if (!program().hangs && age() > program().healthy_for) ended_ = true;
    return ended_;
  }
  void start_next() {
    ++current_;
    adopted_ = false;
    ended_ = false;
    checks_ = 0;
    held_since_.reset();
  }
  std::vector<node::NodeRank> program_ranks() const {
    std::vector<node::NodeRank> ranks;
    for (int r = 0; r < kRanks; ++r)
      ranks.push_back({r, kRanks, 1000000 + r, "scripted", program().instance, "scripted-app", 1});
    return ranks;
  }
  stats::RankSnapshot state_of(int rank) {
    if (gone() || held_now()) return {};  // a gone or held rank cannot be sampled
    const double t = age();
    if (program().killed_at > 0) {
      if (t >= program().killed_at + 0.5 || (t >= program().killed_at && rank < 2)) return {};
      return {stats::RankState::InMpi, "MPI_Recv", 0x2000 + static_cast<std::uint64_t>(rank)};
    }
    if (program().hangs && t >= program().healthy_for) {
      if (rank == 2) return {stats::RankState::OutMpi, {}, 0x1000};
      return {stats::RankState::InMpi, "MPI_Recv", 0x2000};
    }
    const double step = std::fmod(t + 0.017 * rank, 0.1);
    if (step < 0.06) return {stats::RankState::OutMpi, {}, 0x1000 + static_cast<std::uint64_t>(t / 0.1) % 7};
    return {stats::RankState::InMpi, "MPI_Allreduce", 0x2000 + static_cast<std::uint64_t>(t / 0.1) % 5};
  }

  std::vector<Program> programs_;
  std::size_t current_ = 0;
  bool adopted_ = false, ended_ = false;
  int checks_ = 0;
  std::optional<Clock::time_point> held_since_;
  Clock::time_point started_ = Clock::now();
  std::vector<node::NodeRank> ranks_;
  std::vector<int> signals_;
  std::uint64_t samples_ = 0;
};

struct Led {
  Outcome outcome = Outcome::Ended;
  int terminations = 0, notifications = 0;
  Clock::time_point terminated_at;
  std::string report_text, log;
  RunReport report;  // as lead() left it (a program that ends unhung gets no report file)
  nlohmann::json json() const { return nlohmann::json::parse(report_text, nullptr, false); }
};

// A batch job's leader (it lives on after a program ends, as sbatch --parastack's does) over the
// scripted programs, action kill.
void lead_scripted(
    ScriptedWorker& worker, const std::filesystem::path& dir, Led& led,
    std::function<bool()> running = [] { return true; }) {
  std::ostringstream log_text;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log_text);
  spdlog::logger log("leader-test", sink);
  log.set_level(spdlog::level::debug);
  LeaderOptions options;
  options.seed = 5;
  options.linger = 1;
  options.paths = report_paths((dir / "report.json").string());
  JobControl control;
  control.running = std::move(running);
  control.terminate = [&led](double) {
    led.terminated_at = Clock::now();
    return ++led.terminations, 0;
  };
  control.notify = [&led](const RunReport&) { ++led.notifications; };
  network::SoloMonitors monitors(worker, "scripted");
  led.outcome = lead(monitors, options, control, led.report, log);
  led.log = log_text.str();
  std::ifstream in(options.paths.json);
  led.report_text.assign(std::istreambuf_iterator<char>(in), {});
}

// The control: a hang that stays is acted on once (the job is ended), and its report names rank 2.
TEST(Leader, ScriptedHangThatStaysIsActedOn) {
  testing::TempDir dir;
  ScriptedWorker worker({{"a", 4, true, 0}});
  Led led;
  lead_scripted(worker, dir.path(), led);
  ASSERT_EQ(led.outcome, Outcome::Hang) << led.log;
  EXPECT_EQ(led.terminations, 1);
  EXPECT_EQ(led.notifications, 1);
  ASSERT_FALSE(led.json().is_discarded()) << led.log;
  EXPECT_EQ(led.json()["hang_type"], "computation") << led.log;
  EXPECT_EQ(led.json()["faulty_ranks"], nlohmann::json::array({2}));
  EXPECT_EQ(worker.checks(), stats::WatchdogConfig{}.identification_rounds);
}

// A program that ends under the checks (killed by someone else, or it ended by itself) is reported,
// with its type undetermined, and not acted on: in a batch job a scancel would end the steps after
// it. The next program of the job is watched as usual.
TEST(Leader, ScriptedProgramThatEndsUnderTheChecksIsReportedNotActedOn) {
  for (const int ends_at_check : {1, 2}) {
    testing::TempDir dir;
    ScriptedWorker worker({{"a", 4, true, ends_at_check}, {"b", 1.5, false, 0}});
    Led led;
    lead_scripted(worker, dir.path(), led);
    EXPECT_EQ(led.outcome, Outcome::Ended) << led.log;
    EXPECT_EQ(led.terminations, 0) << led.log;
    EXPECT_TRUE(worker.signals().empty()) << "a signal was sent to the ended program's ranks";
    EXPECT_EQ(led.notifications, 1) << "the hang was confirmed: its report is told";
    EXPECT_EQ(worker.programs_started(), 2u) << "the program after it was not watched\n" << led.log;
    ASSERT_FALSE(led.json().is_discarded()) << led.log;
    EXPECT_EQ(led.json()["verdict"], "hang");
    EXPECT_EQ(led.json()["hang_type"], "undetermined") << ends_at_check << "\n" << led.log;
    EXPECT_TRUE(led.json()["faulty_ranks"].empty());
    EXPECT_EQ(led.json()["action_taken"], "none: the program had ended before its ranks were checked");
    EXPECT_NE(led.log.find("no action: the program had ended"), std::string::npos) << led.log;
  }
}

// A program that stood still from its start is killed (a user's scancel of a test job hung at its
// first MPI call): its last samples read fewer ranks, then none. That shows no rank moving: the
// report says it was never watched, and why (CI, 2026-12-05: "watched" for its last 0.14 s; and the
// last sample's nothing-read once made the reason "the call paths could not be read").
TEST(Leader, ScriptedProgramStillFromItsStartAndKilledWasNeverWatched) {
  testing::TempDir dir;
  ScriptedWorker worker({{"a", 5, false, 0, 0, 4}});
  Led led;
  lead_scripted(worker, dir.path(), led);
  EXPECT_EQ(led.outcome, Outcome::Ended) << led.log;
  EXPECT_EQ(led.terminations, 0) << led.log;
  EXPECT_NE(led.report.verdict, JobVerdict::Hang) << led.log;
  const Coverage& coverage = led.report.coverage;
  EXPECT_FALSE(coverage.ever_watched()) << led.log;
  EXPECT_EQ(coverage.watched_seconds, 0.0) << led.log;
  EXPECT_GT(coverage.unwatched_seconds, 4.0) << led.log;
  EXPECT_NE(coverage.why_unwatched.find("have not shown movement yet"), std::string::npos) << coverage.why_unwatched;
}

// A debugger takes every rank while they are checked after a confirmed hang (a person looking at
// the hung job): nothing is done to the job while it is held, not even a report of the hang. Once
// it is let go, the hang that is still there is found again, and acted on.
TEST(Leader, ScriptedRanksTakenByADebuggerUnderTheChecksAreLeftAloneWhileHeld) {
  testing::TempDir dir;
  ScriptedWorker worker({{"a", 4, true, 0, 3}});
  Led led;
  // The job's allocation ends after a minute (found again, it is acted on in about 10 s).
  const auto end = Clock::now() + std::chrono::seconds(60);
  lead_scripted(worker, dir.path(), led, [end] { return Clock::now() < end; });
  ASSERT_EQ(led.outcome, Outcome::Hang) << "the hang was never acted on\n" << led.log;
  ASSERT_TRUE(worker.let_go().has_value()) << "the ranks were never checked\n" << led.log;
  EXPECT_EQ(led.terminations, 1) << led.log;
  EXPECT_GE(led.terminated_at, *worker.let_go()) << "acted on while a debugger held the job\n" << led.log;
  EXPECT_EQ(led.notifications, 1) << "the withdrawn hang was told\n" << led.log;
  const std::string said =
      "rank 0 is held by a debugger (traced by pid 4242) and 3 more (taken while all ranks were checked)";
  EXPECT_NE(led.log.find(said + ": no hang is judged on it; watching on"), std::string::npos) << led.log;
  EXPECT_EQ(testing::occurrences(led.log, "HANG detected"), 1u) << led.log;
  const nlohmann::json report = led.json();
  ASSERT_FALSE(report.is_discarded()) << led.log;
  EXPECT_EQ(report["hang_type"], "computation") << led.log;
  EXPECT_EQ(report["faulty_ranks"], nlohmann::json::array({2}));
  const auto& model = report["model"];
  const auto& evidence = model["slowdown_evidence"];
  EXPECT_NE(std::find(evidence.begin(), evidence.end(), said), evidence.end()) << evidence;
  EXPECT_LE(model["slowdowns"].get<int>(), model["alarms"].get<int>()) << "an alarm counted twice";
}

// The launcher ends under the checks (killed), but its ranks live on, still hung (a spinning rank
// makes no call that would tell it its launcher is gone): the type is undetermined, and the ranks
// are acted on all the same.
TEST(Leader, ScriptedRanksThatOutliveTheirLauncherUnderTheChecksAreActedOn) {
  testing::TempDir dir;
  ScriptedWorker worker({{"a", 4, true, 0}});
  Led led;
  lead_scripted(worker, dir.path(), led, [&worker] { return worker.checks() < 1; });
  ASSERT_EQ(led.outcome, Outcome::Hang) << led.log;
  EXPECT_EQ(led.terminations, 1) << led.log;
  ASSERT_FALSE(led.json().is_discarded()) << led.log;
  EXPECT_EQ(led.json()["hang_type"], "undetermined") << led.log;
  EXPECT_EQ(led.json()["action_taken"], "the job was terminated (SIGTERM, then SIGKILL after 10 s)");
}

}  // namespace
}  // namespace parastack::watch
