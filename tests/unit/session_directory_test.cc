// The monitors' own Open MPI session directories (os/session_directory.h) on a real file system
// with real processes: those of ended processes go, a live process's, another host's and another
// user's stay.
#include "os/session_directory.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "os/host.h"
#include "os/proc.h"

#include "scratch.h"

namespace parastack::os {
namespace {

namespace fs = std::filesystem;

using testing::Scratch;

// A process that has ended (reaped: its pid names nobody, or somebody else later).
ProcessIdentity ended_process() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  const auto identity = identify(Pid{child});
  ::waitpid(child, nullptr, 0);
  return identity.value_or(ProcessIdentity{Pid{child}, 1});
}

// A directory as Open MPI leaves it: its job family and a file inside.
fs::path make_session(const fs::path& path) {
  fs::create_directories(path / "jf.1234" / "0");
  std::ofstream(path / "jf.1234" / "0" / "contact.txt") << "x";
  return path;
}

TEST(SessionDirectory, ThoseOfEndedProcessesGoAndEveryOtherStays) {
  Scratch scratch("parastack-session");
  ASSERT_FALSE(scratch.path().empty());
  const std::string tmp = scratch.path().string();
  const auto self = identify(Pid{::getpid()});
  ASSERT_TRUE(self);

  const auto ended = make_session(monitors_session_directory(tmp, ended_process()));
  const auto reused_pid = make_session(monitors_session_directory(tmp, {self->pid, self->start_ticks + 1}));
  const auto live = make_session(own_monitors_session_directory(tmp));
  const std::string uid = std::to_string(::getuid());
  const std::string here = host_name();
  const auto other_host = make_session(scratch.path() / ("parastack-monitors.not-" + here + "." + uid + ".1.1"));
  const auto other_user =
      make_session(scratch.path() / ("parastack-monitors." + here + "." + std::to_string(::getuid() + 1) + ".1.1"));
  const auto unnamed = make_session(scratch.path() / ("parastack-monitors." + here + "." + uid + ".1"));
  const auto not_a_directory = scratch.path() / ("parastack-monitors." + here + "." + uid + ".2.2");
  std::ofstream(not_a_directory) << "a file";

  EXPECT_EQ(live.filename().string(), "parastack-monitors." + here + "." + uid + "." + std::to_string(self->pid.value) +
                                          "." + std::to_string(self->start_ticks));
  EXPECT_EQ(remove_stale_monitors_session_directories(tmp), 2);
  EXPECT_FALSE(fs::exists(ended)) << "its process has ended";
  EXPECT_FALSE(fs::exists(reused_pid)) << "its pid is another process's now";
  EXPECT_TRUE(fs::exists(live / "jf.1234" / "0" / "contact.txt")) << "its process runs";
  EXPECT_TRUE(fs::exists(other_host)) << "another host's, in a /tmp shared by containers";
  EXPECT_TRUE(fs::exists(other_user));
  EXPECT_TRUE(fs::exists(unnamed)) << "no start time in its name: nothing says whose it is";
  EXPECT_TRUE(fs::exists(not_a_directory));
  EXPECT_EQ(remove_stale_monitors_session_directories(tmp), 0) << "and a second sweep finds nothing";
}

TEST(SessionDirectory, AMissingTemporaryDirectoryIsNoError) {
  EXPECT_EQ(remove_stale_monitors_session_directories("/nonexistent/parastack-session-test"), 0);
}

}  // namespace
}  // namespace parastack::os
