#include "support/mpi_job.h"

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace parastack::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Orphans of a killed launcher (ranks whose mpirun died first) are re-parented to this process
// instead of init, so the destructors can still find and reap them.
const bool subreaper = [] { return ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0; }();

// Parent of every process; `zombies` gets those that are dead but not yet reaped.
std::map<pid_t, pid_t> parent_links(std::set<pid_t>& zombies) {
  std::map<pid_t, pid_t> parent_of;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(line.substr(close + 1));
    char state = 0;
    int parent = 0;
    if (fields >> state >> parent) {
      parent_of[std::stoi(name)] = parent;
      if (state == 'Z') zombies.insert(std::stoi(name));
    }
  }
  return parent_of;
}

// The process groups of the live ChildProcess objects, for the signal handler below: a test binary
// ended by SIGINT or SIGTERM (a developer's Ctrl-C, a kill) or SIGABRT runs no destructor, and would leave its
// jobs running. Lock-free slots, as a signal handler may read them at any moment.
constexpr std::size_t kGroupSlots = 256;
std::array<std::atomic<pid_t>, kGroupSlots> live_groups{};
const pid_t installing_process = ::getpid();

void kill_live_groups_and_die(int signal) {
  // In a forked child between fork and exec the slots are its parent's: not this process's to kill.
  if (::getpid() == installing_process) {
    for (auto& slot : live_groups) {
      if (const pid_t group = slot.load(); group > 0) ::kill(-group, SIGKILL);
    }
  }
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

const bool groups_die_with_the_test = [] {
  // SIGABRT too: an exception nobody catches (std::terminate) runs no destructor either.
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT}) {
    struct sigaction action {};
    action.sa_handler = kill_live_groups_and_die;
    sigemptyset(&action.sa_mask);
    // A signal its parent chose to ignore (nohup) stays ignored.
    struct sigaction old {};
    if (::sigaction(s, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    ::sigaction(s, &action, nullptr);
  }
  return true;
}();

void add_live_group(pid_t group) {
  for (auto& slot : live_groups) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, group)) return;
  }
}

void remove_live_group(pid_t group) {
  for (auto& slot : live_groups) {
    pid_t expected = group;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

// The pids of the live ChildProcess objects: their exit status is their owner's to read.
std::set<pid_t>& owned_children() {
  static std::set<pid_t> owned;
  return owned;
}

}  // namespace

// Never another ChildProcess's own child: a waitpid(-1) here once took the exit status of a job that
// had just ended, and its owner waited for it in vain.
void reap_orphans() {
  std::set<pid_t> zombies;
  const auto parent_of = parent_links(zombies);
  for (pid_t zombie : zombies) {
    const auto parent = parent_of.find(zombie);
    if (parent != parent_of.end() && parent->second == ::getpid() && !owned_children().contains(zombie)) {
      ::waitpid(zombie, nullptr, WNOHANG | __WALL);
    }
  }
}

std::string test_program(const std::string& name) { return std::string(PARASTACK_TEST_PROGRAMS_DIR) + "/" + name; }

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "parastack-test-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp: " + std::string(std::strerror(errno)));
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::string> mpi_test_environment() {
  // Open MPI 4's mpirun empties its user's session directory (TMPDIR/ompi.HOST.UID) as it starts,
  // and of two that start at once one can fail (docs/user-guide.md): ctest -j runs tests side by
  // side, so each test process gives its jobs a base directory of its own.
  static const TempDir session_base;
  return {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "OMPI_MCA_mpi_yield_when_idle=1",
          "OMPI_MCA_orte_tmpdir_base=" + session_base.path().string()};
}

std::vector<std::string> test_pythons() {
  std::vector<std::string> pythons{"/usr/bin/python3"};
  if (const char* more = std::getenv("PARASTACK_TEST_PYTHONS")) {
    std::stringstream list(more);
    for (std::string python; std::getline(list, python, ':');) {
      if (!python.empty()) pythons.push_back(python);
    }
  }
  return pythons;
}

std::vector<std::string> monitors_mpirun_environment(const std::filesystem::path& session_dir) {
  auto environment = mpi_test_environment();
  environment.push_back("OMPI_MCA_orte_top_session_dir=" + session_dir.string());
  return environment;
}

std::filesystem::path stale_monitors_session_directory(const std::filesystem::path& tmp, const std::string& owner) {
  const passwd* user = ::getpwnam(owner.c_str());
  if (!user) throw std::runtime_error("no user " + owner);
  const pid_t ended = ::fork();
  if (ended == 0) ::_exit(0);
  ::waitpid(ended, nullptr, 0);
  utsname host{};
  ::uname(&host);
  const auto dir = tmp / ("parastack-monitors." + std::string(host.nodename) + "." + std::to_string(user->pw_uid) +
                          "." + std::to_string(ended) + ".1");
  std::filesystem::create_directories(dir / "pid.1");
  std::ofstream(dir / "pid.1" / "contact.txt") << "left by a killed mpirun";
  for (const auto& path : {dir, dir / "pid.1", dir / "pid.1" / "contact.txt"}) {
    if (::chown(path.c_str(), user->pw_uid, user->pw_gid) != 0) throw std::runtime_error("chown " + path.string());
  }
  return dir;
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& extra_environment)
    : ChildProcess(argv, ChildOptions{extra_environment, {}, {}, {}}) {}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const ChildOptions& options) {
  (void)subreaper;
  (void)groups_die_with_the_test;
  std::vector<std::string> environment{"PS_READY_DIR=" + ready_.path().string()};
  environment.insert(environment.end(), options.environment.begin(), options.environment.end());
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork: " + std::string(std::strerror(errno)));
  if (pid_ == 0) {
    ::setpgid(0, 0);
    for (const auto& assignment : environment) ::putenv(const_cast<char*>(assignment.c_str()));
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    auto redirect = [](const std::string& path, int fd) {
      if (path.empty()) return;
      const int file = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (file >= 0) ::dup2(file, fd);
    };
    redirect(options.stdout_path, STDOUT_FILENO);
    redirect(options.stderr_path, STDERR_FILENO);
    if (!options.working_directory.empty() && ::chdir(options.working_directory.c_str()) != 0) ::_exit(126);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::setpgid(pid_, pid_);  // also from the parent, so it holds before either side runs on
  owned_children().insert(pid_);
  add_live_group(pid_);
}

ChildProcess::~ChildProcess() {
  if (pid_ <= 0) return;
  // Descendants first (they may have left the group), then the group, then reap.
  for (int round = 0; round < 3; ++round) {
    const auto others = descendants();
    for (pid_t p : others) ::kill(p, SIGKILL);
    if (status_ < 0) ::kill(-pid_, SIGKILL), ::kill(pid_, SIGKILL);
    if (status_ < 0) ::waitpid(pid_, nullptr, 0), status_ = 0;
    owned_children().erase(pid_);
    reap_orphans();
    if (others.empty()) break;
  }
  remove_live_group(pid_);
}

std::vector<pid_t> ChildProcess::descendants() const {
  // A zombie is dead, only not yet reaped (by us, the subreaper, if it was orphaned): it is not a
  // process left behind, and it is skipped.
  std::set<pid_t> zombies;
  const auto parent_of = parent_links(zombies);
  std::vector<pid_t> found;
  for (const auto& [pid, parent] : parent_of) {
    if (zombies.contains(pid)) continue;
    pid_t p = parent;
    for (int hops = 0; hops < 64 && p > 1; ++hops) {
      if (p == pid_) {
        found.push_back(pid);
        break;
      }
      auto it = parent_of.find(p);
      if (it == parent_of.end()) break;
      p = it->second;
    }
  }
  // Orphans re-parented to us (the subreaper) that belonged to our process group.
  for (const auto& [pid, parent] : parent_of) {
    if (parent == ::getpid() && pid != pid_ && !zombies.contains(pid) && ::getpgid(pid) == pid_) {
      found.push_back(pid);
    }
  }
  return found;
}

bool ChildProcess::running() {
  if (status_ >= 0) return false;
  int status = 0;
  const pid_t got = ::waitpid(pid_, &status, WNOHANG);
  if (got == pid_) {
    status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return false;
  }
  return true;
}

int ChildProcess::wait_exit(std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (running()) {
    if (Clock::now() > deadline) return -1;
    std::this_thread::sleep_for(10ms);  // polling a condition (the child's exit), bounded
  }
  return status_;
}

pid_t ChildProcess::wait_ready_file(const std::string& name, std::chrono::seconds timeout) {
  const auto path = ready_.path() / name;
  const auto deadline = Clock::now() + timeout;
  while (true) {
    std::ifstream file(path);
    pid_t pid = -1;
    if (file >> pid) return pid;
    if (!running()) {
      throw std::runtime_error("the process exited (status " + std::to_string(status_) + ") before writing " +
                               path.string());
    }
    if (Clock::now() > deadline) throw std::runtime_error("timed out waiting for " + path.string());
    std::this_thread::sleep_for(5ms);
  }
}

MpiJob::MpiJob(int ranks, const std::string& program, const std::vector<std::string>& args,
               const std::vector<std::string>& extra_environment)
    : ranks_(ranks),
      launcher_(
          [&] {
            std::vector<std::string> argv{"mpirun", "--oversubscribe", "-np", std::to_string(ranks), program};
            argv.insert(argv.end(), args.begin(), args.end());
            return argv;
          }(),
          [&] {
            auto environment = mpi_test_environment();
            environment.insert(environment.end(), extra_environment.begin(), extra_environment.end());
            return environment;
          }()) {}

std::vector<LaunchedRank> MpiJob::wait_ready(std::chrono::seconds timeout) {
  std::vector<LaunchedRank> launched;
  for (int r = 0; r < ranks_; ++r) {
    launched.push_back({r, launcher_.wait_ready_file("rank." + std::to_string(r), timeout)});
  }
  return launched;
}

}  // namespace parastack::testing
