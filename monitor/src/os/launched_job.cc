#include "os/launched_job.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

#include "os/proc.h"
#include "os/scoped_fd.h"

namespace parastack::os {
namespace {

int shell_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

}  // namespace

bool become_subreaper() { return ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0; }

std::variant<LaunchedJob, std::string> LaunchedJob::start(const std::vector<std::string>& argv) {
  if (argv.empty()) return std::string("no command to run");
  // exec's errno comes back through a close-on-exec pipe: EOF means the exec succeeded.
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return "pipe: " + std::string(std::strerror(errno));
  ScopedFd read_end(fds[0]), write_end(fds[1]);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return "fork: " + std::string(std::strerror(errno));
  if (pid == 0) {
    // Default dispositions and an empty mask, whatever parastack set for itself.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE, SIGCHLD}) ::signal(s, SIG_DFL);
    ::execvp(args[0], args.data());
    const int error = errno;
    [[maybe_unused]] const auto written = ::write(write_end.get(), &error, sizeof error);
    ::_exit(127);
  }
  write_end.reset();
  int error = 0;
  ssize_t n;
  while ((n = ::read(read_end.get(), &error, sizeof error)) < 0 && errno == EINTR) {
  }
  if (n == sizeof error) {
    ::waitpid(pid, nullptr, 0);
    return "cannot run '" + argv[0] + "': " + std::strerror(error);
  }
  return LaunchedJob(Pid{pid});
}

std::optional<int> LaunchedJob::poll_exit() {
  if (status_) return status_;
  int status = 0;
  pid_t got;
  while ((got = ::waitpid(-1, &status, WNOHANG)) > 0) {
    if (got == pid_.value) status_ = shell_status(status);
  }
  return status_;
}

int LaunchedJob::wait_exit() {
  while (!status_) {
    int status = 0;
    const pid_t got = ::waitpid(-1, &status, 0);
    if (got == pid_.value) status_ = shell_status(status);
    if (got < 0 && errno == ECHILD) status_ = 255;  // someone else reaped it: should not happen
  }
  poll_exit();  // and reap what else has exited
  return *status_;
}

void LaunchedJob::forward(int signal) {
  if (!status_) ::kill(pid_.value, signal);
}

std::vector<Pid> LaunchedJob::processes() const {
  std::map<pid_t, pid_t> parent_of;
  for (const Pid pid : list_processes()) {
    if (auto stat = read_stat(pid); stat && stat->state != 'Z') parent_of[pid.value] = stat->parent.value;
  }
  const pid_t self = ::getpid();
  std::vector<Pid> found;
  for (const auto& [pid, parent] : parent_of) {
    if (pid == self) continue;
    // The launcher and its descendants; and children of ours that are not the launcher: orphans
    // of the job re-parented to us, the subreaper (parastack starts no other child processes
    // while a job runs).
    bool in_job = pid == pid_.value || parent == self;
    for (pid_t p = parent, hops = 0; !in_job && p > 1 && hops < 64; ++hops) {
      if (p == pid_.value) in_job = true;
      auto it = parent_of.find(p);
      if (it == parent_of.end()) break;
      p = it->second;
    }
    if (in_job) found.push_back(Pid{pid});
  }
  return found;
}

int LaunchedJob::terminate(std::chrono::milliseconds grace) {
  for (const Pid pid : processes()) ::kill(pid.value, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    poll_exit();
    if (processes().empty()) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  int killed = 0;
  // New processes may appear while we kill (a launcher respawning): a few rounds.
  for (int round = 0; round < 10; ++round) {
    const auto left = processes();
    if (left.empty()) break;
    for (const Pid pid : left) killed += ::kill(pid.value, SIGKILL) == 0 ? 1 : 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    poll_exit();
  }
  if (!status_) wait_exit();
  return killed;
}

}  // namespace parastack::os
