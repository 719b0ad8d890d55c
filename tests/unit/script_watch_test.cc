// pbs_parastack's helper that removes csh's copy of the job script once the shell has it open:
// its look at the shell's open files, on real processes.
#include "script_watch.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace parastack::pbs {
namespace {

using namespace std::chrono_literals;

// A forked child, killed and reaped whatever the test does.
class Child {
 public:
  template <class Body>
  explicit Child(Body body) : pid_(::fork()) {
    if (pid_ == 0) {
      body();
      ::_exit(0);
    }
  }
  ~Child() { end(); }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  pid_t pid() const { return pid_; }
  void end() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = 0;
  }

 private:
  pid_t pid_;
};

std::string scratch_file() {
  const auto path = std::filesystem::temp_directory_path() / ("script-watch-" + std::to_string(::getpid()));
  std::ofstream(path) << "echo hello\n";
  return path.string();
}

TEST(ScriptWatch, AFileTheProcessHasOpenIsSeen) {
  const std::string path = scratch_file();
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  Child shell([&] {
    const int fd = ::open(path.c_str(), O_RDONLY);
    (void)fd;
    char byte = 1;
    [[maybe_unused]] auto n = ::write(ready[1], &byte, 1);
    ::pause();
  });
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  EXPECT_EQ(look_for_open_script(shell.pid(), path), ScriptLook::Open);
  EXPECT_EQ(look_for_open_script(shell.pid(), path + ".other"), ScriptLook::NotYet);
  const pid_t ended = shell.pid();
  shell.end();
  EXPECT_EQ(look_for_open_script(ended, path), ScriptLook::Ended);
  std::filesystem::remove(path);
}

// A shell opening and closing descriptors as it starts (csh closes every one above 2) is not an
// ended one. Before, a descriptor closed between the listing and its reading read as the end, and
// the script was removed before csh opened it: once in a CI run, "job-script: No such file or
// directory" (PbsTorqueStandIn.AShellChosenWithDashSRunsTheScriptWithItsArguments).
TEST(ScriptWatch, DescriptorsClosingMeanwhileAreNoEnd) {
  const std::string path = scratch_file();
  Child churning([] {
    for (;;) {
      int fds[64];
      for (int& fd : fds) fd = ::open("/dev/null", O_RDONLY);
      for (int fd : fds) ::close(fd);
    }
  });
  int looks = 0;
  for (; looks < 3000; ++looks) {
    const auto look = look_for_open_script(churning.pid(), path);
    ASSERT_EQ(look, ScriptLook::NotYet) << "after " << looks << " looks";
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace parastack::pbs
