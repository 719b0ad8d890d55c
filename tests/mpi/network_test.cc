// The monitor network on real Open MPI jobs: 4 parastack-monitor processes under their own mpirun
// watch a 16-rank application (another mpirun). They share this machine, so --share-node gives
// each monitor a block of 4 ranks as if it were on its own node; the leader (monitor 0) then only
// ever sees the other ranks through the other monitors' answers.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

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
constexpr int kExitMonitoringLost = 6;
constexpr int kAppRanks = 16;
constexpr int kMonitors = 4;

// The application: 16 ranks of the solver, the fault injector preloaded, fired by a file.
class Application {
 public:
  Application(const std::string& style, int seconds, const std::string& kind = "", int rank = 0)
      : fire_(dir_.path() / "fire"),
        process_(
            [&] {
              std::vector<std::string> argv{"mpirun", "--oversubscribe", "-np", std::to_string(kAppRanks)};
              if (!kind.empty()) {
                for (const auto& x :
                     {"LD_PRELOAD=" + test_program("libps_fault.so"), "PS_FAULT_KIND=" + kind,
                      "PS_FAULT_RANK=" + std::to_string(rank), std::string("PS_FAULT_AFTER_SECONDS=1e9"),
                      "PS_FAULT_TRIGGER_FILE=" + fire_.string()}) {
                  argv.insert(argv.end(), {"-x", x});
                }
              }
              argv.insert(argv.end(), {test_program("ps_solver"), style, std::to_string(seconds)});
              return argv;
            }(),
            ChildOptions{testing::mpi_test_environment(), (dir_.path() / "out").string(),
                         (dir_.path() / "err").string(), dir_.path().string()}) {}
  pid_t launcher() const { return process_.pid(); }
  void fire() const { std::ofstream(fire_).put('\n'); }
  ChildProcess& process() { return process_; }
  std::string out() const { return read_file(dir_.path() / "out"); }

 private:
  TempDir dir_;
  std::filesystem::path fire_;
  ChildProcess process_;
};

// mpirun -np 4 parastack-monitor --pid APP --share-node ...
class Monitors {
 public:
  Monitors(pid_t application, std::vector<std::string> options)
      : process_(
            [&] {
              std::vector<std::string> argv{"mpirun",
                                            "--oversubscribe",
                                            "-np",
                                            std::to_string(kMonitors),
                                            PARASTACK_MONITOR_BIN,
                                            "--pid",
                                            std::to_string(application),
                                            "--share-node",
                                            "--report",
                                            report_path(),
                                            "--log-level",
                                            "debug"};
              argv.insert(argv.end(), options.begin(), options.end());
              return argv;
            }(),
            ChildOptions{testing::monitors_mpirun_environment(dir_.path() / "monitors-session"),
                         (dir_.path() / "out").string(), (dir_.path() / "err").string(), dir_.path().string()}) {}
  std::string report_path() const { return (dir_.path() / "report.json").string(); }
  json report() const {
    std::ifstream in(report_path());
    return json::parse(in, nullptr, false);
  }
  std::string log() const { return read_file(dir_.path() / "err"); }
  ChildProcess& process() { return process_; }

  // A monitor process other than the leader (by its MPI rank in the monitors' job).
  pid_t follower(int monitor_rank) const {
    for (pid_t pid : process_.descendants()) {
      const std::string environ = read_file("/proc/" + std::to_string(pid) + "/environ");
      const std::string comm = read_file("/proc/" + std::to_string(pid) + "/comm");
      if (comm.rfind("parastack-moni", 0) == 0 &&
          environ.find(std::string("OMPI_COMM_WORLD_RANK=") + std::to_string(monitor_rank) + '\0') !=
              std::string::npos) {
        return pid;
      }
    }
    return 0;
  }

 private:
  TempDir dir_;
  ChildProcess process_;
};

void await_models(Monitors& monitors, int samples) {
  parastack::testing::await_models([&] { return monitors.log(); }, [&] { return monitors.process().running(); },
                                   samples);
}

TEST(MonitorNetwork, FindsAComputationHangAndItsRankAcrossFourMonitors) {
  Application app("blocking", 100000, "spin", 13);
  Monitors monitors(app.launcher(), {});
  await_models(monitors, 40);
  app.fire();
  ASSERT_EQ(monitors.process().wait_exit(400s), kExitHang) << monitors.log();
  const json report = monitors.report();
  ASSERT_FALSE(report.is_discarded()) << monitors.log();
  EXPECT_EQ(report["verdict"], "hang");
  EXPECT_EQ(report["hang_type"], "computation");
  EXPECT_EQ(report["faulty_ranks"], json::array({13})) << report["stacks"]["text"].get<std::string>();
  EXPECT_EQ(report["ranks"].size(), static_cast<std::size_t>(kAppRanks));  // gathered from all four
  EXPECT_NE(monitors.log().find("4 monitors on"), std::string::npos) << monitors.log();
  // Every rank's stack went through the tree merge: rank 13 alone outside MPI.
  EXPECT_NE(report["stacks"]["text"].get<std::string>().find("[1 rank: 13]"), std::string::npos)
      << report["stacks"]["text"].get<std::string>();
  // Action kill through the monitors: the application is gone.
  EXPECT_NE(app.process().wait_exit(60s), 0);
}

TEST(MonitorNetwork, ReportsADeadlockAsACommunicationError) {
  Application app("blocking", 100000, "deadlock", 6);
  Monitors monitors(app.launcher(), {});
  await_models(monitors, 40);
  app.fire();
  ASSERT_EQ(monitors.process().wait_exit(400s), kExitHang) << monitors.log();
  const json report = monitors.report();
  EXPECT_EQ(report["hang_type"], "communication") << report["stacks"]["text"].get<std::string>();
  EXPECT_EQ(report["faulty_ranks"], json::array());
  EXPECT_EQ(report["ranks"].size(), static_cast<std::size_t>(kAppRanks));
  EXPECT_NE(app.process().wait_exit(60s), 0);
}

TEST(MonitorNetwork, AHealthyRunEndsWithNoAlarmAndTheMonitorsLeaveWithIt) {
  Application app("blocking", 60);
  Monitors monitors(app.launcher(), {});
  // The job's own signals reach its monitors too (sbatch --signal=USR1@T, scancel --signal signal
  // every step): they are not the monitors', and do not end them. Before, SIGUSR1 killed them.
  await_models(monitors, 1);  // watching: past their start-up
  for (int m = 0; m < kMonitors; ++m) {
    const pid_t monitor = monitors.follower(m);
    ASSERT_NE(monitor, 0) << "monitor " << m;
    // Open MPI's threads block what a sample holds back (SIGTERM ... SIGTSTP): such a signal is
    // the main thread's, which holds it while it holds a rank, never another thread's mid-sample.
    int other_threads = 0;
    for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(monitor) + "/task")) {
      if (task.path().filename() == std::to_string(monitor)) continue;
      ++other_threads;
      const std::string status = read_file(task.path() / "status");
      const auto at = status.find("SigBlk:");
      ASSERT_NE(at, std::string::npos) << status;
      const unsigned long long blocked = std::stoull(status.substr(at + 7), nullptr, 16);
      for (int signal : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU}) {
        EXPECT_TRUE(blocked & (1ULL << (signal - 1)))
            << "monitor " << m << ", thread " << task.path().filename() << " takes signal " << signal;
      }
    }
    EXPECT_GT(other_threads, 0) << "Open MPI's threads";
    for (int signal : {SIGUSR1, SIGUSR2, SIGHUP}) EXPECT_EQ(::kill(monitor, signal), 0);
  }
  ASSERT_EQ(app.process().wait_exit(300s), 0) << monitors.log();
  EXPECT_NE(app.out().find("iterations "), std::string::npos);
  // The monitors leave once the job is gone; they never held it up.
  ASSERT_EQ(monitors.process().wait_exit(60s), 0) << monitors.log();
  const json report = monitors.report();
  EXPECT_EQ(report["verdict"], "completed") << monitors.log();
  EXPECT_GT(report["model"]["observations"].get<int>(), 40) << "it was watched, not ignored";
}

TEST(MonitorNetwork, KillingAMonitorGivesNoVerdictAndTheJobRunsOn) {
  Application app("blocking", 60);
  Monitors monitors(app.launcher(), {});
  await_models(monitors, 5);  // watching for real
  const pid_t victim = monitors.follower(2);
  ASSERT_GT(victim, 0) << "monitor 2 not found";
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  EXPECT_NE(monitors.process().wait_exit(120s), 0);
  const json report = monitors.report();  // none at all, or one that is not a hang
  EXPECT_TRUE(report.is_discarded() || report.value("verdict", "") != "hang") << monitors.log();
  EXPECT_EQ(monitors.log().find("HANG"), std::string::npos) << monitors.log();
  // The application never noticed.
  ASSERT_EQ(app.process().wait_exit(300s), 0);
  EXPECT_NE(app.out().find("iterations "), std::string::npos);
}

TEST(MonitorNetwork, AMonitorThatStopsAnsweringEndsMonitoringNotTheJob) {
  Application app("blocking", 60);
  Monitors monitors(app.launcher(), {"--monitor-timeout", "5"});
  await_models(monitors, 5);
  const pid_t victim = monitors.follower(3);
  ASSERT_GT(victim, 0) << "monitor 3 not found";
  ASSERT_EQ(::kill(victim, SIGSTOP), 0);  // a frozen node
  EXPECT_EQ(monitors.process().wait_exit(120s), kExitMonitoringLost) << monitors.log();
  EXPECT_NE(monitors.log().find("monitoring lost on"), std::string::npos) << monitors.log();
  EXPECT_EQ(monitors.log().find("HANG"), std::string::npos) << monitors.log();
  const json report = monitors.report();
  ASSERT_FALSE(report.is_discarded()) << monitors.log();
  EXPECT_EQ(report.value("verdict", ""), "monitoring lost") << monitors.log();
  ::kill(victim, SIGKILL);  // if mpirun had not already
  ASSERT_EQ(app.process().wait_exit(300s), 0);
  EXPECT_NE(app.out().find("iterations "), std::string::npos);
}

// A job script that runs two MPI programs one after another, as batch scripts do: the first ends
// normally, the second hangs. Each gets its own rank table and model; the leader says so.
TEST(MonitorNetwork, WatchesProgramsOneAfterAnotherEachWithItsOwnModel) {
  TempDir dir;
  const std::string fire = (dir.path() / "fire").string();
  const std::string solver = test_program("ps_solver");
  const std::string faults = "-x LD_PRELOAD=" + test_program("libps_fault.so") +
                             " -x PS_FAULT_KIND=spin -x PS_FAULT_RANK=9 -x PS_FAULT_AFTER_SECONDS=1e9"
                             " -x PS_FAULT_TRIGGER_FILE=" +
                             fire;
  ChildProcess script({"sh", "-c",
                       "mpirun --oversubscribe -np 16 " + solver +
                           " blocking 20 && "
                           "mpirun --oversubscribe -np 16 " +
                           faults + " " + solver + " blocking 100000"},
                      ChildOptions{testing::mpi_test_environment(), (dir.path() / "out").string(),
                                   (dir.path() / "err").string(), dir.path().string()});
  Monitors monitors(script.pid(), {});
  // The second program's part of the log, once the leader has found it.
  const auto second = [&] {
    const std::string log = monitors.log();
    const auto first = log.find("found 16 rank(s) of MPI program ps_solver");
    const auto next =
        first == std::string::npos ? first : log.find("found 16 rank(s) of MPI program ps_solver", first + 1);
    return next == std::string::npos ? std::string() : log.substr(next);
  };
  parastack::testing::await_models(
      second, [&] { return monitors.process().running(); }, 40);
  std::ofstream(fire).put('\n');
  ASSERT_EQ(monitors.process().wait_exit(400s), kExitHang) << monitors.log();
  const std::string log = monitors.log();
  EXPECT_NE(log.find("the ranks of "), std::string::npos) << "the first program's end was not noticed:\n" << log;
  EXPECT_EQ(log.find("HANG"), log.rfind("HANG")) << "one hang, in the second program only:\n" << log;
  const json report = monitors.report();
  ASSERT_FALSE(report.is_discarded()) << log;
  EXPECT_EQ(report["faulty_ranks"], json::array({9})) << report["stacks"]["text"].get<std::string>();
  EXPECT_EQ(report["ranks"].size(), static_cast<std::size_t>(kAppRanks));
  EXPECT_NE(script.wait_exit(60s), 0);
  EXPECT_NE(read_file(dir.path() / "out").find("iterations "), std::string::npos) << "the first program ran to its end";
}

}  // namespace
}  // namespace parastack
