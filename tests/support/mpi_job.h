// Real processes for the real-process tests, owned RAII-style so that a failing test never leaves
// one behind (and a test binary ended by SIGINT, SIGTERM, SIGHUP or SIGQUIT kills their process
// groups before it dies): an Open MPI job (mpirun and every rank under it) and a plain child process. Both
// announce readiness through files in a private directory (tests/programs/ready_file.h), so a
// test waits for a condition, never for a fixed time.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace parastack::testing {

// The path of a program the suite built (tests/programs).
std::string test_program(const std::string& name);

// A private scratch directory, removed with everything in it.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A forked and exec'ed child in its own process group. The destructor kills the group and every
// descendant with SIGKILL and reaps the child.
struct ChildOptions {
  std::vector<std::string> environment;  // NAME=VALUE, added to the test's own
  std::string stdout_path, stderr_path;  // empty: inherited
  std::string working_directory;         // empty: the test's
};

class ChildProcess {
 public:
  explicit ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& extra_environment = {});
  ChildProcess(const std::vector<std::string>& argv, const ChildOptions& options);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  const std::filesystem::path& ready_dir() const { return ready_.path(); }
  // Waits for ready_dir()/name to appear; returns the pid written in it. Fails the test (throws)
  // if the child exits first or the deadline passes.
  pid_t wait_ready_file(const std::string& name, std::chrono::seconds timeout);
  // Waits for the child to exit; its exit status (128 + signal if killed), or -1 on timeout.
  int wait_exit(std::chrono::seconds timeout);
  bool running();
  // Every live descendant of the child (not the child itself), from /proc.
  std::vector<pid_t> descendants() const;

 private:
  TempDir ready_;
  pid_t pid_ = -1;
  int status_ = -1;  // set once reaped
};

// Reaps the orphans re-parented to this process (a subreaper, so that a killed launcher's ranks
// still come back to the test): zombies that no ChildProcess owns. Only we can reap them, so a
// script that waits for such a process to be gone (cluster.sh down) waits for us.
void reap_orphans();

struct LaunchedRank {
  int rank = -1;
  pid_t pid = -1;
};

// `mpirun --oversubscribe -np N program args...` as root-safe as a test needs.
class MpiJob {
 public:
  MpiJob(int ranks, const std::string& program, const std::vector<std::string>& args,
         const std::vector<std::string>& extra_environment = {});

  pid_t launcher_pid() const { return launcher_.pid(); }
  // Waits until every rank wrote its ready file; the ranks, indexed by rank.
  std::vector<LaunchedRank> wait_ready(std::chrono::seconds timeout = std::chrono::seconds(60));
  int wait_exit(std::chrono::seconds timeout) { return launcher_.wait_exit(timeout); }
  ChildProcess& launcher() { return launcher_; }

 private:
  int ranks_;
  ChildProcess launcher_;
};

// A file's whole content ("" if it cannot be read).
std::string read_file(const std::filesystem::path& path);

// The environment every test job gets: run as root, yield when idle (ranks outnumber cores).
std::vector<std::string> mpi_test_environment();

// The CPython interpreters a Python test runs under: Debian's python3 (3.11) always, then every
// path in PARASTACK_TEST_PYTHONS (colon-separated). Debian 12 packages no other CPython, so CI runs
// 3.11 only; docs/sampler.md has the command that ran pyenv's 3.12 and 3.13 through them.
std::vector<std::string> test_pythons();

// The environment of an mpirun of parastack-monitor started beside the job's own mpirun, as
// docs/user-guide.md says: a session directory of its own (SESSION_DIR, which Open MPI creates and
// removes), or Open MPI 4's start-up clean-up can make either mpirun fail.
std::vector<std::string> monitors_mpirun_environment(const std::filesystem::path& session_dir);

// What a killed job's monitors leave in TMP: their own Open MPI session directory (named as
// os/session_directory.h names them, for this host and `owner`'s uid), whose process has ended, with
// a file inside, owned by `owner`. Its path. The next monitors of that user on this host remove it.
std::filesystem::path stale_monitors_session_directory(const std::filesystem::path& tmp, const std::string& owner);

}  // namespace parastack::testing
