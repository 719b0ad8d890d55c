// The monitor network across emulated hosts (tests/support/emulated_hosts.h): an 8-rank job and
// its monitors span node1 and node2, each host with its own address, hostname and /proc, Open MPI
// over ssh and TCP. The monitor on node2 cannot see the launcher; it finds its ranks through the
// launch the leader found under it (sampler::launches_under).
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/emulated_hosts.h"
#include "support/mpi_job.h"
#include "support/watch_log.h"

namespace parastack {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::ChildOptions;
using testing::ChildProcess;
using testing::EmulatedHosts;
using testing::read_file;
using testing::TempDir;
using testing::test_program;

constexpr int kExitHang = 3;

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The pid, on node1, of the mpirun a ChildProcess started there through nsenter.
pid_t launcher_inside(ChildProcess& process) {
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline && process.running()) {
    for (pid_t pid : process.descendants()) {
      if (read_file("/proc/" + std::to_string(pid) + "/comm") == "mpirun\n") return EmulatedHosts::pid_inside(pid);
    }
    std::this_thread::sleep_for(20ms);
  }
  return 0;
}

class AcrossTwoHosts : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = EmulatedHosts::unavailable()) GTEST_SKIP() << "no emulated hosts on this machine: " << *why;
    hosts_ = std::make_unique<EmulatedHosts>(2, 4);
  }
  // 8 ranks of the solver, 4 per host (ranks 4-7 on node2), over TCP; the fault fired by a file.
  // `exported`: more NAME=VALUE for every rank.
  std::unique_ptr<ChildProcess> application(const std::string& kind, int rank,
                                            const std::vector<std::string>& exported = {}) {
    std::vector<std::string> argv{"mpirun", "--hostfile", hosts_->hostfile(), "--mca", "btl", "tcp,self", "-np", "8"};
    // The ranks write ready files into the application's ready directory (ps_solver, rank.N).
    argv.insert(argv.end(), {"-x", "PS_READY_DIR"});
    for (const auto& x : exported) argv.insert(argv.end(), {"-x", x});
    if (!kind.empty()) {
      for (const auto& x : {"LD_PRELOAD=" + test_program("libps_fault.so"), "PS_FAULT_KIND=" + kind,
                            "PS_FAULT_RANK=" + std::to_string(rank), std::string("PS_FAULT_AFTER_SECONDS=1e9"),
                            "PS_FAULT_TRIGGER_FILE=" + fire_path()}) {
        argv.insert(argv.end(), {"-x", x});
      }
    }
    argv.insert(argv.end(), {test_program("ps_solver"), "blocking", "100000"});
    return std::make_unique<ChildProcess>(
        hosts_->on(0) + argv, ChildOptions{testing::mpi_test_environment(), (dir_.path() / "app.out").string(),
                                           (dir_.path() / "app.err").string(), dir_.path().string()});
  }
  // One parastack-monitor per host, started from node1 like the application.
  std::unique_ptr<ChildProcess> monitors(const std::vector<std::string>& options) {
    return std::make_unique<ChildProcess>(
        hosts_->on(0) +
            std::vector<std::string>{"mpirun", "--hostfile", hosts_->hostfile(), "--map-by", "ppr:1:node", "-np", "2",
                                     "--mca", "btl", "tcp,self", PARASTACK_MONITOR_BIN} +
            options,
        ChildOptions{testing::monitors_mpirun_environment(dir_.path() / "monitors-session"),
                     (dir_.path() / "monitors.out").string(), (dir_.path() / "monitors.err").string(),
                     dir_.path().string()});
  }
  // Every rank's ready file; if mpirun ends first, the test fails with mpirun's own words.
  void await_ranks(ChildProcess& app) {
    try {
      for (int rank = 0; rank < 8; ++rank) app.wait_ready_file("rank." + std::to_string(rank), 120s);
    } catch (const std::exception& e) {
      FAIL() << e.what() << "\n" << read_file(dir_.path() / "app.err") << read_file(dir_.path() / "app.out");
    }
  }
  std::string fire_path() const { return (dir_.path() / "fire").string(); }
  std::string report_path() const { return (dir_.path() / "report.json").string(); }
  std::string log() const { return read_file(dir_.path() / "monitors.err"); }

  TempDir dir_;
  std::unique_ptr<EmulatedHosts> hosts_;
};

TEST_F(AcrossTwoHosts, MonitorsOnBothHostsNameAFaultyRankOnTheSecond) {
  auto app = application("spin", 6);
  const pid_t launcher = launcher_inside(*app);
  ASSERT_GT(launcher, 0) << read_file(dir_.path() / "app.err");
  auto watching = monitors({"--pid", std::to_string(launcher), "--report", report_path(), "--log-level", "debug"});
  testing::await_models([&] { return log(); }, [&] { return watching->running(); }, 40);
  std::ofstream(fire_path()).put('\n');

  ASSERT_EQ(watching->wait_exit(400s), kExitHang) << log();
  EXPECT_NE(log().find("2 monitors on node1 node2"), std::string::npos) << log();
  EXPECT_NE(log().find("found 8 rank(s) of MPI program ps_solver"), std::string::npos) << log();
  EXPECT_NE(log().find("on 2 host(s)"), std::string::npos) << log();
  std::ifstream in(report_path());
  const json report = json::parse(in, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << log();
  EXPECT_EQ(report["hang_type"], "computation");
  EXPECT_EQ(report["faulty_ranks"], json::array({6})) << report["stacks"]["text"].get<std::string>();
  ASSERT_EQ(report["ranks"].size(), 8u);
  for (const auto& r : report["ranks"]) {
    // Each host's monitor reported its own ranks: 0-3 on node1, 4-7 on node2.
    EXPECT_EQ(r["host"], r["rank"].get<int>() < 4 ? "node1" : "node2") << r.dump();
  }
  // Action kill reached the ranks on node2 through its monitor: the job is gone.
  EXPECT_NE(app->wait_exit(60s), 0);
}

// As in a Torque/PBS job: mpirun with the $PBS_NODEFILE, the job selected by its id. No PBS server
// runs here: the id that pbs_mom would put in the ranks' environment is exported by hand.
TEST_F(AcrossTwoHosts, StacksOfAPbsJobComeFromEveryHostMergedUpTheMonitors) {
  auto app = application("", 0, {"PBS_JOBID=4242.pbs-server"});
  ASSERT_NO_FATAL_FAILURE(await_ranks(*app));
  auto stacks = monitors({"--pbs-job", "4242", "--stacks", "--stack-samples", "3", "--stack-interval", "0.1"});
  ASSERT_EQ(stacks->wait_exit(120s), 0) << log() << "application:\n" << read_file(dir_.path() / "app.err");
  const std::string out = read_file(dir_.path() / "monitors.out");
  EXPECT_NE(out.find("parastack stacks: 8 ranks on 2 host(s), 3 sample(s) each"), std::string::npos) << out << log();
  EXPECT_NE(out.find("8 ranks: 0-7, 24 samples"), std::string::npos) << out;
  EXPECT_TRUE(app->running()) << "taking stacks must not harm the job";
}

}  // namespace
}  // namespace parastack
