#include "os/launched_job.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <thread>

#include "os/proc.h"
#include "os/scoped_fd.h"
#include "os/signal.h"

namespace parastack::os {
namespace {

int shell_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

constexpr std::array kJobSignals{SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

// What parastack's parent left ignored, read before main (before any handler of ours).
const std::array<bool, NSIG> inherited_ignored = [] {
  std::array<bool, NSIG> ignored{};
  for (int s = 1; s < NSIG; ++s) {
    struct sigaction current {};
    ignored[static_cast<std::size_t>(s)] = ::sigaction(s, nullptr, &current) == 0 && current.sa_handler == SIG_IGN;
  }
  return ignored;
}();

// The handler's state: lock-free atomics only (async-signal-safe).
std::atomic<int> forward_to{-1};  // a pidfd of the launcher, once there is one
// Without pidfds (a kernel before 5.3): the launcher's pid, until it is reaped.
std::atomic<pid_t> forward_to_pid{0};
std::array<std::atomic<bool>, NSIG> caught_early{};
std::array<std::atomic<bool>, NSIG> passed_on{};

// Sends `signal` to the launcher once it is known; false before (async-signal-safe).
bool send_to_launcher(int signal) {
  if (const int pidfd = forward_to.load(); pidfd >= 0) {
    pidfd_send_signal(pidfd, signal);
  } else if (const pid_t pid = forward_to_pid.load(); pid > 0) {
    ::kill(pid, signal);
  } else {
    return false;
  }
  return true;
}

void pass_on(int signal, siginfo_t* info, void*) {
  if (signal == SIGINT && info && info->si_code == SI_KERNEL) return;
  const int saved_errno = errno;
  if (!send_to_launcher(signal)) caught_early[static_cast<std::size_t>(signal)] = true;
  passed_on[static_cast<std::size_t>(signal)] = true;  // now, or by forward_signals_to
  errno = saved_errno;
}

sigset_t job_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kJobSignals) sigaddset(&set, s);
  return set;
}

}  // namespace

void catch_job_signals() {
  static_assert(std::atomic<int>::is_always_lock_free && std::atomic<bool>::is_always_lock_free);
  struct sigaction action {};
  action.sa_sigaction = pass_on;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (int s : kJobSignals) {
    if (!inherited_ignored[static_cast<std::size_t>(s)]) ::sigaction(s, &action, nullptr);
  }
}

void forward_signals_to(const LaunchedJob& job) {
  // A duplicate the handler may use for as long as parastack runs: the job's own may be closed.
  const int pidfd = job.pidfd() >= 0 ? ::fcntl(job.pidfd(), F_DUPFD_CLOEXEC, 0) : -1;
  // Held while the handler changes from remembering to passing on: none falls between the two.
  const sigset_t set = job_signal_set();
  sigset_t previous;
  ::pthread_sigmask(SIG_BLOCK, &set, &previous);
  if (pidfd >= 0) {
    forward_to = pidfd;
  } else {
    forward_to_pid = job.pid().value;  // not reaped yet: the pid is still the launcher's
  }
  for (int s : kJobSignals) {
    if (caught_early[static_cast<std::size_t>(s)].exchange(false)) send_to_launcher(s);
  }
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

std::string signals_passed_on() {
  // kJobSignals' names, in its order (sigabbrev_np needs glibc 2.32: RHEL 8 has 2.28).
  constexpr std::array<const char*, kJobSignals.size()> names{"SIGTERM", "SIGINT",  "SIGHUP",
                                                              "SIGQUIT", "SIGUSR1", "SIGUSR2"};
  std::string words;
  for (std::size_t i = 0; i < kJobSignals.size(); ++i) {
    if (passed_on[static_cast<std::size_t>(kJobSignals[i])])
      words += (words.empty() ? "" : ", ") + std::string(names[i]);
  }
  return words;
}

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
    for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE, SIGCHLD}) {
      ::signal(s, inherited_ignored[static_cast<std::size_t>(s)] ? SIG_IGN : SIG_DFL);
    }
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
  // Opened before any wait of ours: until we reap it, the pid is the launcher's.
  return LaunchedJob(Pid{pid}, ScopedFd(pidfd_open(pid)));
}

void LaunchedJob::launcher_reaped(int status) {
  status_ = shell_status(status);
  // Its pid is free for another process now: no signal may follow it there.
  pid_t forwarding = pid_.value;
  forward_to_pid.compare_exchange_strong(forwarding, 0);
}

std::optional<int> LaunchedJob::poll_exit() {
  if (status_) return status_;
  int status = 0;
  pid_t got;
  while ((got = ::waitpid(-1, &status, WNOHANG)) > 0) {
    if (got == pid_.value) launcher_reaped(status);
  }
  return status_;
}

int LaunchedJob::wait_exit() {
  while (!status_) {
    int status = 0;
    const pid_t got = ::waitpid(-1, &status, 0);
    if (got == pid_.value) launcher_reaped(status);
    if (got < 0 && errno == ECHILD) status_ = 255;  // someone else reaped it: should not happen
  }
  poll_exit();  // and reap what else has exited
  return *status_;
}

std::vector<ProcessIdentity> LaunchedJob::processes() const {
  std::map<pid_t, pid_t> parent_of;
  std::map<pid_t, std::uint64_t> start_of;
  for (const Pid pid : list_processes()) {
    if (auto stat = read_stat(pid); stat && stat->state != 'Z') {
      parent_of[pid.value] = stat->parent.value;
      start_of[pid.value] = stat->start_ticks;
    }
  }
  const pid_t self = ::getpid();
  // Once reaped, the launcher's pid may be another process's: from then on the job is what
  // descends from us (the launcher's orphans were re-parented to us, the subreaper).
  const pid_t launcher = status_ ? self : pid_.value;
  std::vector<ProcessIdentity> found;
  for (const auto& [pid, parent] : parent_of) {
    if (pid == self) continue;
    // The launcher and its descendants; and descendants of ours: orphans of the job re-parented
    // to us and their children (parastack starts no other child processes while a job runs).
    bool in_job = pid == launcher || parent == self;
    for (pid_t p = parent, hops = 0; !in_job && p > 1 && hops < 64; ++hops) {
      if (p == launcher || p == self) in_job = true;
      auto it = parent_of.find(p);
      if (it == parent_of.end()) break;
      p = it->second;
    }
    if (in_job) found.push_back(ProcessIdentity{Pid{pid}, start_of[pid]});
  }
  return found;
}

int LaunchedJob::terminate(std::chrono::milliseconds grace) {
  // By identity, never by bare pid: a process of the job that exits between the look at /proc and
  // the signal may leave its pid to somebody else's process, which a kill() would then hit.
  for (const auto& process : processes()) send_signal(process, SIGTERM);
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
    for (const auto& process : left) killed += send_signal(process, SIGKILL) == SignalResult::Sent ? 1 : 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    poll_exit();
  }
  if (!status_) wait_exit();
  return killed;
}

}  // namespace parastack::os
