#include "os/run_program.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <thread>

#include "os/scoped_fd.h"

namespace parastack::os {

int run_program(const std::vector<std::string>& argv, std::chrono::seconds limit, const std::string& input,
                std::string* output) {
  if (argv.empty()) return -1;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The input in an anonymous memory file: no pipe to keep fed, no temporary file left behind.
  ScopedFd in, out;
  if (!input.empty()) {
    in = ScopedFd(::memfd_create("parastack-input", MFD_CLOEXEC));
    if (!in.valid() || ::write(in.get(), input.data(), input.size()) != static_cast<ssize_t>(input.size()) ||
        ::lseek(in.get(), 0, SEEK_SET) != 0) {
      return -1;
    }
  }
  if (output) {
    out = ScopedFd(::memfd_create("parastack-output", MFD_CLOEXEC));
    if (!out.valid()) return -1;
  }
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
      ::dup2(in.valid() ? in.get() : null, STDIN_FILENO);
      ::dup2(out.valid() ? out.get() : null, STDOUT_FILENO);
    }
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (true) {
    const pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got == pid) break;
    if (got < 0 && errno != EINTR) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -2;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (output) {
    output->clear();
    char buffer[4096];
    ::lseek(out.get(), 0, SEEK_SET);
    for (ssize_t n; (n = ::read(out.get(), buffer, sizeof buffer)) > 0;)
      output->append(buffer, static_cast<std::size_t>(n));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

}  // namespace parastack::os
