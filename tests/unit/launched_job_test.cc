// What `parastack run` counts as its job (os/launched_job.h): what it acts on with action kill.
#include "os/launched_job.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <variant>

#include "os/proc.h"

namespace parastack::os {
namespace {

using namespace std::chrono_literals;

// A launcher that ends and leaves a subshell behind, whose child sleeps: the subshell is
// re-parented to us, the sleeper stays its child. Both are still the job, and the launcher's pid,
// reaped and free for any process to take, is no longer a root of it (before, whatever took the
// pid, and all its descendants, would have been signalled by action kill; the sleeper, a
// grandchild, was not).
TEST(LaunchedJob, AnEndedLaunchersOrphansAndTheirChildrenAreTheJobAndItsPidIsNot) {
  ASSERT_TRUE(become_subreaper());
  auto started = LaunchedJob::start({"/bin/sh", "-c", "(sleep 1000; :) & exit 0"});
  ASSERT_TRUE(std::holds_alternative<LaunchedJob>(started)) << std::get<std::string>(started);
  auto& job = std::get<LaunchedJob>(started);
  struct Ended {  // whatever happens, nothing is left behind
    LaunchedJob& job;
    ~Ended() { job.terminate(0ms); }
  } ended{job};
  EXPECT_EQ(job.wait_exit(), 0);
  // The sleeper may not have been started yet: the subshell forks it.
  std::set<std::string> names;
  for (int look = 0; look < 2500 && names.count("sleep") == 0; ++look) {
    names.clear();
    for (const auto& process : job.processes()) {
      if (const auto stat = read_stat(process.pid)) names.insert(stat->comm);
    }
    if (names.count("sleep") == 0) std::this_thread::sleep_for(2ms);
  }
  EXPECT_EQ(names, (std::set<std::string>{"sh", "sleep"}));
  EXPECT_EQ(job.terminate(1000ms), 0) << "both go with SIGTERM";
  EXPECT_TRUE(job.processes().empty());
}

}  // namespace
}  // namespace parastack::os
