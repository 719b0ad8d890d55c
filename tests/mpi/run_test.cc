// `parastack run` on real Open MPI jobs: healthy codes in several styles run untouched; the same
// codes made to hang by the fault injector (tests/programs/fault_injector.c, preloaded into the
// ranks) are detected, diagnosed, reported and killed, leaving no process behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "support/mpi_job.h"
#include "support/watch_log.h"

namespace parastack {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::ChildOptions;
using testing::ChildProcess;
using testing::read_file;
using testing::TempDir;
using testing::test_program;

constexpr int kExitHang = 3;

std::vector<std::string> mpirun(int ranks, std::vector<std::string> program_and_args,
                                std::vector<std::string> forwarded = {}) {
  std::vector<std::string> argv{"mpirun", "--oversubscribe", "-np", std::to_string(ranks)};
  for (const auto& f : forwarded) argv.insert(argv.end(), {"-x", f});
  argv.insert(argv.end(), program_and_args.begin(), program_and_args.end());
  return argv;
}

// The injector, preloaded into the ranks only (mpirun itself has no MPI library to wrap).
std::vector<std::string> fault(const std::string& kind, int rank, double after_seconds) {
  return {"LD_PRELOAD=" + test_program("libps_fault.so"), "PS_FAULT_KIND=" + kind,
          "PS_FAULT_RANK=" + std::to_string(rank), "PS_FAULT_AFTER_SECONDS=" + std::to_string(after_seconds)};
}

// A fault fired by a trigger file rather than a clock: the tests fire it once parastack's model
// is ready (a condition they can await), because a hang that begins before the model is built
// cannot be told from normal behaviour by any statistical method (docs/user-guide.md, limits).
class Trigger {
 public:
  Trigger() : path_(dir_.path() / "fire") {}
  std::vector<std::string> fault(const std::string& kind, int rank) const {
    auto env = parastack::fault(kind, rank, 1e9);
    env.push_back("PS_FAULT_TRIGGER_FILE=" + path_.string());
    return env;
  }
  void fire() const { std::ofstream(path_).put('\n'); }
  std::string path() const { return path_.string(); }

 private:
  TempDir dir_;
  std::filesystem::path path_;
};

// parastack run [options] -- job..., in a scratch directory, its output in files.
class WatchedRun {
 public:
  WatchedRun(std::vector<std::string> options, const std::vector<std::string>& job,
             std::vector<std::string> environment = {})
      : process_(
            [&] {
              std::vector<std::string> argv{PARASTACK_BIN, "run"};
              if (std::find(options.begin(), options.end(), "--report") == options.end()) {
                argv.insert(argv.end(), {"--report", report_path()});
              }
              argv.insert(argv.end(), options.begin(), options.end());
              argv.push_back("--");
              argv.insert(argv.end(), job.begin(), job.end());
              return argv;
            }(),
            [&] {
              auto env = testing::mpi_test_environment();
              env.insert(env.end(), environment.begin(), environment.end());
              return ChildOptions{env, (dir_.path() / "out").string(), (dir_.path() / "err").string(),
                                  dir_.path().string()};
            }()) {}

  int wait(std::chrono::seconds limit = 300s) { return process_.wait_exit(limit); }
  json report() const {
    std::ifstream in(report_path());
    return json::parse(in, nullptr, false);
  }
  std::string report_path() const { return (dir_.path() / "report.json").string(); }
  std::string out() const { return read_file(dir_.path() / "out"); }
  std::string log() const { return read_file(dir_.path() / "err"); }
  const std::filesystem::path& dir() const { return dir_.path(); }
  ChildProcess& process() { return process_; }
  // When the injector fired on `rank` (its file's modification time, Unix seconds).
  std::optional<double> fault_time(int rank) const {
    struct stat st {};
    const auto path = process_.ready_dir() / ("fault." + std::to_string(rank));
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return static_cast<double>(st.st_mtim.tv_sec) + 1e-9 * static_cast<double>(st.st_mtim.tv_nsec);
  }

 private:
  TempDir dir_;  // before process_: the child runs in it
  ChildProcess process_;
};

// The state letter of /proc/PID/stat ('?' when gone).
char process_state(pid_t pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? '?' : stat[close + 2];
}

bool alive(int pid) {
  const char state = process_state(pid);
  return state != '?' && state != 'Z';
}

std::vector<int> rank_pids(const json& report) {
  std::vector<int> pids;
  for (const auto& r : report["ranks"]) pids.push_back(r["pid"].get<int>());
  return pids;
}

// Waits until both sets' models hold `samples` samples (parastack runs with --log-level debug),
// then fires the fault.
void fire_when_model_ready(WatchedRun& run, const Trigger& trigger, int samples = 40) {
  parastack::testing::await_models([&] { return run.log(); }, [&] { return run.process().running(); }, samples);
  trigger.fire();
}

struct HangCase {
  const char* name;
  const char* style;  // ps_solver style
  const char* kind;   // injected fault
  const char* hang_type;
};

// gtest names a case by this (ctest -N, failures) rather than by its bytes.
void PrintTo(const HangCase& c, std::ostream* out) { *out << c.name; }

class InjectedHang : public ::testing::TestWithParam<HangCase> {};

TEST_P(InjectedHang, IsDetectedDiagnosedAndKilledLeavingNothingBehind) {
  const auto& c = GetParam();
  Trigger trigger;
  WatchedRun run({"--log-level", "debug"},
                 mpirun(4, {test_program("ps_solver"), c.style, "600"}, trigger.fault(c.kind, 2)));
  fire_when_model_ready(run, trigger);
  ASSERT_EQ(run.wait(400s), kExitHang) << run.log();
  const json report = run.report();
  ASSERT_FALSE(report.is_discarded()) << run.log();
  EXPECT_EQ(report["schema"], "parastack-report/1");
  EXPECT_EQ(report["verdict"], "hang");
  EXPECT_EQ(report["hang_type"], c.hang_type) << report["stacks"]["text"].get<std::string>();
  if (std::string(c.hang_type) == "computation") {
    EXPECT_EQ(report["faulty_ranks"], json::array({2})) << report["stacks"]["text"].get<std::string>();
  } else {
    EXPECT_EQ(report["faulty_ranks"], json::array());
  }
  // Detected after the fault began, never before.
  const auto onset = run.fault_time(2);
  ASSERT_TRUE(onset.has_value()) << "the fault never fired";
  EXPECT_GT(report["detected_at"].get<double>(), *onset);
  EXPECT_LE(report["onset_estimate"].get<double>(), report["detected_at"].get<double>());
  // The evidence and the diagnosis are there.
  EXPECT_GE(report["model"]["k"].get<int>(), 1);
  EXPECT_LT(report["model"]["q"].get<double>(), 1.0);
  EXPECT_EQ(report["ranks"].size(), 4u);
  EXPECT_NE(report["stacks"]["text"].get<std::string>().find("main"), std::string::npos);
  EXPECT_NE(report["stacks"]["dot"].get<std::string>().find("digraph"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(run.dir() / "report.txt"));
  EXPECT_TRUE(std::filesystem::exists(run.dir() / "report.trace.jsonl"));
  // The kill left no process behind: no rank, no launcher, nothing under parastack.
  for (int pid : rank_pids(report)) EXPECT_FALSE(alive(pid)) << "rank pid " << pid << " survived";
  EXPECT_TRUE(run.process().descendants().empty());
  EXPECT_FALSE(alive(report["launcher_pid"].get<int>()));
}

INSTANTIATE_TEST_SUITE_P(Faults, InjectedHang,
                         ::testing::Values(HangCase{"compute_spin", "blocking", "spin", "computation"},
                                           HangCase{"sleep", "blocking", "sleep", "computation"},
                                           HangCase{"deadlock", "blocking", "deadlock", "communication"},
                                           HangCase{"busy_polling_code", "polling", "spin", "computation"},
                                           HangCase{"hybrid_threads", "hybrid", "spin", "computation"}),
                         [](const auto& test) { return std::string(test.param.name); });

// Who started a hang (docs/diagnosis.md, "Who is behind"): tests/programs/ps_progress with one
// fault of each kind on rank 5 of 8, under --mpi-progress. The progress library's wait-for graph
// names exactly the faulty rank (both ranks of a deadlocked pair), and the report's DOT marks it.
struct BehindCase {
  const char* name;
  const char* kind;
  std::vector<int> least_progressed;
  const char* hang_type;
  // Waits that are not there: rank 5's eager send to 6 was done before its Waitall began.
  std::vector<std::pair<int, int>> absent_edges = {};
};

void PrintTo(const BehindCase& c, std::ostream* out) { *out << c.name; }

class LeastProgressed : public ::testing::TestWithParam<BehindCase> {};

TEST_P(LeastProgressed, TheProgressLibraryNamesTheRankThatStartedIt) {
  const auto& c = GetParam();
  WatchedRun run(
      {"--mpi-progress", "--mpi-progress-library", PARASTACK_PROGRESS_LIB},
      mpirun(8, {test_program("ps_progress"), "--fault", c.kind, "--fault-rank", "5", "--fault-after", "5"}));
  ASSERT_EQ(run.wait(300s), kExitHang) << run.log();
  const json report = run.report();
  ASSERT_FALSE(report.is_discarded()) << run.log();
  ASSERT_TRUE(run.fault_time(5).has_value()) << "the fault never fired";
  EXPECT_EQ(report["hang_type"], c.hang_type);
  const auto& behind = report["least_progressed"];
  const std::string text = read_file(run.dir() / "report.txt");
  EXPECT_EQ(behind["source"], "mpi-progress") << text;
  EXPECT_EQ(behind["pages_read"], 8) << text;
  EXPECT_EQ(behind["ranks"], json(c.least_progressed)) << text;
  EXPECT_NE(text.find("who is behind (least-progressed ranks): rank"), std::string::npos) << text;
  // Every waiting rank's chain ends at a named rank.
  const auto& chain = behind["mpi_progress"]["chain"];
  ASSERT_FALSE(chain.empty()) << text;
  EXPECT_NE(std::find(c.least_progressed.begin(), c.least_progressed.end(), chain.back()["to"].get<int>()),
            c.least_progressed.end())
      << chain.dump();
  if (std::string(c.kind) == "deadlock-pair") {
    EXPECT_EQ(behind["mpi_progress"]["deadlocks"], json::array({json::array({5, 6})})) << text;
  }
  for (const auto& [from, to] : c.absent_edges) {
    for (const auto& edge : behind["mpi_progress"]["edges"]) {
      EXPECT_FALSE(edge["from"] == from && edge["to"] == to) << "a wait that is not there: " << edge.dump();
    }
  }
  // Each rank says what it waits for; the DOT marks the named ranks.
  for (const auto& r : report["ranks"]) EXPECT_TRUE(r.contains("waits_for")) << r.dump();
  EXPECT_NE(read_file(run.dir() / "report.dot").find("least progressed: 5"), std::string::npos);
  for (int pid : rank_pids(report)) EXPECT_FALSE(alive(pid)) << "rank pid " << pid << " survived";
  EXPECT_TRUE(run.process().descendants().empty());
}

INSTANTIATE_TEST_SUITE_P(
    Faults, LeastProgressed,
    ::testing::Values(BehindCase{"skipped_collective", "skip-collective", {5}, "communication", {{5, 6}}},
                      BehindCase{"deadlocked_pair", "deadlock-pair", {5, 6}, "communication"},
                      BehindCase{"wrong_tag", "wrong-tag", {5}, "communication", {{5, 6}}},
                      BehindCase{"unreceived_send", "unreceived-send", {5}, "communication"},
                      BehindCase{"computing", "compute", {5}, "computation"}),
    [](const auto& test) { return std::string(test.param.name); });

// A command that preloads its own library with mpirun's -x (here the fault injector) still gets the
// progress library: -x LD_PRELOAD=... replaces the launcher's LD_PRELOAD in the ranks, so parastack
// puts the library first in that value. Both then work: the fault fires, and every page is read.
TEST(Run, WithTheProgressLibraryACommandsOwnPreloadKeepsBoth) {
  WatchedRun run({"--mpi-progress", "--mpi-progress-library", PARASTACK_PROGRESS_LIB},
                 mpirun(4, {test_program("ps_solver"), "blocking", "600"}, fault("deadlock", 2, 3)));
  ASSERT_EQ(run.wait(300s), kExitHang) << run.log();
  ASSERT_TRUE(run.fault_time(2).has_value()) << "the fault never fired: the command's preload was lost";
  const json report = run.report();
  ASSERT_FALSE(report.is_discarded()) << run.log();
  EXPECT_EQ(report["hang_type"], "communication");
  EXPECT_EQ(report["least_progressed"]["pages_read"], 4) << report["least_progressed"].dump();
  EXPECT_NE(run.log().find("before the command's own -x LD_PRELOAD"), std::string::npos) << run.log();
  for (int pid : rank_pids(report)) EXPECT_FALSE(alive(pid)) << "rank pid " << pid << " survived";
  EXPECT_TRUE(run.process().descendants().empty());
}

// Without the library the stacks still order the ranks where code order says so: the rank that
// skipped an MPI_Allreduce waits at an earlier call site of main than everyone else.
TEST(Run, WithoutTheProgressLibraryTheStacksNameARankThatSkippedACollective) {
  WatchedRun run({}, mpirun(8, {test_program("ps_progress"), "--fault", "skip-collective", "--fault-rank", "3",
                                "--fault-after", "5"}));
  ASSERT_EQ(run.wait(300s), kExitHang) << run.log();
  const json report = run.report();
  ASSERT_FALSE(report.is_discarded()) << run.log();
  const auto& behind = report["least_progressed"];
  const std::string text = read_file(run.dir() / "report.txt");
  EXPECT_EQ(behind["mpi_progress"], nullptr);
  EXPECT_EQ(behind["pages_read"], 0);
  EXPECT_NE(behind["no_pages_why"].get<std::string>().find("no progress library"), std::string::npos) << text;
  EXPECT_EQ(behind["source"], "stacks") << text;
  EXPECT_EQ(behind["ranks"], json::array({3})) << text;
  EXPECT_NE(text.find("--mpi-progress names the least-progressed ranks"), std::string::npos) << text;
}

TEST(Run, AMissingProgressLibraryIsAClearErrorAndNothingIsStarted) {
  TempDir scratch;
  const auto marker = scratch.path() / "started";
  WatchedRun run({"--mpi-progress", "--mpi-progress-library", "/nonexistent/libparastack-progress.so"},
                 {"sh", "-c", "touch " + marker.string()});
  EXPECT_EQ(run.wait(60s), 2) << run.log();
  EXPECT_NE(run.log().find("--mpi-progress: cannot read the progress library /nonexistent/libparastack-progress.so"),
            std::string::npos)
      << run.log();
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the job was started";
}

// The report of a job that ended by itself: nothing done to it, and it was watched.
void expect_completed_untouched_and_watched(const WatchedRun& run) {
  const json report = run.report();
  EXPECT_EQ(report["verdict"], "completed") << run.log();
  EXPECT_EQ(report["exit_status"], 0);
  EXPECT_EQ(report["action_taken"], "none");
  EXPECT_GT(report["model"]["observations"].get<int>(), 60);  // it was watched, not ignored
  const auto& coverage = report["coverage"];
  EXPECT_TRUE(!coverage["stasis_since"].is_null() || !coverage["model_since"].is_null())
      << "no test could ever have fired: " << coverage.dump();
}

class HealthyRun : public ::testing::TestWithParam<const char*> {};

TEST_P(HealthyRun, CompletesUntouchedWithItsOwnOutput) {
  WatchedRun run({}, mpirun(4, {test_program("ps_solver"), GetParam(), "45"}));
  ASSERT_EQ(run.wait(300s), 0) << run.log();
  expect_completed_untouched_and_watched(run);
  EXPECT_NE(run.out().find("iterations "), std::string::npos) << "the job's own output is missing";
}

INSTANTIATE_TEST_SUITE_P(Styles, HealthyRun, ::testing::Values("blocking", "polling", "hybrid"));

TEST(Run, ATransientSlowdownIsNotAHang) {
  // Once the model is ready, rank 2 becomes several times slower for 25 s (50 ms of CPU before
  // each MPI call), then recovers.
  Trigger trigger;
  auto slow = trigger.fault("slow", 2);
  slow.insert(slow.end(), {"PS_FAULT_SLOW_SECONDS=25", "PS_FAULT_SLOW_MS=50"});
  WatchedRun run({"--log-level", "debug"}, mpirun(4, {test_program("ps_solver"), "blocking", "110"}, slow));
  fire_when_model_ready(run, trigger);
  ASSERT_EQ(run.wait(300s), 0) << run.log();
  EXPECT_TRUE(run.fault_time(2).has_value()) << "the slowdown never happened";
  EXPECT_EQ(run.report()["verdict"], "completed") << run.log();
}

TEST(Run, TheLaunchersExitStatusPassesThrough) {
  const std::string job = "mpirun --oversubscribe -np 2 " + test_program("ps_solver") + " blocking 2; exit 7";
  WatchedRun run({}, {"sh", "-c", job});
  EXPECT_EQ(run.wait(120s), 7) << run.log();
  EXPECT_EQ(run.report()["verdict"], "completed");
  EXPECT_EQ(run.report()["exit_status"], 7);
}

// A report named by an array task's patterns goes to directories made for it. The array's
// variables are parastack's only: with SLURM_JOB_ID the job's mpirun would look for an allocation.
TEST(Run, AReportGoesToTheDirectoriesItsPatternsNameWhichAreMadeForIt) {
  const std::string job = "unset SLURM_JOB_ID SLURM_ARRAY_JOB_ID SLURM_ARRAY_TASK_ID; mpirun --oversubscribe -np 2 " +
                          test_program("ps_solver") + " blocking 2";
  TempDir reports;
  const std::string pattern = (reports.path() / "hangs" / "%A" / "%a-%j.json").string();
  WatchedRun run({"--report", pattern}, {"sh", "-c", job},
                 {"SLURM_JOB_ID=1234", "SLURM_ARRAY_JOB_ID=1230", "SLURM_ARRAY_TASK_ID=4"});
  ASSERT_EQ(run.wait(120s), 0) << run.log();
  std::ifstream in(reports.path() / "hangs" / "1230" / "4-1234.json");
  const json report = json::parse(in, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << run.log();
  EXPECT_EQ(report["verdict"], "completed");
  EXPECT_TRUE(std::filesystem::exists(reports.path() / "hangs" / "1230" / "4-1234.txt")) << run.log();
}

// The job's stdout is the job's alone, byte for byte, even while discovery has problems to log:
// here a process of another user (nobody) under the launcher claims to be a rank.
TEST(Run, TheJobsStdoutIsByteIdenticalWhileDiscoveryLogsProblems) {
  if (::geteuid() != 0) GTEST_SKIP() << "starting a process as another user needs root";
  const std::string impostor =
      "setpriv --reuid=65534 --regid=65534 --clear-groups env OMPI_COMM_WORLD_RANK=0 "
      "OMPI_COMM_WORLD_SIZE=1 " +
      test_program("ps_nompi") + " spin";
  const std::string job = "echo start; " + impostor + " & impostor=$!; mpirun --oversubscribe -np 2 " +
                          test_program("ps_solver") + " blocking 6 > /dev/null; echo \"solver exit $?\"; " +
                          "kill $impostor; seq 1 2000";
  TempDir logs;
  const auto log_path = logs.path() / "parastack.log";
  WatchedRun run({"--log-file", log_path.string(), "--log-level", "info"}, {"sh", "-c", job});
  ASSERT_EQ(run.wait(120s), 0) << run.log();
  std::string expected = "start\nsolver exit 0\n";
  for (int i = 1; i <= 2000; ++i) expected += std::to_string(i) + "\n";
  EXPECT_EQ(run.out(), expected);
  const std::string log = read_file(log_path);
  EXPECT_NE(log.find("(ps_nompi): owned by uid 65534"), std::string::npos) << "discovery logged no problem:\n" << log;
  EXPECT_EQ(run.log().find("owned by uid"), std::string::npos) << run.log();
  EXPECT_EQ(run.report()["verdict"], "completed") << log;
}

TEST(Run, ActionReportKeepsTheJobRunning) {
  Trigger trigger;
  WatchedRun run({"--action", "report", "--log-level", "debug"},
                 mpirun(4, {test_program("ps_solver"), "blocking", "600"}, trigger.fault("spin", 1)));
  fire_when_model_ready(run, trigger);
  // Wait for the report: the condition this test is about.
  const auto deadline = std::chrono::steady_clock::now() + 300s;
  json report;
  while (std::chrono::steady_clock::now() < deadline) {
    report = run.report();
    if (!report.is_discarded() && report.value("verdict", "") == "hang") break;
    ASSERT_TRUE(run.process().running()) << run.log();
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_EQ(report.value("verdict", ""), "hang") << run.log();
  EXPECT_EQ(report["faulty_ranks"], json::array({1}));
  EXPECT_TRUE(run.process().running()) << "parastack should keep watching";
  for (int pid : rank_pids(report)) EXPECT_TRUE(alive(pid)) << "a rank was killed";
}  // the fixture kills the job

TEST(Run, ActionStopLeavesTheRanksStoppedForADebugger) {
  Trigger trigger;
  WatchedRun run({"--action", "stop", "--log-level", "debug"},
                 mpirun(4, {test_program("ps_solver"), "blocking", "600"}, trigger.fault("spin", 3)));
  fire_when_model_ready(run, trigger);
  ASSERT_EQ(run.wait(300s), kExitHang) << run.log();
  const json report = run.report();
  EXPECT_EQ(report["faulty_ranks"], json::array({3}));
  EXPECT_NE(report["action_taken"].get<std::string>().find("gdb -p"), std::string::npos);
  for (int pid : rank_pids(report)) {
    const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    const auto close = stat.rfind(')');
    ASSERT_NE(close, std::string::npos) << "rank " << pid << " is gone";
    EXPECT_EQ(stat[close + 2], 'T') << "rank " << pid << " is not stopped";
  }
  for (int pid : rank_pids(report)) ::kill(pid, SIGKILL);  // and the fixture reaps the rest
}

TEST(Run, AReportThatCannotBeWrittenGoesToTheLogAndTheHangIsStillActedOn) {
  TempDir scratch;
  std::ofstream(scratch.path() / "a-file") << "a file where the report's directory should be\n";
  const std::string unwritable = (scratch.path() / "a-file" / "r.json").string();
  Trigger trigger;
  WatchedRun run({"--report", unwritable, "--log-level", "debug"},
                 mpirun(4, {test_program("ps_solver"), "blocking", "600"}, trigger.fault("spin", 2)));
  fire_when_model_ready(run, trigger);
  ASSERT_EQ(run.wait(300s), kExitHang) << run.log();
  const std::string log = run.log();
  EXPECT_NE(log.find("cannot be written"), std::string::npos) << log;                    // said at the start
  EXPECT_NE(log.find("verdict:   HANG (computation error)"), std::string::npos) << log;  // the report
  EXPECT_NE(log.find("faulty:    rank 2"), std::string::npos) << log;
  // Every file of the report fails for the same directory: the log says so once.
  std::size_t said = 0;
  for (auto at = log.find("report: cannot create the directory"); at != std::string::npos;
       at = log.find("report: cannot create the directory", at + 1)) {
    ++said;
  }
  EXPECT_EQ(said, 1u) << log;
  EXPECT_TRUE(run.process().descendants().empty());
}

// The last `lines` lines of a log: a failing long run's debug log is thousands of lines.
// The log's last lines, after what it said above debug level before them (alarms, verdicts, the
// model's building): in a debug log the last lines alone are all per-sample lines.
std::string tail(const std::string& log, int lines = 80) {
  std::size_t start = log.size();
  for (int n = 0; n <= lines; ++n) {
    if (start == 0) return log;
    start = log.rfind('\n', start - 1);
    if (start == std::string::npos) return log;
  }
  std::string said;
  std::istringstream elided(log.substr(0, start));
  for (std::string line; std::getline(elided, line);) {
    if (line.find(" debug: ") == std::string::npos) said += line + "\n";
  }
  return said + "[...]\n" + log.substr(start + 1);
}

// What a debugger does to a rank: seized and held in a stop until release() or destruction.
class HeldByThisProcess {
 public:
  explicit HeldByThisProcess(pid_t pid) : pid_(pid) {
    // As gdb does: parastack may hold the rank for a sample's microseconds, and the seize then
    // fails with EPERM; a moment later it succeeds.
    for (int attempt = 0; attempt < 100 && !seized_; ++attempt) {
      seized_ = ::ptrace(PTRACE_SEIZE, pid, nullptr, nullptr) == 0;
      if (!seized_ && errno != EPERM) break;
      if (!seized_) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    held_ = seized_ && ::ptrace(PTRACE_INTERRUPT, pid, nullptr, nullptr) == 0;
    int status = 0;
    held_ = held_ && ::waitpid(pid, &status, __WALL) == pid;
  }
  ~HeldByThisProcess() { release(); }
  HeldByThisProcess(const HeldByThisProcess&) = delete;
  HeldByThisProcess& operator=(const HeldByThisProcess&) = delete;
  bool held() const { return held_; }
  void release() {
    if (seized_) ::ptrace(PTRACE_DETACH, pid_, nullptr, nullptr);
    seized_ = held_ = false;
  }

 private:
  pid_t pid_;
  bool seized_ = false;
  bool held_ = false;
};

// A person holds a rank of a healthy job in a debugger: the other ranks wait for it in MPI, which
// looks exactly like a deadlock to the model. parastack says at each alarm that a debugger holds a
// rank and never calls it a hang; once the rank is released the job completes as it would have.
// (Before, the job was killed as "communication error: every rank waits in MPI" within seconds.)
TEST(Run, ARankHeldByADebuggerIsNeverAHang) {
  WatchedRun run({"--log-level", "debug"}, mpirun(4, {test_program("ps_solver"), "blocking", "30"}));
  parastack::testing::await_models([&] { return run.log(); }, [&] { return run.process().running(); }, 40);
  const pid_t rank = run.process().wait_ready_file("rank.2", 30s);
  const std::string said = "rank 2 is held by a debugger (traced by pid " + std::to_string(::getpid()) + ")";
  {
    HeldByThisProcess debugger(rank);
    ASSERT_TRUE(debugger.held()) << "could not hold rank 2 (pid " << rank << ")";
    // Held until parastack has raised an alarm and judged it: two, so that the model went on
    // watching after the first and could have confirmed a hang.
    const auto deadline = std::chrono::steady_clock::now() + 120s;
    auto count = [&] { return parastack::testing::occurrences(run.log(), said); };
    while (count() < 2 && run.process().running() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(50ms);
    }
    ASSERT_GE(count(), 2u) << tail(run.log());
  }
  ASSERT_EQ(run.wait(300s), 0) << tail(run.log());
  EXPECT_EQ(run.report()["verdict"], "completed") << tail(run.log());
  EXPECT_NE(run.out().find("iterations "), std::string::npos) << run.out();
}

// A debugger that held a rank for a moment and let go well before the job hung (someone looked and
// left): the hang's alarm is judged on its own samples. Before, a sample that had found the rank
// held was remembered until the next alarm, however old: the hang's first alarm was then "held by
// a debugger during the samples", and the hang waited for a second streak. (The same memory holds
// a rank seen stopped by a signal or waiting in the kernel: a slow start-up read, say.)
TEST(Run, ADebuggerThatLetGoBeforeTheHangDoesNotWithholdIt) {
  Trigger trigger;
  WatchedRun run({"--log-level", "debug"},
                 mpirun(4, {test_program("ps_solver"), "blocking", "600"}, trigger.fault("spin", 2)));
  parastack::testing::await_models([&] { return run.log(); }, [&] { return run.process().running(); }, 40);
  const pid_t rank = run.process().wait_ready_file("rank.1", 30s);
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  auto waiting = [&] { return run.process().running() && std::chrono::steady_clock::now() < deadline; };
  // A decision line from `from` on that matches `pattern`.
  auto seen = [&](std::size_t from, const std::regex& pattern) {
    const std::string log = run.log();
    return from < log.size() && std::regex_search(log.begin() + static_cast<std::ptrdiff_t>(from), log.end(), pattern);
  };
  std::size_t held_from = 0;
  {
    HeldByThisProcess debugger(rank);
    ASSERT_TRUE(debugger.held()) << "could not hold rank 1 (pid " << rank << ")";
    held_from = run.log().size();
    // Held until a sample has found it so (the decision on 3 of the 4 ranks), then let go.
    while (!seen(held_from, std::regex(R"(debug: t=\S+ set=\d+ S=\d+/3 )")) && waiting()) {
      std::this_thread::sleep_for(10ms);
    }
    ASSERT_TRUE(seen(held_from, std::regex(R"(S=\d+/3 )"))) << tail(run.log());
    // The debug log says when a sample found it held (what tells whether a hold fell inside an
    // alarm's window).
    EXPECT_NE(run.log().find("sample: rank 1 (pid " + std::to_string(rank) + "): traced by another process", held_from),
              std::string::npos)
        << tail(run.log());
  }
  const std::size_t released_from = run.log().size();
  // The job moves on (a healthy decision on all four ranks) before the spin begins.
  while (!seen(released_from, std::regex(R"(S=\d+/4 healthy)")) && waiting()) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(seen(released_from, std::regex(R"(S=\d+/4 healthy)"))) << tail(run.log());
  ASSERT_EQ(run.log().find("alarm at", held_from), std::string::npos) << "the hold itself raised an alarm\n"
                                                                      << tail(run.log());
  trigger.fire();

  ASSERT_EQ(run.wait(300s), kExitHang) << tail(run.log());
  EXPECT_EQ(run.report()["faulty_ranks"], json::array({2})) << tail(run.log());
  EXPECT_EQ(run.log().find("held by a debugger", released_from), std::string::npos) << tail(run.log());
}

// Stops processes with SIGSTOP for its lifetime, as kill -STOP does; it always continues them.
class StoppedBySignal {
 public:
  explicit StoppedBySignal(std::vector<pid_t> pids) : pids_(std::move(pids)) {
    for (pid_t pid : pids_) ::kill(pid, SIGSTOP);
  }
  ~StoppedBySignal() {
    for (pid_t pid : pids_) ::kill(pid, SIGCONT);
  }
  StoppedBySignal(const StoppedBySignal&) = delete;
  StoppedBySignal& operator=(const StoppedBySignal&) = delete;

 private:
  std::vector<pid_t> pids_;
};

// The watchdog's clock (t=) of the debug log's decision lines from offset `from` on.
std::vector<double> decision_times(const std::string& log, std::size_t from) {
  std::vector<double> times;
  for (auto at = log.find("debug: t=", from); at != std::string::npos; at = log.find("debug: t=", at + 1)) {
    times.push_back(std::strtod(log.c_str() + at + 9, nullptr));
  }
  return times;
}

// Someone pauses a healthy job with SIGSTOP (a user freeing the machine for a while, Ctrl-Z, a
// suspended job): its ranks stand still without being hung. One rank stopped makes its peers wait
// for it as a hang would: every alarm says which rank is stopped, and none is judged. Every rank
// stopped leaves nothing to judge (their samples are no evidence): no alarm at all, for 30 s of the
// watchdog's clock, several times what a hang takes to be found. Continued, the job completes as it
// would have. (Before, the paused job was killed as a hang.)
TEST(Run, AJobPausedWithSigstopIsNeverAHang) {
  WatchedRun run({"--log-level", "debug"}, mpirun(4, {test_program("ps_solver"), "blocking", "100"}));
  parastack::testing::await_models([&] { return run.log(); }, [&] { return run.process().running(); }, 40);
  std::vector<pid_t> ranks;
  for (int r = 0; r < 4; ++r) ranks.push_back(run.process().wait_ready_file("rank." + std::to_string(r), 30s));
  const auto deadline = std::chrono::steady_clock::now() + 150s;
  auto waiting = [&] { return run.process().running() && std::chrono::steady_clock::now() < deadline; };
  {
    const std::string said = "rank 2 was found stopped by a signal";
    const std::size_t from = run.log().size();
    const StoppedBySignal one({ranks[2]});
    // Two alarms judged, so that the model went on watching after the first and could have
    // confirmed a hang.
    auto count = [&] { return parastack::testing::occurrences(run.log(), said, from); };
    while (count() < 2 && waiting()) std::this_thread::sleep_for(50ms);
    ASSERT_GE(count(), 2u) << tail(run.log());
  }
  {
    const std::size_t from = run.log().size();
    const StoppedBySignal all(ranks);
    auto watched_for = [&] {
      const auto times = decision_times(run.log(), from);
      return times.size() < 2 ? 0.0 : times.back() - times.front();
    };
    while (watched_for() < 30 && waiting()) std::this_thread::sleep_for(100ms);
    ASSERT_GE(watched_for(), 30) << tail(run.log());
    // At most the end of an alarm raised before (judged with rank 2 stopped, or every rank).
    const std::string log = run.log();
    for (auto at = log.find("alarm at", from); at != std::string::npos; at = log.find("alarm at", at + 1)) {
      const std::string line = log.substr(at, log.find('\n', at) - at);
      EXPECT_NE(line.find("was found stopped by a signal"), std::string::npos) << line;
    }
    // The paused job is said to be unread, not silently unobserved.
    EXPECT_NE(log.find("no sampled rank could be read for", from), std::string::npos) << tail(log);
  }
  ASSERT_EQ(run.wait(300s), 0) << tail(run.log());
  EXPECT_NE(run.log().find("the sampled ranks can be read again after"), std::string::npos) << tail(run.log());
  EXPECT_EQ(run.log().find("HANG"), std::string::npos) << tail(run.log());
  EXPECT_EQ(run.report()["verdict"], "completed") << tail(run.log());
  EXPECT_NE(run.out().find("iterations "), std::string::npos) << run.out();
}

// A rank waiting uninterruptibly in the kernel (state D), as a read from a stalled NFS or Lustre
// mount does (here vfork's parent waits for its child, until the test lets it go): a ptrace stop
// takes effect only when the wait ends. Before, the sample waited for it: the watch made no
// decision at all for as long, and `parastack stack` did not return (nor heed Ctrl-C) until the
// wait ended. Now the rank is left alone and said to be in the kernel; its peers' stillness is never
// judged a hang (the file system is at fault, not the application, and a mount comes back), while
// the watch goes on. Let go, the job completes as it would have.
TEST(Run, ARankWaitingInTheKernelIsLeftAloneAndNeverAHang) {
  TempDir release_dir;
  const auto release = release_dir.path() / "release";
  struct Release {  // whatever happens, the waiting rank is let go
    std::filesystem::path path;
    ~Release() { std::ofstream(path).put('\n'); }
  } let_go{release};
  Trigger trigger;
  auto environment = trigger.fault("kernel", 2);
  environment.push_back("PS_FAULT_RELEASE_FILE=" + release.string());
  WatchedRun run({"--log-level", "debug"}, mpirun(4, {test_program("ps_solver"), "blocking", "60"}, environment));
  const pid_t waiting_rank = run.process().wait_ready_file("rank.2", 60s);
  fire_when_model_ready(run, trigger);
  run.process().wait_ready_file("fault.2", 60s);
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  auto waiting = [&] { return run.process().running() && std::chrono::steady_clock::now() < deadline; };
  while (process_state(waiting_rank) != 'D' && waiting()) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(process_state(waiting_rank), 'D');
  const std::size_t from = run.log().size();

  const auto stack_out = run.dir() / "stack.out";
  ChildProcess stack({PARASTACK_BIN, "stack", "--pid", std::to_string(waiting_rank)},
                     ChildOptions{{}, stack_out.string(), (run.dir() / "stack.err").string(), {}});
  EXPECT_EQ(stack.wait_exit(60s), 2) << "parastack stack waited for the rank\n" << read_file(stack_out);
  EXPECT_NE(read_file(stack_out).find("waiting in the kernel (state D)"), std::string::npos) << read_file(stack_out);

  // Two alarms, each saying why it is not judged, and the watch going on for 20 s of its clock,
  // several times what a hang takes to be found.
  const std::string said = "rank 2 was found waiting in the kernel (state D";
  auto alarms = [&] { return parastack::testing::occurrences(run.log(), said, from); };
  auto watched_for = [&] {
    const auto times = decision_times(run.log(), from);
    return times.size() < 2 ? 0.0 : times.back() - times.front();
  };
  while ((alarms() < 2 || watched_for() < 20) && waiting()) std::this_thread::sleep_for(50ms);
  ASSERT_GE(alarms(), 2u) << tail(run.log());
  ASSERT_GE(watched_for(), 20) << tail(run.log());
  ASSERT_EQ(process_state(waiting_rank), 'D') << "the rank was let go before the test did";
  // And the debug log says when a sample found it so.
  EXPECT_NE(run.log().find("sample: rank 2 (pid " + std::to_string(waiting_rank) + "): in state D", from),
            std::string::npos)
      << tail(run.log());
  // Warned once while it lasts; the alarms after it are debug lines.
  EXPECT_EQ(parastack::testing::occurrences(run.log(), "warning: alarm at", from), 1u) << tail(run.log());

  std::ofstream(release).put('\n');
  ASSERT_EQ(run.wait(300s), 0) << tail(run.log());
  EXPECT_EQ(run.log().find("HANG"), std::string::npos) << tail(run.log());
  EXPECT_EQ(run.report()["verdict"], "completed") << tail(run.log());
  EXPECT_NE(run.out().find("iterations "), std::string::npos) << run.out();
}

// One rank computing serially while all the others wait in MPI (a rank 0 building a mesh or a
// partition, or gathering results into new arrays) looks exactly like a computation hang to the
// model and to the stack rule: the job stands still outside MPI in one place. A rank that is
// filling new memory is working, though (a hung rank takes no page faults), and its alarms are
// slowdowns. Before, this healthy job was killed about 3 s into the phase, as
// "HANG (computation error)" naming rank 0. (A serial phase that touches no new memory and does
// no I/O is still a hang to this method: docs/statistics.md, Known limits.)
TEST(Run, ARankFillingNewMemoryWhileTheOthersWaitIsNotAHang) {
  TempDir release_dir;
  const auto release = release_dir.path() / "release";
  struct Release {  // whatever happens, the serial phase ends
    std::filesystem::path path;
    ~Release() { std::ofstream(path).put('\n'); }
  } let_go{release};
  Trigger trigger;
  auto environment = trigger.fault("serial", 0);
  environment.push_back("PS_FAULT_RELEASE_FILE=" + release.string());
  environment.push_back("PS_FAULT_TOUCH_MIB=16");
  // 30 s: the others wait for rank 0 however long its phase lasts, and all stop together after it.
  WatchedRun run({"--log-level", "debug"}, mpirun(4, {test_program("ps_solver"), "blocking", "30"}, environment));
  fire_when_model_ready(run, trigger);
  run.process().wait_ready_file("fault.0", 60s);
  const std::size_t from = run.log().size();

  // Alarms come, and each finds rank 0 working; the phase goes on for 15 s of the watch's clock,
  // several times what a hang takes to be found.
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  auto going = [&] { return run.process().running() && std::chrono::steady_clock::now() < deadline; };
  const std::string said = "rank 0 is filling new memory: ";
  auto alarms = [&] { return parastack::testing::occurrences(run.log(), said, from); };
  auto watched_for = [&] {
    const auto times = decision_times(run.log(), from);
    return times.size() < 2 ? 0.0 : times.back() - times.front();
  };
  while ((alarms() < 2 || watched_for() < 15) && going()) std::this_thread::sleep_for(50ms);
  ASSERT_GE(alarms(), 2u) << tail(run.log());
  ASSERT_GE(watched_for(), 15) << tail(run.log());

  std::ofstream(release).put('\n');
  ASSERT_EQ(run.wait(300s), 0) << tail(run.log());
  EXPECT_EQ(run.log().find("HANG"), std::string::npos) << tail(run.log());
  EXPECT_EQ(run.report()["verdict"], "completed") << tail(run.log());
  EXPECT_NE(run.out().find("iterations "), std::string::npos) << run.out();
}

// Two watchdogs on one job (`parastack run` inside a `--parastack` job, or run around another
// parastack run): each one's samples hold a rank for microseconds, and the other's sample of that
// rank must wait them out, not take them for a debugger holding the job (whose alarms are never
// judged). Before, each watcher logged "held by a debugger" at its alarms and found a spinning rank
// after about 15 s instead of 4. Whichever confirms the hang first ends the job; the other may
// confirm it too, and if the job ends under its checks of all ranks, says the type is undetermined
// rather than name a faulty rank or a communication error from dying ranks (before, it reported
// "communication error" once in 8 runs); or it sees the job end (the inner) or passes the inner's
// status 3 through (the outer).
TEST(Run, TwoWatchersOnOneJobDoNotTakeEachOtherForADebugger) {
  TempDir inner_dir;
  const std::string inner_report = (inner_dir.path() / "inner.json").string();
  const std::string inner_log = (inner_dir.path() / "inner.log").string();
  std::vector<std::string> inner{PARASTACK_BIN, "run",         "--report", inner_report, "--log-file",
                                 inner_log,     "--log-level", "debug",    "--"};
  const auto job = mpirun(4, {test_program("ps_solver"), "blocking", "600"}, fault("spin", 2, 8));
  inner.insert(inner.end(), job.begin(), job.end());
  WatchedRun run({"--log-level", "debug"}, inner);
  ASSERT_EQ(run.wait(180s), kExitHang) << "fault fired: " << run.fault_time(2).has_value() << "\n"
                                       << tail(run.log()) << tail(read_file(inner_log));
  int named = 0;
  for (const auto& [who, path, log] :
       {std::tuple{"outer", run.report_path(), run.log()}, std::tuple{"inner", inner_report, read_file(inner_log)}}) {
    EXPECT_EQ(log.find("held by a debugger"), std::string::npos) << who << ":\n" << tail(log);
    std::ifstream in(path);
    const json report = json::parse(in, nullptr, false);
    ASSERT_FALSE(report.is_discarded()) << who << ": no report\n" << tail(log);
    if (report["verdict"] != "hang") continue;
    for (int pid : rank_pids(report)) EXPECT_FALSE(alive(pid)) << who << ": rank pid " << pid << " survived";
    if (report["hang_type"] == "undetermined") {
      EXPECT_TRUE(report["faulty_ranks"].empty()) << who;
      continue;
    }
    ++named;
    EXPECT_EQ(report["hang_type"], "computation") << who;
    EXPECT_EQ(report["faulty_ranks"], json::array({2})) << who << report["stacks"]["text"].get<std::string>();
  }
  EXPECT_GE(named, 1) << "no watcher named the hang";
  EXPECT_TRUE(run.process().descendants().empty());
  // The inner one knows it is the second watcher and says so; the outer one is the first.
  const std::string said = "this command is already watched by another parastack run (pid ";
  EXPECT_NE(read_file(inner_log).find(said), std::string::npos) << tail(read_file(inner_log));
  EXPECT_EQ(run.log().find(said), std::string::npos) << tail(run.log());
}

// A hang that begins within seconds of the start, before a model of the job could be built: rank 2
// spins 3 s after its first MPI call. Nothing here waits for "model built": detection must not
// depend on it.
TEST(Run, AHangThreeSecondsAfterMpiInitIsFound) {
  WatchedRun run({"--log-level", "debug"},
                 mpirun(4, {test_program("ps_solver"), "blocking", "600"}, fault("spin", 2, 3)));
  // Long enough to tell a slow detection (the bound below fails) from none at all.
  ASSERT_EQ(run.wait(180s), kExitHang) << "fault fired: " << run.fault_time(2).has_value() << "\n" << tail(run.log());
  const json report = run.report();
  ASSERT_FALSE(report.is_discarded()) << tail(run.log());
  EXPECT_EQ(report["verdict"], "hang");
  EXPECT_EQ(report["hang_type"], "computation") << report["stacks"]["text"].get<std::string>();
  EXPECT_EQ(report["faulty_ranks"], json::array({2})) << report["stacks"]["text"].get<std::string>();
  const auto onset = run.fault_time(2);
  ASSERT_TRUE(onset.has_value()) << "the fault never fired";
  // The case this test is about: the fault fired within seconds of the start of watching.
  EXPECT_LT(*onset - report["started_at"].get<double>(), 15.0);
  const double delay = report["detected_at"].get<double>() - *onset;
  EXPECT_GT(delay, 0.0);
  // A sanity bound only: bench/watchdog.sh measures how fast.
  EXPECT_LT(delay, 60.0) << tail(run.log());
  RecordProperty("delay_seconds", std::to_string(delay));
  std::cout << "detected " << delay << " s after the fault\n";
  for (int pid : rank_pids(report)) EXPECT_FALSE(alive(pid)) << "rank pid " << pid << " survived";
  EXPECT_TRUE(run.process().descendants().empty());
  EXPECT_FALSE(alive(report["launcher_pid"].get<int>()));
}

// action kill: SIGTERM to every process of the job, SIGKILL after --grace to what ignored it (here a
// helper of the job script that ignores SIGTERM, as a wrapper's child may). Signals go by identity
// (pidfd, after checking the start time), never by a pid read from /proc a moment before.
TEST(Run, AJobProcessThatIgnoresSigtermIsKilledAfterTheGrace) {
  std::string job = "(trap '' TERM; exec sleep 600) & echo $! > stubborn.pid;";
  for (const auto& word : mpirun(4, {test_program("ps_solver"), "blocking", "600"}, fault("spin", 1, 3))) {
    job += " '" + word + "'";
  }
  job += "; wait";
  WatchedRun run({"--grace", "2", "--log-level", "info"}, {"sh", "-c", job});
  const int status = run.wait(180s);
  // It outlives parastack if the test fails (re-parented to init): this test ends it then.
  const std::string pid_text = read_file(run.dir() / "stubborn.pid");
  const int stubborn = pid_text.empty() ? 0 : std::stoi(pid_text);
  const bool survived = stubborn > 0 && alive(stubborn);
  if (survived) ::kill(stubborn, SIGKILL);
  ASSERT_EQ(status, kExitHang) << tail(run.log());
  ASSERT_GT(stubborn, 0);
  EXPECT_FALSE(survived) << "the process that ignored SIGTERM survived";
  std::smatch killed;
  const std::string log = run.log();
  ASSERT_TRUE(std::regex_search(log, killed, std::regex(R"(job terminated \((\d+) process\(es\) needed SIGKILL\))")))
      << tail(log);
  EXPECT_GE(std::stoi(killed[1]), 1);
  EXPECT_EQ(run.report()["faulty_ranks"], json::array({1}));
  for (int pid : rank_pids(run.report())) EXPECT_FALSE(alive(pid)) << "rank pid " << pid << " survived";
  EXPECT_TRUE(run.process().descendants().empty());
}

// Rank 1 of a 4-rank ps_poller hangs with `kind` (a libps_fault kind) 3 s in, outside MPI, while
// the others busy-wait for it: found, as a computation error with rank 1 at fault.
void expect_found_beside_pollers(const std::string& kind) {
  WatchedRun run({"--log-level", "debug"}, mpirun(4, {test_program("ps_poller"), "600"}, fault(kind, 1, 3)));
  ASSERT_EQ(run.wait(240s), kExitHang) << "fault fired: " << run.fault_time(1).has_value() << "\n" << tail(run.log());
  const json report = run.report();
  ASSERT_FALSE(report.is_discarded()) << tail(run.log());
  EXPECT_EQ(report["hang_type"], "computation") << report["stacks"]["text"].get<std::string>();
  EXPECT_EQ(report["faulty_ranks"], json::array({1})) << report["stacks"]["text"].get<std::string>();
  const auto onset = run.fault_time(1);
  ASSERT_TRUE(onset.has_value()) << "the fault never fired";
  const double delay = report["detected_at"].get<double>() - *onset;
  EXPECT_GT(delay, 0.0);
  // A sanity bound only (bench/watchdog.sh measures how fast): 20-25 s on a quiet machine. In CI,
  // beside the Slurm tests, a spin once took 60.4 s: the model-free rule needed 45 s, three times a
  // 15-s run it had counted as healthy stillness (most likely the hung rank's own run, cut short
  // by polling ranks that the load held outside their loops for two observations: the safe side).
  EXPECT_LT(delay, 150.0) << tail(run.log());
  std::cout << "detected " << delay << " s after the fault\n";
  for (int pid : rank_pids(report)) EXPECT_FALSE(alive(pid)) << "rank pid " << pid << " survived";
  EXPECT_TRUE(run.process().descendants().empty());
}

// A rank that spins outside MPI while the others busy-wait for it (MPI_Test and MPI_Iprobe loops,
// tests/programs/ps_poller.c): the waiting ranks hop between their polling calls, hung or not, so
// only the one active rank standing still shows the hang (stats/set_signature.h). hpcc's
// RandomAccess, task farms and PGAS-style codes hang this way.
TEST(Run, ARankSpinningWhileTheOthersPollIsFound) { expect_found_beside_pollers("spin"); }

// The same with a spin whose loop calls two functions on every pass (PS_FAULT_KIND=loop: a solve
// that never converges), as most real spins do. A sample finds the rank in the loop or in either
// helper, three places, so the stasis evidence never saw it stand still, and beside pollers S says
// nothing: before 2026-12-07 this test ran 240 s without a verdict. The rank now stands at its
// loop (stats/set_signature.h, "A loop through helpers").
TEST(Run, ARankLoopingThroughHelpersWhileTheOthersPollIsFound) { expect_found_beside_pollers("loop"); }

// The same loop whose helpers spend their time in kernels of their own (PS_FAULT_KIND=loop-deep:
// relax() sweeping rows with a row kernel, residual() running a dot kernel through a norm, as a
// call of cblas_dnrm2 runs OpenBLAS's dnrm2_k): samples find it three calls in from the loop, in
// two kernels whose callers differ up to the loop. Until the night of 2026-12-07 a rank stood at a loop only
// one or two calls out, so this spin moved for ever.
TEST(Run, ARankLoopingThroughHelpersThatCallKernelsWhileTheOthersPollIsFound) {
  expect_found_beside_pollers("loop-deep");
}

// A hybrid MPI + OpenMP code (tests/programs/ps_openmp.c: MPI between ranks, 2 OpenMP threads in
// each) runs as most large applications do: healthy, it completes untouched.
TEST(Run, AHealthyOpenMpJobCompletesUntouched) {
  WatchedRun run({}, mpirun(4, {test_program("ps_openmp"), "45"}, {"OMP_NUM_THREADS=2"}));
  ASSERT_EQ(run.wait(300s), 0) << tail(run.log());
  expect_completed_untouched_and_watched(run);
  EXPECT_TRUE(std::regex_search(run.out(), std::regex(R"(^ps_openmp: \d+ steps in \d)")))
      << "the job's own output is missing:\n"
      << run.out();
}

// ps_openmp's rank 1 stops converging once the models are ready: it runs one parallel region again
// and again, outside MPI, while rank 0 waits in MPI_Allreduce. Its main thread is found in the
// region's body or in libgomp (the region's closing barrier, the next region's start), which are
// one place (sampler/path_signature.h), so the set's call paths stand still as for a serial spin.
// They did not: the rank alternated between two or three paths, and the hang was not found in
// 300 s (healthy, this code sits at "rank 1 computing, rank 0 in MPI" most of the time, so the
// fraction outside MPI shows nothing either).
TEST(Run, ARankSpinningThroughAnOpenMpRegionStandsStillAndIsFound) {
  Trigger trigger;
  WatchedRun run({"--log-level", "debug"},
                 mpirun(2, {test_program("ps_openmp"), "600", "--bug-rank", "1", "--bug-file", trigger.path()},
                        {"OMP_NUM_THREADS=2"}));
  fire_when_model_ready(run, trigger);
  ASSERT_EQ(run.wait(300s), kExitHang) << tail(run.log());
  const json report = run.report();
  ASSERT_FALSE(report.is_discarded()) << tail(run.log());
  EXPECT_EQ(report["hang_type"], "computation") << report["stacks"]["text"].get<std::string>();
  EXPECT_EQ(report["faulty_ranks"], json::array({1})) << report["stacks"]["text"].get<std::string>();
  const auto onset = run.fault_time(1);
  ASSERT_TRUE(onset.has_value()) << "the bug never struck";
  EXPECT_GT(report["detected_at"].get<double>(), *onset);
  // From a second after the onset (rank 0 has reached its wait) to the end of the trace, every
  // observation whose paths were read shows the set at one path.
  const double settled = *onset + 1.0 - report["started_at"].get<double>();
  std::set<std::string> paths;
  int observations = 0;
  std::istringstream trace(read_file(run.dir() / "report.trace.jsonl"));
  for (std::string line; std::getline(trace, line);) {
    const json o = json::parse(line, nullptr, false);
    if (o.is_discarded() || !o.contains("path") || o.value("t", 0.0) < settled) continue;
    paths.insert(o["path"].get<std::string>());
    ++observations;
  }
  EXPECT_GE(observations, 10) << "too few observations after the onset to tell";
  EXPECT_EQ(paths.size(), 1u) << observations << " observations after the onset";
  for (int pid : rank_pids(report)) EXPECT_FALSE(alive(pid)) << "rank pid " << pid << " survived";
  EXPECT_TRUE(run.process().descendants().empty());
}

// A code with a communication thread (MPI_THREAD_MULTIPLE; tests/programs/ps_hybrid.c, server:
// every rank's server thread polls with MPI_Iprobe for ever, as Charm++'s comm thread and task
// runtimes do) whose main threads then compute for 40 s with no MPI call. Each rank is IN_MPI on
// its server thread (the paper's rule, §6), and until 2026-12-06 its place was the server's poll:
// every rank stood still there for the whole phase, and the healthy job was confirmed hung,
// "communication error: every rank waits in MPI" (at the default alpha 38 s into a 180-s phase
// after 120 s of steps; here, under the loose test of AHealthyPollingJobUnderALooseTest..., an
// alarm 1.7 s into the phase, confirmed 1.3 s later). A rank in MPI on one thread while another
// runs outside MPI is at work outside MPI for stillness now (sampler/stack_sampler.cc,
// describe_rank; RankSnapshot::at_work_outside), so the phase is no standstill.
TEST(Run, AHealthyJobWhoseCommThreadPollsThroughALongComputationIsNotAHang) {
  WatchedRun run({"--budget", "per-test", "--alpha", "0.5", "--log-level", "debug"},
                 mpirun(4, {test_program("ps_hybrid"), "server", "60", "10", "40"}));
  ASSERT_EQ(run.wait(400s), 0) << tail(run.log());
  EXPECT_EQ(run.log().find("HANG"), std::string::npos) << tail(run.log());
  expect_completed_untouched_and_watched(run);
  const std::string out = run.out();
  std::smatch line;
  ASSERT_TRUE(std::regex_search(out, line, std::regex(R"(steps (\d+) long-phase ([0-9.]+) elapsed)"))) << out;
  EXPECT_GE(std::stod(line[2].str()), 40.0) << "the long phase did not happen";
}

// The same code hung: rank 2's server stops answering 5 s in (PS_HYBRID_DEAF, a lost request), so
// rank 1's main thread polls for its reply for ever, the others block in the step's MPI_Allreduce,
// and every server polls on. Until 2026-12-07 it was never found (200 s watched): healthy, each
// rank was at its server's poll (or, from 2026-12-06, nowhere known) while its main thread
// computed, so the blocked ranks' place was one the job had been seen to leave, where the
// model-free rule never judges ranks blocked beside a busy-waiting one. With the ranks at work
// beside their polls placed where they work, the hung place is new: the rule judges it, after
// 16 x --stasis-min beside the busy-waiting rank (1 s here, so the test is short; 80 s by default).
TEST(Run, ACodeWithACommThreadWhoseServerGoesDeafIsFoundHung) {
  WatchedRun run({"--stasis-min", "1", "--log-level", "debug"},
                 mpirun(4, {test_program("ps_hybrid"), "server", "100000"}, {"PS_HYBRID_DEAF=2:5"}));
  ASSERT_EQ(run.wait(200s), kExitHang) << tail(run.log());
  const json report = run.report();
  ASSERT_FALSE(report.is_discarded()) << tail(run.log());
  EXPECT_EQ(report["hang_type"], "communication") << report["stacks"]["text"].get<std::string>();
  EXPECT_EQ(report["model"]["kind"], "early-stasis") << report["model"].dump();
  EXPECT_GT(report["detected_at"].get<double>() - report["started_at"].get<double>(), 5.0);
  // Before the fault the trace shows ranks at work beside their polls; from it on, none.
  int at_work_before = 0;
  std::istringstream trace(read_file(run.dir() / "report.trace.jsonl"));
  for (std::string line; std::getline(trace, line);) {
    const json o = json::parse(line, nullptr, false);
    if (!o.is_discarded() && o.value("t", 100.0) < 4.0) at_work_before += o.value("at_work_outside", 0) > 0 ? 1 : 0;
  }
  EXPECT_GT(at_work_before, 0) << "no rank was seen at work beside its comm thread's poll";
  for (int pid : rank_pids(report)) EXPECT_FALSE(alive(pid)) << "rank pid " << pid << " survived";
  EXPECT_TRUE(run.process().descendants().empty());
}

// The same code with a computation error: rank 1's main thread spins for ever in one loop from 5 s
// on (PS_HYBRID_SPIN) while its server thread answers on, IN_MPI in MPI_Iprobe; the others block in
// the step's MPI_Allreduce. Rank 1 is IN_MPI for S (§6) but at work outside MPI in every check of
// all ranks (stats::checked_state), so it is named: before 2026-12-07 the checks knew the states
// only, every rank was IN_MPI in them, and the hang was a "communication error" with no faulty rank.
TEST(Run, ARankWhoseMainThreadSpinsBesideItsCommThreadIsNamedFaulty) {
  WatchedRun run({"--log-level", "debug"},
                 mpirun(4, {test_program("ps_hybrid"), "server", "100000"}, {"PS_HYBRID_SPIN=1:5"}));
  ASSERT_EQ(run.wait(200s), kExitHang) << tail(run.log());
  const json report = run.report();
  ASSERT_FALSE(report.is_discarded()) << tail(run.log());
  EXPECT_EQ(report["hang_type"], "computation") << report["stacks"]["text"].get<std::string>();
  EXPECT_EQ(report["faulty_ranks"], json::array({1})) << report["stacks"]["text"].get<std::string>();
  EXPECT_GT(report["detected_at"].get<double>() - report["started_at"].get<double>(), 5.0);
  // The report shows where it works, and its comm thread's call beside it.
  const std::string stacks = report["stacks"]["text"].get<std::string>();
  EXPECT_NE(stacks.find("hybrid_compute  [1 rank: 1]"), std::string::npos) << stacks;
  EXPECT_NE(stacks.find("MPI_Iprobe  [1 rank: 1]"), std::string::npos) << stacks;
  ASSERT_TRUE(report["ranks"].is_array() && report["ranks"].size() == 4u) << report["ranks"].dump();
  EXPECT_EQ(report["ranks"][1]["state"], "OUT_MPI") << report["ranks"].dump();
  EXPECT_EQ(report["ranks"][1]["mpi_function"], "MPI_Iprobe") << report["ranks"].dump();
  for (int pid : rank_pids(report)) EXPECT_FALSE(alive(pid)) << "rank pid " << pid << " survived";
  EXPECT_TRUE(run.process().descendants().empty());
}

// The same spin going round the step's two kernels (relax_grid, scan_table) for ever, called from
// long_phase (PS_HYBRID_LOOP). The rank's place is both its threads' and stands at long_phase (a
// loop through helpers, docs/statistics.md), so the stasis evidence fires; but verification read
// the main thread's move from one kernel to the other as the comm thread's wait ending (found
// polling at another place) and judged every alarm a slowdown: never found (measured: no verdict in
// 200 s, four alarms). Verification now reads a rank at work beside its thread in MPI where that
// thread is (RankSnapshot::mpi_thread_path), so the spin is confirmed with rank 1 named.
TEST(Run, ARankWhoseMainThreadLoopsThroughHelpersBesideItsCommThreadIsFound) {
  WatchedRun run({"--log-level", "debug"},
                 mpirun(4, {test_program("ps_hybrid"), "server", "100000"}, {"PS_HYBRID_LOOP=1:5"}));
  ASSERT_EQ(run.wait(200s), kExitHang) << tail(run.log());
  const json report = run.report();
  ASSERT_FALSE(report.is_discarded()) << tail(run.log());
  const std::string stacks = report["stacks"]["text"].get<std::string>();
  EXPECT_EQ(report["hang_type"], "computation") << stacks;
  EXPECT_EQ(report["faulty_ranks"], json::array({1})) << stacks;
  EXPECT_GT(report["detected_at"].get<double>() - report["started_at"].get<double>(), 5.0);
  EXPECT_NE(stacks.find("long_phase"), std::string::npos) << stacks;
  EXPECT_NE(stacks.find("MPI_Iprobe  [1 rank: 1]"), std::string::npos) << stacks;
  for (int pid : rank_pids(report)) EXPECT_FALSE(alive(pid)) << "rank pid " << pid << " survived";
  EXPECT_TRUE(run.process().descendants().empty());
}

// A code whose ranks never block in MPI (every wait an MPI_Test or MPI_Iprobe loop with work
// between polls: tests/programs/ps_poller.c) is sampled inside MPI nearly all the time, healthy or
// hung. Watched for three minutes, it must never raise an alarm, not even one that verification
// then judges a slowdown.
void expect_three_polling_minutes_without_an_alarm(std::vector<std::string> options) {
  options.insert(options.end(), {"--log-level", "debug"});
  WatchedRun run(options, mpirun(4, {test_program("ps_poller"), "180"}));
  ASSERT_EQ(run.wait(400s), 0) << tail(run.log());
  const bool with_library = std::find(options.begin(), options.end(), "--mpi-progress") != options.end();
  // With the library every observation carries the pollers' counts (the trace's "counted").
  const std::string trace = read_file(run.dir() / "report.trace.jsonl");
  EXPECT_EQ(trace.find("\"counted\":true") != std::string::npos, with_library) << trace.substr(0, 2000);
  // Its own output, whole: one line from rank 0, after at least 180 s.
  const std::string out = run.out();
  std::smatch line;
  ASSERT_TRUE(
      std::regex_match(out, line, std::regex(R"(iterations (\d+) elapsed ([0-9.]+) residual \S+ checksum \S+\n)")))
      << "the job's own output is not intact:\n"
      << out;
  EXPECT_GE(std::stod(line[2].str()), 180.0);
  EXPECT_GT(std::stol(line[1].str()), 0);
  // No hang was reported: the short report of a job that ended by itself (as HealthyRun asserts).
  const json report = run.report();
  ASSERT_FALSE(report.is_discarded()) << tail(run.log());
  EXPECT_EQ(report["verdict"], "completed");
  EXPECT_EQ(report["exit_status"], 0);
  EXPECT_EQ(report["action_taken"], "none");
  EXPECT_EQ(report["faulty_ranks"], json::array());
  // Not one alarm about the job. One the node caused (held: it starved the job, as another test's
  // burst of processes can) is about the node, and the job's rules are not judged by it.
  int starved = 0;
  for (const auto& evidence : report["model"].value("slowdown_evidence", json::array())) {
    starved += evidence.get<std::string>().find("is short of CPU") != std::string::npos ? 1 : 0;
  }
  EXPECT_EQ(report["model"].value("alarms", -1), starved) << report["model"].dump();
  EXPECT_GT(report["model"]["observations"].get<int>(), 60);  // it was watched, not ignored
  const auto& coverage = report["coverage"];
  EXPECT_TRUE(!coverage["stasis_since"].is_null() || !coverage["model_since"].is_null())
      << "no test could ever have fired: " << coverage.dump();
  // And the log announces neither a hang nor an alarm.
  std::istringstream log(run.log());
  std::string text;
  std::string alarms;
  while (std::getline(log, text)) {
    const bool alarm = text.find("alarm at") != std::string::npos && text.find("is short of CPU") == std::string::npos;
    if (text.find("HANG") != std::string::npos || alarm) alarms += text + "\n";
  }
  EXPECT_EQ(alarms, "") << "the log raised alarms about the job";
}

TEST(Run, AnAllPollingHealthyJobRunsThreeMinutesWithoutAnAlarm) { expect_three_polling_minutes_without_an_alarm({}); }

// The same with the progress library: its counts make every poller an active rank, still while
// nothing completes (stats/set_signature.h), so the model-free rule watches this code as it
// watches one whose ranks block; healthy, their tests keep succeeding and nothing ever stands.
TEST(Run, AnAllPollingHealthyJobWithTheProgressLibraryRunsThreeMinutesWithoutAnAlarm) {
  expect_three_polling_minutes_without_an_alarm({"--mpi-progress", "--mpi-progress-library", PARASTACK_PROGRESS_LIB});
}

// The same healthy polling job under a test made loose on purpose (alpha 0.5 for each test, not per
// job): its ordinary runs of S = 0 raise an alarm every few seconds, and verification must judge
// every one a slowdown, though its ranks sit in MPI_Test and MPI_Iprobe nearly all the time and are
// rarely caught in a call that is not a poll. What shows them alive is that they keep polling at
// other places: a rank that polls for its halo, then for the global sum, left the first wait
// (verification.h). Before that rule the first such alarm was confirmed as a communication hang
// 40.8 s into the job (and a healthy 10-minute run was once killed at the default alpha).
//
// How often the loose test fires depends on the node (here 11-17 alarms in 120 s, the first after
// 20-30 s; CI once saw none in 120 s), so the job is not given a fixed length: it runs until
// verification has judged kJudged alarms, or 300 s, and is then told to stop (ps_poller's stop
// file, all ranks together, as at the end of its time).
TEST(Run, AHealthyPollingJobUnderALooseTestIsNeverConfirmedHung) {
  constexpr std::size_t kJudged = 8;
  TempDir control;
  const auto stop = control.path() / "stop";
  WatchedRun run({"--budget", "per-test", "--alpha", "0.5", "--log-level", "debug"},
                 mpirun(4, {test_program("ps_poller"), "300"}, {"PS_POLLER_STOP_FILE"}),
                 {"PS_POLLER_STOP_FILE=" + stop.string()});
  const auto judged = [&] { return parastack::testing::occurrences(run.log(), "info: alarm at t="); };
  const auto deadline = std::chrono::steady_clock::now() + 300s;
  while (judged() < kJudged && run.process().running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(100ms);
  }
  std::ofstream(stop).put('\n');
  ASSERT_EQ(run.wait(300s), 0) << tail(run.log());
  const std::string log = run.log();
  EXPECT_EQ(log.find("HANG"), std::string::npos) << tail(log);
  const json report = run.report();
  ASSERT_FALSE(report.is_discarded()) << tail(log);
  EXPECT_EQ(report["verdict"], "completed");
  const int alarms = report["model"].value("alarms", -1);
  EXPECT_GE(alarms, 1) << "no alarm: the loose test never fired and verification was not exercised\n"
                       << report["model"].dump() << "\n"
                       << report["coverage"].dump() << "\n"
                       << tail(log);
  EXPECT_EQ(report["model"].value("slowdowns", -1), alarms) << report["model"].dump();
  EXPECT_NE(run.out().find("iterations "), std::string::npos) << run.out();
  std::size_t by_place = 0;
  for (auto at = log.find("at another place"); at != std::string::npos; at = log.find("at another place", at + 1)) {
    ++by_place;
  }
  std::cout << alarms << " alarms, all judged slowdowns; " << by_place << " by a rank polling at another place; "
            << run.out();
}

// CI once confirmed a hang in the healthy all-polling job above and killed it: for 7.6 s every
// sample found all four ranks in MPI_Test (73 in a row, against a healthy chance of 0.75 each)
// while other tests loaded the node. Ranks that yield the CPU in MPI_Test (Open MPI does on an
// oversubscribed node) wait their turn inside it, so a node that stops running them makes a
// healthy polling job look exactly like a hung one, for as long as the load lasts, and the stacks
// of busy-waiting ranks cannot show otherwise. Here the load is made to last: three CPU hogs at
// nice -10 and three fork loops come once the model is built and stay until the watchdog has
// judged an alarm. It must say that the node starved the job, and let it finish. Runs alone
// (RUN_SERIAL in tests/CMakeLists.txt): its load would slow every test beside it. How long the
// alarm takes depends on the machine (the streak it needs was 442-457 observations 0.15 s apart on
// a loaded CI machine, 2026-12-05, past the end of the 120-s job this test once ran), so the job
// has no fixed length: it stops when the test has seen what it waited for (ps_poller's stop file).
TEST(RunStarved, AHealthyPollingJobItsNodeStopsRunningIsNotJudged) {
  if (::geteuid() != 0) GTEST_SKIP() << "raising CPU hogs to nice -10 needs root (CI runs as root)";
  TempDir control;
  const auto stop = control.path() / "stop";
  WatchedRun run({"--log-level", "debug"}, mpirun(4, {test_program("ps_poller"), "900"}, {"PS_POLLER_STOP_FILE"}),
                 {"PS_POLLER_STOP_FILE=" + stop.string()});
  const auto waiting_until = [&](const std::function<bool()>& done, std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done() && run.process().running() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(100ms);
    }
    return done();
  };
  const auto waiting_for = [&](const std::string& text, std::chrono::seconds limit) {
    return waiting_until([&] { return run.log().find(text) != std::string::npos; }, limit);
  };
  // A model of 300 samples (about 30 s): a young model's k is in the hundreds, and the load would
  // have to last minutes to raise an alarm.
  const auto model_samples = [&] {
    const std::string log = run.log();
    const auto at = log.rfind("model_samples=");
    return at == std::string::npos ? 0L : std::strtol(log.c_str() + at + std::strlen("model_samples="), nullptr, 10);
  };
  ASSERT_TRUE(waiting_until([&] { return model_samples() >= 300; }, 180s)) << tail(run.log());
  {
    ChildProcess load({"sh", "-c",
                       "for i in 1 2 3; do nice -n -10 sh -c 'while :; do :; done' & done; "
                       "for i in 1 2 3; do sh -c 'while :; do /bin/true; done' & done; wait"});
    ASSERT_TRUE(waiting_for("alarm at", 300s)) << "the load never raised an alarm: nothing was tested\n"
                                               << tail(run.log());
  }  // the hogs and fork loops are killed here, or when a failed assertion leaves the scope
  std::ofstream(stop).put('\n');  // a failed assertion above leaves the job to WatchedRun's end
  ASSERT_EQ(run.wait(300s), 0) << tail(run.log());
  const std::string log = run.log();
  EXPECT_EQ(log.find("HANG"), std::string::npos) << tail(log);
  const auto starved = log.find("is short of CPU");
  ASSERT_NE(starved, std::string::npos) << tail(log);
  std::cout << log.substr(log.rfind('\n', starved) + 1, log.find('\n', starved) - log.rfind('\n', starved)) << "\n";
  EXPECT_EQ(run.report()["verdict"], "completed") << tail(log);
  EXPECT_NE(run.out().find("iterations "), std::string::npos) << run.out();
}

// A communication hang the fault of `rank` began (its fault file's time): confirmed as one within
// `bound` seconds (a sanity bound; the delay is printed), every rank killed, nothing left behind.
// The report is left in `report` for the caller's own checks.
void expect_communication_hang_found(WatchedRun& run, int rank, double bound, json& report) {
  ASSERT_EQ(run.wait(180s), kExitHang) << "fault fired: " << run.fault_time(rank).has_value() << "\n"
                                       << tail(run.log());
  report = run.report();
  ASSERT_FALSE(report.is_discarded()) << tail(run.log());
  EXPECT_EQ(report["verdict"], "hang");
  EXPECT_EQ(report["hang_type"], "communication") << report["stacks"]["text"].get<std::string>();
  const auto onset = run.fault_time(rank);
  ASSERT_TRUE(onset.has_value()) << "the fault never fired";
  const double delay = report["detected_at"].get<double>() - *onset;
  EXPECT_GT(delay, 0.0);
  EXPECT_LT(delay, bound) << tail(run.log());
  std::cout << "detected " << delay << " s after the fault\n";
  for (int pid : rank_pids(report)) EXPECT_FALSE(alive(pid)) << "rank pid " << pid << " survived";
  EXPECT_TRUE(run.process().descendants().empty());
}

// hpcc's deadlock beside pollers (tests/programs/ps_poller.c --deadlock): rank 1 blocks in a
// receive nobody sends 3 s after the start, the others poll for its halo for ever, hopping between
// MPI_Test, MPI_Iprobe and their work. With the library their counts stand still, so the hang is
// found by the model-free rule within seconds; the report names no poller as least progressed
// (their page does not say on whom they wait).
TEST(Run, WithTheProgressLibraryADeadlockBesidePollersIsFound) {
  WatchedRun run({"--mpi-progress", "--mpi-progress-library", PARASTACK_PROGRESS_LIB, "--log-level", "debug"},
                 mpirun(4, {test_program("ps_poller"), "600", "--deadlock", "1", "3"}));
  json report;
  ASSERT_NO_FATAL_FAILURE(expect_communication_hang_found(run, 1, 60, report));
  const auto& behind = report["least_progressed"];
  EXPECT_EQ(behind["source"], "mpi-progress") << behind.dump();
  for (const auto& r : behind["ranks"]) EXPECT_EQ(r, 1) << "a poller named least progressed: " << behind.dump();
}

// The deadlock a user's first test program often has: rank 1 enters a receive nobody sends at its
// first MPI call after MPI_Init. No sample ever shows a rank moving, so without the library the
// job is never watched (a loop around one MPI call looks the same: docs/statistics.md, Known
// limits); with it every rank's count stands still from the first sample, which such a loop's
// never does, and the model-free rule finds the hang after its plain minimum.
TEST(Run, WithTheProgressLibraryADeadlockAtTheFirstMpiCallIsFound) {
  WatchedRun run({"--mpi-progress", "--mpi-progress-library", PARASTACK_PROGRESS_LIB, "--log-level", "debug"},
                 mpirun(4, {test_program("ps_solver"), "blocking", "600"}, fault("deadlock", 1, 0)));
  json report;
  expect_communication_hang_found(run, 1, 60, report);
}

// The same job without the library is never watched (docs/statistics.md, Known limits), and the
// log says so, and why, after a minute of it, not only at the job's end: a user waiting for a
// verdict on a test job learns that none can come, and what would change that. The job is then
// ended from outside (its launcher and ranks get SIGTERM, as from a user's scancel), and the report
// says it was never watched.
TEST(Run, AJobHungAtItsFirstMpiCallSaysWithinAMinuteThatItIsNotWatched) {
  WatchedRun run({}, mpirun(4, {test_program("ps_solver"), "blocking", "600"}, fault("deadlock", 1, 0)));
  const auto deadline = std::chrono::steady_clock::now() + 150s;
  const auto said = [&] { return run.log().find("not watched for the last") != std::string::npos; };
  while (!said() && run.process().running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_TRUE(said()) << tail(run.log());
  const std::string log = run.log();
  const std::string notice = log.substr(log.find("not watched for the last"));
  EXPECT_NE(notice.substr(0, notice.find('\n')).find("--mpi-progress"), std::string::npos) << notice;
  for (pid_t pid : run.process().descendants()) ::kill(pid, SIGTERM);
  run.wait(60s);
  const json report = run.report();
  ASSERT_FALSE(report.is_discarded()) << tail(run.log());
  EXPECT_NE(report["verdict"], "hang");
  EXPECT_EQ(report["coverage"]["watched_seconds"].get<double>(), 0.0) << report["coverage"].dump();
  EXPECT_TRUE(run.process().descendants().empty());
}

// A user's SIGTERM (or Ctrl-C's SIGINT sent to parastack alone) to a watched healthy job: passed on
// to mpirun, which ends the job; parastack's exit status is the job's, and its log and report say
// that the end came by a signal passed on (the report read "completed, exit status 1, no alarm",
// an ordinary end, until 2026-12-07).
TEST(Run, ASignalToParastackIsPassedOnAndTheReportSaysSo) {
  WatchedRun run({}, mpirun(4, {test_program("ps_solver"), "blocking", "600"}));
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  const auto found = [&] { return run.log().find("found 4 rank(s)") != std::string::npos; };
  while (!found() && run.process().running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(found()) << tail(run.log());
  ASSERT_EQ(::kill(run.process().pid(), SIGTERM), 0);
  const int status = run.wait(60s);
  EXPECT_NE(status, 0);
  EXPECT_NE(status, kExitHang);
  const std::string log = run.log();
  EXPECT_NE(log.find("SIGTERM sent to parastack, passed on to the command: it ended with status"), std::string::npos)
      << tail(log);
  const json report = run.report();
  ASSERT_FALSE(report.is_discarded()) << tail(log);
  EXPECT_EQ(report["verdict"], "completed");
  EXPECT_EQ(report["notes"], json::array({"SIGTERM sent to parastack, passed on to the command"})) << report["notes"];
  EXPECT_TRUE(run.process().descendants().empty());
}

// The other first test program: rank 1 spins outside MPI from its first MPI call after MPI_Init
// while the others block in MPI for it. No sample shows a rank moving either, but a rank standing
// at one place outside MPI is no loop around one MPI call: the model-free rule judges it at four
// times its length (20 s) before the job has moved. Until 2026-12-07 it was never watched (no
// verdict in 100 s, `the job ended without ever being watched`).
TEST(Run, ARankSpinningFromItsFirstMpiCallIsFound) {
  WatchedRun run({"--log-level", "debug"},
                 mpirun(4, {test_program("ps_solver"), "blocking", "600"}, fault("spin", 1, 0)));
  ASSERT_EQ(run.wait(180s), kExitHang) << "fault fired: " << run.fault_time(1).has_value() << "\n" << tail(run.log());
  const json report = run.report();
  ASSERT_FALSE(report.is_discarded()) << tail(run.log());
  EXPECT_EQ(report["hang_type"], "computation") << report["stacks"]["text"].get<std::string>();
  EXPECT_EQ(report["faulty_ranks"], json::array({1})) << report["stacks"]["text"].get<std::string>();
  const json& run_evidence = report["model"]["stasis_run"];
  EXPECT_EQ(report["model"]["kind"], "early-stasis") << report["model"].dump();
  EXPECT_TRUE(run_evidence["early_before_movement"].get<bool>()) << run_evidence.dump();
  EXPECT_GE(run_evidence["early_needed"].get<double>(), 20.0) << run_evidence.dump();
  const auto onset = run.fault_time(1);
  ASSERT_TRUE(onset.has_value()) << "the fault never fired";
  const double delay = report["detected_at"].get<double>() - *onset;
  EXPECT_GE(delay, 20.0) << "judged before four times the rule's minimum\n" << tail(run.log());
  EXPECT_LT(delay, 120.0) << tail(run.log());  // a sanity bound: about 21 s on a quiet machine
  std::cout << "detected " << delay << " s after the fault\n";
  for (int pid : rank_pids(report)) EXPECT_FALSE(alive(pid)) << "rank pid " << pid << " survived";
  EXPECT_TRUE(run.process().descendants().empty());
}

// The classic first test program at 4 ranks: two ranks receive from each other, the other two
// finish and wait in MPI_Finalize. A rank there has done its part (stats/set_signature.h,
// Observation::finished): beside it nobody can be working unseen, so with the library the
// model-free rule gives the pair its plain minimum. Until 2026-12-01 such a rank was one that
// "could not be placed", the rule never fired beside it, and only the S test found the hang (5.3 s
// after the fault on an idle node, 26.4 s beside the simulator).
TEST(Run, WithTheProgressLibraryADeadlockedPairBesideRanksInMpiFinalizeIsFound) {
  WatchedRun run({"--mpi-progress", "--mpi-progress-library", PARASTACK_PROGRESS_LIB, "--log-level", "debug"},
                 mpirun(4, {test_program("ps_progress"), "--fault", "deadlock-pair-finalize", "--fault-rank", "1",
                            "--fault-after", "3"}));
  json report;
  expect_communication_hang_found(run, 1, 60, report);
}

// A ps_finale serial end that ran to completion: no hang, the log says the serial end is not
// judged, the report says completed, and rank 0 printed its summary. Returns the report.
json expect_a_serial_end_left_alone(WatchedRun& run) {
  const std::string log = run.log();
  EXPECT_EQ(log.find("HANG"), std::string::npos) << tail(log);
  EXPECT_NE(log.find("the job's serial end is not judged"), std::string::npos) << tail(log);
  const json report = run.report();
  EXPECT_FALSE(report.is_discarded()) << tail(log);
  EXPECT_EQ(report.value("verdict", ""), "completed");
  EXPECT_NE(run.out().find("summary "), std::string::npos) << run.out();
  return report;
}

// The last message never sent: rank 0 waits in MPI_Recv for a result that rank 1 never sends,
// while ranks 1..3 have gone on to MPI_Finalize and wait there for it (tests/programs/ps_finale.c).
// Without the progress library, as a new user runs it, and a communication-bound code (20 us of
// compute a step): its ranks sit in MPI so often that S = 0 is common in health and the S test
// needs a streak of about 190 samples (19 s). The model-free rule must find it first: the finished
// ranks make the set readable (stats/set_signature.h). Until 2026-12-01 they had no path, so too few
// ranks were known for any stasis evidence, and only the S test could find it (a variant whose
// S never varied enough to build a model was not found in 150 s).
TEST(Run, ARankWaitingForAMessageNeverSentWhileTheOthersFinishIsFound) {
  WatchedRun run({"--log-level", "debug"}, mpirun(4, {test_program("ps_finale"), "--healthy-seconds", "5",
                                                      "--compute-ms", "0.02", "--end", "last-message"}));
  json report;
  ASSERT_NO_FATAL_FAILURE(expect_communication_hang_found(run, 0, 60, report));
  EXPECT_EQ(report["model"]["kind"], "early-stasis") << report["model"].dump();
  EXPECT_NE(run.out().find("iterations "), std::string::npos) << run.out();
}

// The same ending at the job's first MPI call, as a user's first test program has it: rank 0
// receives what rank 1 never sends, ranks 1..3 go on to MPI_Finalize, and the job never shows its
// ranks moving. A loop around one MPI call site looks like that from the stacks, so a standstill
// of ranks all in MPI is not judged then; beside ranks in MPI_Finalize it is no such loop, and is
// judged at four times the model-free rule's length. Until 2026-12-07 the job was never watched
// (130 s: `the job ended without ever being watched`).
TEST(Run, ARankWaitingAtItsFirstCallForAMessageNeverSentWhileTheOthersFinishIsFound) {
  WatchedRun run({"--log-level", "debug"},
                 mpirun(4, {test_program("ps_finale"), "--healthy-seconds", "0", "--end", "last-message"}));
  json report;
  ASSERT_NO_FATAL_FAILURE(expect_communication_hang_found(run, 0, 120, report));
  EXPECT_EQ(report["model"]["kind"], "early-stasis") << report["model"].dump();
  const json& run_evidence = report["model"]["stasis_run"];
  EXPECT_TRUE(run_evidence["early_before_movement"].get<bool>()) << run_evidence.dump();
  EXPECT_GE(run_evidence["early_needed"].get<double>(), 20.0) << run_evidence.dump();
  EXPECT_GE(report["detected_at"].get<double>() - *run.fault_time(0), 20.0) << "judged before four times the minimum";
  // Rank 0 still waits; the finished ranks are not behind it, wherever the compiler put their call.
  EXPECT_EQ(report["least_progressed"]["ranks"], json::array({0})) << report["least_progressed"].dump();
}

// Its healthy twin: rank 0 sums up alone for 40 s from its first call while ranks 1..3 wait in
// MPI_Finalize. The job never showed its ranks moving either, but a rank at work beside finished
// ones is the job's serial end, never judged, also before movement.
TEST(Run, ARankWorkingAloneFromTheStartWhileTheOthersFinishIsNotAHang) {
  WatchedRun run({"--log-level", "debug"}, mpirun(4, {test_program("ps_finale"), "--healthy-seconds", "0", "--end",
                                                      "serial", "--serial-seconds", "40"}));
  ASSERT_EQ(run.wait(240s), 0) << tail(run.log());
  expect_a_serial_end_left_alone(run);
}

// Ends ps_finale's healthy part (--healthy-until) once every set's S model is built. Before that an
// ending is a different case: a set still building sees no alarm and nothing is withdrawn (a
// loaded CI machine, 2026-12-02, built it later than the 5 s the tests once gave it).
void end_the_healthy_part_once_the_model_is_built(WatchedRun& run, const Trigger& end) {
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (run.log().find("model built after") == std::string::npos) {
    ASSERT_TRUE(run.process().running()) << "the watchdog ended before its model was built:\n" << run.log();
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "no model in 120 s:\n" << run.log();
    std::this_thread::sleep_for(200ms);
  }
  end.fire();
}

// A job's serial end: rank 0 works alone for 30 s in one loop, with no I/O and no new memory,
// while ranks 1..3 wait in MPI_Finalize; then it prints its result and finishes. To stacks this is
// exactly a rank spinning while the others wait, and until 2026-12-01 the S model called it that:
// confirmed a computation hang of rank 0 13 s into it and killed the job (with the progress
// library too). Such observations are no evidence now (Observation::serial_end), and the report
// says that the end went unwatched, and why.
TEST(Run, ARankWorkingAloneWhileTheOthersFinishIsNotAHang) {
  Trigger model_built;
  WatchedRun run({"--log-level", "debug"},
                 mpirun(4, {test_program("ps_finale"), "--healthy-seconds", "5", "--healthy-until", model_built.path(),
                            "--end", "serial", "--serial-seconds", "30"}));
  ASSERT_NO_FATAL_FAILURE(end_the_healthy_part_once_the_model_is_built(run, model_built));
  ASSERT_EQ(run.wait(180s), 0) << tail(run.log());
  const json report = expect_a_serial_end_left_alone(run);
  EXPECT_GE(report["coverage"]["unwatched_seconds"].get<double>(), 25.0) << report["coverage"].dump();
  EXPECT_NE(report["coverage"]["why_unwatched"].get<std::string>().find("serial end"), std::string::npos)
      << report["coverage"].dump();
}

// The same serial end in a job too large to sample whole (24 ranks: two sets of 10, `--seed 1`
// puts rank 0 in one of them): the set without rank 0 sees only ranks in MPI_Finalize, S = 0,
// and raises an alarm, which the checks of all ranks, finding rank 0 at work beside them, withdraw
// as the job's serial end (stats::Watchdog); the set with rank 0 is in the serial end by itself.
// Until 2026-12-01 the 4-rank fix alone left this job to be killed as rank 0's computation hang.
TEST(Run, ARankWorkingAloneWhileTwentyThreeOthersFinishIsNotAHang) {
  Trigger model_built;
  WatchedRun run({"--seed", "1", "--log-level", "debug"},
                 mpirun(24, {test_program("ps_finale"), "--healthy-seconds", "5", "--healthy-until", model_built.path(),
                             "--end", "serial", "--serial-seconds", "30"}));
  ASSERT_NO_FATAL_FAILURE(end_the_healthy_part_once_the_model_is_built(run, model_built));
  ASSERT_EQ(run.wait(240s), 0) << tail(run.log());
  const std::string log = run.log();
  EXPECT_EQ(log.find("HANG"), std::string::npos) << tail(log);
  EXPECT_NE(log.find("is the job's serial end (sampled ranks wait in MPI_Finalize while rank(s) 0 work"),
            std::string::npos)
      << tail(log);
  const json report = run.report();
  ASSERT_FALSE(report.is_discarded()) << tail(log);
  EXPECT_EQ(report["verdict"], "completed");
  EXPECT_GE(report["coverage"]["unwatched_seconds"].get<double>(), 20.0) << report["coverage"].dump();
  EXPECT_NE(run.out().find("summary "), std::string::npos) << run.out();
}

// LAMMPS (Debian's lmp, built against Open MPI): a real application this project did not write.
// The classic Lennard-Jones melt: every step computes forces locally and exchanges ghost atoms.
// (hpcc was tried first and is a poor subject: its opening RandomAccess phases keep every rank
// inside MPI nearly all the time, a constant sample sequence from which no model can be built;
// docs/user-guide.md says what that means.)
const char* kMeltInput = R"(units           lj
atom_style      atomic
lattice         fcc 0.8442
region          box block 0 16 0 16 0 16
create_box      1 box
create_atoms    1 box
mass            1 1.0
velocity        all create 3.0 87287 loop geom
pair_style      lj/cut 2.5
pair_coeff      1 1 1.0 1.0 2.5
neighbor        0.3 bin
neigh_modify    every 20 delay 0 check no
fix             1 all nve
thermo          1000
run             %d
)";

class Lammps : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access("/usr/bin/lmp", X_OK) != 0)
      GTEST_FAIL() << "LAMMPS is not installed (packaging/bootstrap.sh installs it)";
  }
  // lmp reads its input from a file written into the run's scratch directory.
  static std::vector<std::string> job(int steps, const std::vector<std::string>& forwarded = {}) {
    char input[2048];
    std::snprintf(input, sizeof input, kMeltInput, steps);
    std::string command = "printf '%s' '" + std::string(input) + "' > in.melt && exec";
    for (const auto& a : mpirun(4, {"/usr/bin/lmp", "-in", "in.melt", "-log", "none"}, forwarded)) command += " " + a;
    return {"sh", "-c", command};
  }
};

TEST_F(Lammps, RunsHealthyWithoutAFalseAlarm) {
  WatchedRun run({}, job(9000));
  ASSERT_EQ(run.wait(900s), 0) << run.log();
  EXPECT_EQ(run.report()["verdict"], "completed") << run.log();
  EXPECT_NE(run.log().find("model built"), std::string::npos) << "it was never really tested:\n" << run.log();
  EXPECT_NE(run.out().find("Loop time of"), std::string::npos) << run.out();
}

TEST_F(Lammps, AnInjectedHangIsDetectedWithTheRightRank) {
  // Fired once the model holds 60 samples per set. One right after the model is built is
  // detected too, but slowly: the loosest tolerance (e = 0.3) makes q near 1 and k in the
  // hundreds (measured on LAMMPS: k = 587, about 8 minutes).
  Trigger trigger;
  WatchedRun run({"--log-level", "debug"}, job(200000, trigger.fault("spin", 1)));
  fire_when_model_ready(run, trigger, 60);
  ASSERT_EQ(run.wait(600s), kExitHang) << run.log();
  const json report = run.report();
  EXPECT_EQ(report["hang_type"], "computation");
  EXPECT_EQ(report["faulty_ranks"], json::array({1})) << report["stacks"]["text"].get<std::string>();
  EXPECT_GT(report["detected_at"].get<double>(), run.fault_time(1).value_or(1e300));
  EXPECT_TRUE(run.process().descendants().empty());
}

// The MPIs users bring besides the one parastack is built with. The progress library is compiled for
// Open MPI; in any other MPI job it must only pass calls on, and it must find Open MPI where Python
// put it. Before 2026-12-05 `--mpi-progress` (or a site's mpi-progress=on) killed such jobs: an
// mpi4py job and an MPICH Fortran job aborted in MPI_Init ("an MPI function was called without an
// MPI library"), and an MPICH rank whose request handles end at unreadable memory crashed (SIGSEGV)
// on the library's 8-byte reads of 4-byte handles.

// A healthy job under --mpi-progress runs to its end and prints `output`.
void expect_untouched_by_the_progress_library(const std::vector<std::string>& job, const std::string& output) {
  SCOPED_TRACE(job.at(job.size() - 2));
  WatchedRun run({"--mpi-progress", "--mpi-progress-library", PARASTACK_PROGRESS_LIB}, job);
  ASSERT_EQ(run.wait(120s), 0) << run.out() << run.log();
  EXPECT_NE(run.out().find(output), std::string::npos) << run.out() << run.log();
  EXPECT_TRUE(run.process().descendants().empty());
}

// ps_ring.py spin: rank 1 spins in converge() (or `loop`'s function), found and named where its
// developer wrote it (function and file), the others waiting in `others_wait_in` if given (mpi4py's
// allreduce of an object is its own point-to-point calls); the job is killed.
void expect_python_spin_of_rank_one_found(WatchedRun& run, const char* others_wait_in = nullptr,
                                          const std::string& function = "converge") {
  ASSERT_EQ(run.wait(300s), kExitHang) << run.log();
  const json report = run.report();
  ASSERT_FALSE(report.is_discarded()) << run.log();
  const std::string stacks = report["stacks"]["text"].get<std::string>();
  EXPECT_EQ(report["hang_type"], "computation") << stacks;
  EXPECT_EQ(report["faulty_ranks"], json::array({1})) << stacks;
  EXPECT_GT(report["detected_at"].get<double>(), run.fault_time(1).value_or(1e300));
  EXPECT_NE(stacks.find(function + " (" + test_program("ps_ring.py") + ":"), std::string::npos) << stacks;
  if (others_wait_in) {
    EXPECT_NE(stacks.find(others_wait_in), std::string::npos) << stacks;
  }
  for (int pid : rank_pids(report)) EXPECT_FALSE(alive(pid)) << "rank pid " << pid << " survived";
  EXPECT_TRUE(run.process().descendants().empty());
}

// Python's mpi4py loads libmpi with dlopen(RTLD_LOCAL), out of the preloaded library's sight.
class Mpi4py : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access("/usr/lib/python3/dist-packages/mpi4py/__init__.py", R_OK) != 0)
      GTEST_FAIL() << "mpi4py is not installed (packaging/bootstrap.sh test installs python3-mpi4py)";
  }
  static std::vector<std::string> ring(const std::string& mode, const std::string& seconds) {
    return mpirun(4, {"/usr/bin/python3", test_program("ps_ring.py"), mode, seconds});
  }
};

TEST_F(Mpi4py, AHealthyJobWithTheProgressLibraryRunsToItsEnd) {
  WatchedRun run({"--mpi-progress", "--mpi-progress-library", PARASTACK_PROGRESS_LIB}, ring("healthy", "5"));
  ASSERT_EQ(run.wait(120s), 0) << run.log();
  EXPECT_NE(run.out().find("ring ok "), std::string::npos) << run.out() << run.log();
  EXPECT_EQ(run.log().find("without an MPI library"), std::string::npos) << run.log();
  EXPECT_NE(run.log().find("found 4 rank(s)"), std::string::npos) << run.log();
  EXPECT_EQ(run.report()["verdict"], "completed") << run.log();
}

// And the library keeps its page there, so the report names the rank that started the deadlock.
TEST_F(Mpi4py, WithTheProgressLibraryADeadlockIsFoundAndItsRankNamed) {
  WatchedRun run({"--mpi-progress", "--mpi-progress-library", PARASTACK_PROGRESS_LIB}, ring("deadlock", "3"));
  ASSERT_EQ(run.wait(180s), kExitHang) << run.log();
  const json report = run.report();
  ASSERT_FALSE(report.is_discarded()) << run.log();
  EXPECT_EQ(report["hang_type"], "communication") << report["stacks"]["text"].get<std::string>();
  const auto& behind = report["least_progressed"];
  EXPECT_EQ(behind["source"], "mpi-progress") << behind.dump();
  EXPECT_EQ(behind["pages_read"], 4) << behind.dump();
  EXPECT_EQ(behind["ranks"], json::array({1})) << behind.dump();
  for (int pid : rank_pids(report)) EXPECT_FALSE(alive(pid)) << "rank pid " << pid << " survived";
  EXPECT_TRUE(run.process().descendants().empty());
}

// A ring that calls libmpi through ctypes looks its functions up in libmpi itself, past the
// preloaded library's wrappers: the page is never initialised. The report says so, and did not
// tell the user to use the --mpi-progress they had used; the stacks still name the rank.
TEST_F(Mpi4py, ARingCallingMpiThroughCtypesHasNoPageAndTheReportDoesNotAskForTheLibrary) {
  WatchedRun run({"--mpi-progress", "--mpi-progress-library", PARASTACK_PROGRESS_LIB},
                 mpirun(4, {"/usr/bin/python3", test_program("ps_ring.py"), "deadlock", "3"}, {"PS_RING_MPI=ctypes"}));
  ASSERT_EQ(run.wait(180s), kExitHang) << run.log();
  const json report = run.report();
  ASSERT_FALSE(report.is_discarded()) << run.log();
  const auto& behind = report["least_progressed"];
  EXPECT_EQ(behind["pages_read"], 0) << behind.dump();
  EXPECT_NE(behind["no_pages_why"].get<std::string>().find("not initialised"), std::string::npos) << behind.dump();
  EXPECT_NE(behind["no_pages_why"].get<std::string>().find("past the library's wrappers, as through ctypes"),
            std::string::npos)
      << "the reason names this case too: " << behind.dump();
  EXPECT_EQ(behind["ranks"], json::array({1})) << behind.dump();
  const std::string text = read_file(run.dir() / "report.txt");
  EXPECT_NE(text.find("MPI progress library: no page read (rank 0: the page is not initialised"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("--mpi-progress names"), std::string::npos) << text;
  EXPECT_TRUE(run.process().descendants().empty());
}

// Without it, the stacks: rank 1 waits at an earlier line of main() than the others. A Python
// frame's name carries its line, so until 2026-12-06 the two looked like two functions and the
// report named nobody ("places the stacks cannot order").
TEST_F(Mpi4py, WithoutTheProgressLibraryTheStacksNameTheDeadlocksRank) {
  WatchedRun run({}, ring("deadlock", "3"));
  ASSERT_EQ(run.wait(180s), kExitHang) << run.log();
  const json report = run.report();
  ASSERT_FALSE(report.is_discarded()) << run.log();
  EXPECT_EQ(report["hang_type"], "communication");
  const auto& behind = report["least_progressed"];
  EXPECT_EQ(behind["source"], "stacks") << behind.dump();
  EXPECT_EQ(behind["ranks"], json::array({1})) << behind.dump();
  EXPECT_NE(behind["stacks"]["why"].get<std::string>().find("in code order rank(s) 1 wait at main ("),
            std::string::npos)
      << behind.dump();
  EXPECT_TRUE(run.process().descendants().empty());
}

// A Python rank's place is its Python stack (sampler/python_stack.h). Its C stack is the
// interpreter's, a new place at nearly every sample, so before 2026-12-05 a rank spinning in Python
// never looked still; and S could not see it either: healthy, these ranks mostly wait in MPI
// (S = 0 in 70 % of observations), so the hang's S = 1/4 is no suspicion. Not found in 6 minutes.
TEST_F(Mpi4py, ARankSpinningInPythonStandsStillAndIsFoundWithItsPythonFunction) {
  WatchedRun run({}, ring("spin", "8"));
  expect_python_spin_of_rank_one_found(run);
}

// The same spin written as a solver writes it: the loop calls Python helpers on every pass, so
// samples find the rank in the loop or in either helper, three places. Each helper's frame knows
// the loop's place (python_stack.h, PythonPlace), so the rank stands still at the loop
// (docs/statistics.md, "A loop through helpers"). Until 2026-12-07 Python frames had no places
// around them, and S sees nothing here (above).
TEST_F(Mpi4py, ARankLoopingThroughPythonHelpersIsFoundAtItsLoop) {
  WatchedRun run({}, ring("loop", "8"));
  expect_python_spin_of_rank_one_found(run, nullptr, "solve_forever");
}

// The same with a C extension's kernel on every pass (OpenSSL's SHA-256 through hashlib, as a numpy
// solver's matrix product): a sample in the kernel has its Python caller one call out.
TEST_F(Mpi4py, ARankLoopingThroughAnExtensionsKernelIsFoundAtItsLoop) {
  WatchedRun run({}, ring("loop-kernel", "8"));
  expect_python_spin_of_rank_one_found(run, nullptr, "solve_with_a_kernel_forever");
}

// And a healthy one is watched (its ranks move between Python places) and left to finish.
TEST_F(Mpi4py, AHealthyJobIsWatchedAndCompletesUntouched) {
  WatchedRun run({}, ring("healthy", "30"));
  ASSERT_EQ(run.wait(180s), 0) << run.log();
  EXPECT_NE(run.out().find("ring ok "), std::string::npos) << run.out() << run.log();
  expect_completed_untouched_and_watched(run);
  EXPECT_TRUE(run.process().descendants().empty());
}

// The spin above in a real 4-rank job under each CPython named (testing::test_pythons(): 3.11
// flags a run's first frame, 3.12 ends it with a shim frame, 3.13 has no _PyCFrame and checks its
// own offsets). The ring calls libmpi through ctypes (ps_ring.py, PS_RING_MPI=ctypes), since mpi4py
// is built for Debian's python3 only: the rank loads libmpi with dlopen as its first MPI call
// begins, after it may have been found and sampled.
TEST(PythonRanks, ASpinInEachCPythonNamedIsFoundWithItsPythonFunction) {
  for (const std::string& python : testing::test_pythons()) {
    SCOPED_TRACE(python);
    WatchedRun run({}, mpirun(4, {python, test_program("ps_ring.py"), "spin", "8"}, {"PS_RING_MPI=ctypes"}));
    expect_python_spin_of_rank_one_found(run, "MPI_Allreduce");
  }
}

// MPICH (Debian's mpich: mpiexec.hydra, ranks known by PMI_RANK), programs built with mpicc.mpich.
class Mpich : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access("/usr/bin/mpiexec.hydra", X_OK) != 0 || ::access(test_program("ps_solver_mpich").c_str(), X_OK) != 0)
      GTEST_FAIL() << "MPICH is not installed, or the test programs were built without it (packaging/bootstrap.sh "
                      "test installs mpich and libmpich-dev before it configures the build)";
  }
  // hydra passes -genv NAME VALUE to every rank (and nothing of it to parastack or mpiexec).
  static std::vector<std::string> hydra(int ranks, std::vector<std::string> program_and_args,
                                        const std::vector<std::string>& forwarded = {}) {
    std::vector<std::string> argv{"mpiexec.hydra", "-n", std::to_string(ranks)};
    for (const auto& f : forwarded) {
      const auto equals = f.find('=');
      argv.insert(argv.end(), {"-genv", f.substr(0, equals), f.substr(equals + 1)});
    }
    argv.insert(argv.end(), program_and_args.begin(), program_and_args.end());
    return argv;
  }
};

TEST_F(Mpich, ASpinningRankIsFoundNamedAndKilledLeavingNothingBehind) {
  Trigger trigger;
  auto fault = trigger.fault("spin", 2);
  fault.front() = "LD_PRELOAD=" + test_program("libps_fault_mpich.so");  // fault()'s first: Open MPI's build
  WatchedRun run({"--log-level", "debug"}, hydra(4, {test_program("ps_solver_mpich"), "blocking", "600"}, fault));
  fire_when_model_ready(run, trigger);
  ASSERT_EQ(run.wait(300s), kExitHang) << run.log();
  const json report = run.report();
  ASSERT_FALSE(report.is_discarded()) << run.log();
  EXPECT_EQ(report["hang_type"], "computation") << report["stacks"]["text"].get<std::string>();
  EXPECT_EQ(report["faulty_ranks"], json::array({2})) << report["stacks"]["text"].get<std::string>();
  EXPECT_GT(report["detected_at"].get<double>(), run.fault_time(2).value_or(1e300));
  EXPECT_EQ(report["ranks"].size(), 4u);
  for (int pid : rank_pids(report)) EXPECT_FALSE(alive(pid)) << "rank pid " << pid << " survived";
  EXPECT_TRUE(run.process().descendants().empty());
}

// Under MPICH the library stays out of the way: C ranks whose handles end where memory does, and
// Fortran ranks (MPICH's mpi_init_ and friends, not Open MPI's ompi_init_f), run to their end.
TEST_F(Mpich, WithTheProgressLibraryJobsRunUntouched) {
  expect_untouched_by_the_progress_library(hydra(3, {test_program("ps_handle_edge_mpich"), "400"}), "edges ok 400");
  expect_untouched_by_the_progress_library(hydra(3, {test_program("ps_ring_fortran_mpich"), "200"}), "ring ok 200");
}

// The same programs built for Open MPI, where the library does keep its page: it reads no handle
// past its end either.
TEST(Run, WithTheProgressLibraryHandlesAtTheEdgeOfMemoryAndFortranRanksRunUntouched) {
  expect_untouched_by_the_progress_library(mpirun(3, {test_program("ps_handle_edge"), "400"}), "edges ok 400");
  expect_untouched_by_the_progress_library(mpirun(3, {test_program("ps_ring_fortran"), "200"}), "ring ok 200");
}

}  // namespace
}  // namespace parastack
