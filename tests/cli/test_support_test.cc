// The test support's own promise (tests/support/mpi_job.h): a test binary ended by a signal (a
// developer's Ctrl-C, a kill) leaves none of the processes its tests started, though no destructor
// runs then. And the wait for a watchdog's models (tests/support/watch_log.h) ends as soon as it
// can tell that they will never come.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "support/mpi_job.h"
#include "support/watch_log.h"

namespace parastack {
namespace {

using namespace std::chrono_literals;
using testing::ChildProcess;

// Alive and not a zombie (a zombie is dead, only not reaped yet).
bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

TEST(TestSupport, ATestBinaryEndedBySigintOrSigtermLeavesNoProcessBehind) {
  for (const int signal : {SIGINT, SIGTERM}) {
    SCOPED_TRACE(signal == SIGINT ? "SIGINT" : "SIGTERM");
    // A program linked with the test support like every test binary (tests/support/child_starter.cc).
    ChildProcess test_binary({PS_CHILD_STARTER});
    const pid_t job = test_binary.wait_ready_file("job", 60s);
    ASSERT_TRUE(running(job));
    ASSERT_EQ(::kill(test_binary.pid(), signal), 0);
    EXPECT_EQ(test_binary.wait_exit(60s), 128 + signal) << "the test binary dies of the signal, as without the handler";
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (running(job) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
    EXPECT_FALSE(running(job)) << "pid " << job << " outlived the test binary that started it";
    if (running(job)) ::kill(job, SIGKILL);  // whatever happened, nothing is left
    std::ifstream said(test_binary.ready_dir() / "job");
    std::string pid_line, scratch;
    if (std::getline(said, pid_line) && std::getline(said, scratch) &&
        std::filesystem::path(scratch).filename().string().starts_with("parastack-test-")) {
      std::filesystem::remove_all(scratch);
    }
  }
}

// Lines as a one-set watchdog's debug log has them.
const std::string kModelsLog =
    "sampling 1 set(s) of 4 rank(s)\n"
    "set=0 S=0.25 in_mpi model_samples=40\n";

TEST(TestSupport, TheWaitForModelsEndsWhenTheyHold) {
  EXPECT_NO_THROW(testing::await_models([] { return kModelsLog; }, [] { return true; }, 40, 1s));
  EXPECT_THROW(testing::await_models([] { return kModelsLog; }, [] { return true; }, 41, 1s), std::runtime_error);
}

TEST(TestSupport, TheWaitForModelsEndsAtOnceWhenAProcessCrashedOrTheWatchdogEnded) {
  // Open MPI's banner, as a monitor that crashed in the job's stderr left it (CI, 2026-12-03).
  const std::string crashed =
      "[node1:00067] *** Process received signal ***\n"
      "[node1:00067] Signal: Segmentation fault (11)\n";
  // A timeout that would end the wait anyway, with another message.
  try {
    testing::await_models([&] { return crashed; }, [] { return true; }, 40, 5s);
    ADD_FAILURE() << "the wait went on beside a crashed process";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("a process crashed before the model was ready"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("Segmentation fault"), std::string::npos) << e.what();
  }
  try {
    testing::await_models([] { return std::string("sampling 1 set(s) of 4 rank(s)\n"); }, [] { return false; }, 40, 5s);
    ADD_FAILURE() << "the wait went on for a watchdog that had ended";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("the watchdog ended before its model was ready"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace parastack
