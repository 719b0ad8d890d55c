// `pbs_parastack --in-job`: the first thing the generated job script runs, inside the job, as the
// job's user. It takes the user's script from its stdin (the here-document), starts one
// parastack-monitor per node of the allocation as an Open MPI program, detached, and then becomes
// the user's script with execve: the same process, so the scheduler's signals, the script's exit
// status, its stdout and stderr and its environment are exactly what they would be without
// parastack. The monitors watch that process (--batch-script PID:START) and end when it exits.
//
// Whatever fails here costs the watch, never the job: every problem is one line on the job's
// stderr ("... this job runs unwatched") and the script runs regardless.
#include "in_job.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "cli/path_patterns.h"
#include "job_script.h"
#include "os/proc.h"
#include "os/run_program.h"
#include "os/session_directory.h"
#include "script_watch.h"

namespace parastack::pbs {
namespace {

using namespace std::chrono_literals;

struct InJobOptions {
  enum class Runner { Itself, Shell, LoginShell } runner = Runner::Itself;  // #!, -S, or Torque's default
  std::string shell;
  std::vector<std::string> script_args;
  std::string mpirun = "mpirun";
  std::vector<std::string> monitor;  // parastack-monitor and the options chosen at submission
  std::vector<std::string> unknown;  // arguments this version does not know (another one submitted the job)
};

InJobOptions parse_in_job(const std::vector<std::string>& args) {
  InJobOptions options;
  std::size_t i = 0;
  const auto value = [&](const std::string& name) -> const std::string& {
    if (i + 1 >= args.size()) throw std::runtime_error(name + " needs a value");
    return args[++i];
  };
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") break;
    if (arg == "--shell") {
      options.runner = InJobOptions::Runner::Shell;
      options.shell = value(arg);
    } else if (arg == "--login-shell") {
      options.runner = InJobOptions::Runner::LoginShell;
    } else if (arg == "--arg") {
      options.script_args.push_back(value(arg));
    } else if (arg == "--mpirun") {
      options.mpirun = value(arg);
    } else if (arg == "--end-marker") {
      value(arg);  // read before parsing (run_in_job)
    } else {
      // Left out, not fatal: the job was submitted by a pbs_parastack of another version (the
      // submit host's and the node's may differ for a while), and its script, shell and arguments,
      // which this one does know, must still run as the user asked.
      options.unknown.push_back(arg);
    }
  }
  if (i + 1 < args.size()) options.monitor.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
  return options;
}

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// The job's temporary directory (Torque gives each job its own), else /tmp.
std::string job_tmpdir() {
  const std::string tmp = environment("TMPDIR");
  return tmp.empty() ? "/tmp" : tmp;
}

// The allocation's hosts, each once, in the node file's order: Torque's $PBS_NODEFILE (a host per
// slot), else the Slurm allocation under a PBS-syntax front end (slurm-wlm-torque sets no node file).
std::vector<std::string> allocation_hosts() {
  std::string listing;
  std::string from;
  if (const std::string file = environment("PBS_NODEFILE"); !file.empty()) {
    std::ifstream in(file);
    if (!in)
      throw std::runtime_error("the node file PBS_NODEFILE=" + file + " cannot be read (" + std::strerror(errno) + ")");
    std::stringstream text;
    text << in.rdbuf();
    listing = text.str();
    from = "PBS_NODEFILE=" + file;
  } else if (const std::string nodes = environment("SLURM_JOB_NODELIST"); !nodes.empty()) {
    if (os::run_program({"scontrol", "show", "hostnames", nodes}, 60s, {}, &listing) != 0) {
      throw std::runtime_error("scontrol show hostnames " + nodes + " failed");
    }
    from = "SLURM_JOB_NODELIST=" + nodes;
  } else {
    throw std::runtime_error("neither PBS_NODEFILE nor SLURM_JOB_NODELIST is set: no list of the job's nodes");
  }
  std::vector<std::string> hosts;
  std::set<std::string> seen;
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    const std::string host = line.substr(first, line.find_first_of(" \t\r", first) - first);
    if (seen.insert(host).second) hosts.push_back(host);
  }
  if (hosts.empty()) throw std::runtime_error(from + " lists no host");
  return hosts;
}

// The monitors' whole command: mpirun, one monitor per host, the job, the script to watch.
std::vector<std::string> monitors_command(const InJobOptions& options) {
  std::vector<std::string> job;
  std::string id = environment("PBS_JOBID");
  if (!id.empty()) {
    job = {"--pbs-job", id};
  } else if (!(id = environment("SLURM_JOB_ID")).empty()) {
    job = {"--slurm-job", id};
  } else {
    throw std::runtime_error("neither PBS_JOBID nor SLURM_JOB_ID is set: this is not a batch job");
  }
  const auto hosts = allocation_hosts();
  std::string host_list;
  for (const auto& host : hosts) host_list += (host_list.empty() ? "" : ",") + host + ":1";
  const auto self = os::identify(os::Pid{::getpid()});
  if (!self) throw std::runtime_error("cannot read this process's start time in /proc");

  std::vector<std::string> argv{options.mpirun, "--quiet",    "--host",    host_list,
                                "--map-by",     "ppr:1:node", "--bind-to", "none"};
  argv.insert(argv.end(), options.monitor.begin(), options.monitor.end());
  argv.insert(argv.end(), job.begin(), job.end());
  argv.insert(argv.end(), {"--batch-script", os::to_string(*self)});
  bool report_chosen = false;
  for (const auto& arg : options.monitor) report_chosen = report_chosen || arg.find("report=") != std::string::npos;
  if (!report_chosen) {
    // Next to the job's output: its submission directory, as Torque's output files are.
    std::string dir = environment("PBS_O_WORKDIR");
    if (dir.empty()) {
      char cwd[4096];
      dir = ::getcwd(cwd, sizeof cwd) ? cwd : ".";
    }
    std::string name = id;
    for (char& c : name) c = c == '/' ? '_' : c;
    // The monitors expand % patterns in --report: a % in the directory's name stays itself.
    argv.insert(argv.end(), {"--report", cli::literal_path(dir + "/parastack-" + name + ".json")});
  }
  return argv;
}

// Starts the monitors detached from the script (a grandchild: the script never has them as a
// child, so its `wait` does not wait for them), in the job's session, so that the scheduler's
// end of the job reaches them too. Their stdout is nobody's; their stderr (a verdict, an error)
// is the job's.
void start_monitors(const std::vector<std::string>& argv, int script_fd) {
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (child == 0) {
    if (::fork() != 0) ::_exit(0);
    ::close(script_fd);
    const int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) ::dup2(null, STDOUT_FILENO);
    for (int fd = 3; fd < 1024; ++fd) ::close(fd);
    // A PBS front end over Slurm: mpirun starts its daemons with srun, which must share the job's
    // CPUs with the user's own steps rather than take some of them away.
    if (!environment("SLURM_JOB_ID").empty()) ::setenv("OMPI_MCA_plm_slurm_args", "--overlap", 1);
    // Open MPI 4's mpirun empties its user's session directory on the node as it starts (ompi.HOST.UID,
    // removed once empty), so of two mpiruns that start together one can remove the directory the other
    // is creating, and that one fails ("A call to mkdir was unable to create the desired directory ...
    // session_dir.c at line 107"). The script's first mpirun starts with the monitors': theirs gets a
    // session directory of its own, so it can never make the job's mpirun fail.
    // Those of jobs deleted before (SIGKILL leaves Open MPI no time to clean up) go first.
    os::remove_stale_monitors_session_directories(job_tmpdir());
    // mpirun's, after execvp: same pid, same start time.
    const std::string session = os::own_monitors_session_directory(job_tmpdir());
    ::setenv("OMPI_MCA_orte_top_session_dir", session.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::cerr << "pbs_parastack: cannot run " << argv[0] << ": " << std::strerror(errno)
              << "; this job runs unwatched\n";
    ::_exit(127);
  }
  while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
  }
}

// The script in an anonymous memory file: nothing on disk to clean up, even when the job is
// deleted with SIGKILL, and nothing a noexec /tmp can refuse to run. Not close-on-exec: the
// interpreter opens it again as /dev/fd/N.
int script_file(const std::string& text) {
  int fd = ::memfd_create("pbs_parastack-job-script", 0);
  if (fd < 0) {
    // An old kernel: an unnamed file in the job's temporary directory instead.
    fd = ::open(job_tmpdir().c_str(), O_TMPFILE | O_RDWR, 0700);
  }
  if (fd < 0) return -1;
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return -1;
    }
    written += static_cast<std::size_t>(n);
  }
  return fd;
}

bool is_csh(const std::string& shell) {
  const std::string name = shell.substr(shell.rfind('/') + 1);
  return name == "csh" || name == "tcsh";
}

// csh closes every descriptor above 2 when it starts, so /dev/fd/N names nothing for it: it gets
// the script as a file in a private directory instead, which a detached helper removes as soon as
// the shell has it open (or has ended, or after a minute). Returns the file's path, or "" (the
// caller then tries /dev/fd/N and csh says what is wrong).
std::string script_path_for_csh(const std::string& text) {
  std::string dir = job_tmpdir() + "/pbs_parastack-XXXXXX";
  if (!::mkdtemp(dir.data())) return {};
  const std::string path = dir + "/job-script";
  {
    std::ofstream out(path, std::ios::binary);
    out << text;
    if (!out) {
      std::filesystem::remove_all(dir);
      return {};
    }
  }
  const pid_t script = ::getpid();  // the shell, after execve
  const pid_t child = ::fork();
  if (child == 0) {
    if (::fork() != 0) ::_exit(0);
    for (int fd = 0; fd < 1024; ++fd) ::close(fd);
    for (int tick = 0; tick < 3000 && look_for_open_script(script, path) == ScriptLook::NotYet; ++tick) {
      ::usleep(20000);
    }
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
    ::_exit(0);
  }
  if (child > 0) {
    while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  return path;
}

// mpi-progress=on among the monitors' job options (the site's defaults, then the user's; the last
// of each name wins): the job's ranks get the progress library, in front of the script's
// LD_PRELOAD, so that mpirun hands it to the ranks it starts. Set after the monitors have started
// (they are MPI programs and keep no page). A library that cannot be read is said and left out.
void preload_progress_library(const std::vector<std::string>& monitor) {
  bool wanted = false;
  std::string library = PARASTACK_PROGRESS_LIBRARY;
  for (std::size_t i = 0; i + 1 < monitor.size(); ++i) {
    if (monitor[i] != "--job-options") continue;
    std::stringstream items(monitor[i + 1]);
    for (std::string item; std::getline(items, item, ',');) {
      const auto equals = item.find('=');
      if (equals == std::string::npos) continue;
      const std::string name = item.substr(0, equals), value = item.substr(equals + 1);
      if (name == "mpi-progress") wanted = value == "on" || value == "yes" || value == "true" || value == "1";
      if (name == "mpi-progress-library" && !value.empty()) library = value;
    }
  }
  if (!wanted) return;
  if (::access(library.c_str(), R_OK) != 0) {
    std::cerr << "pbs_parastack: mpi-progress: cannot read " << library << " (" << std::strerror(errno)
              << "); the job runs without it\n";
    return;
  }
  const std::string existing = environment("LD_PRELOAD");
  if ((":" + existing + ":").find(":" + library + ":") != std::string::npos) return;
  ::setenv("LD_PRELOAD", (library + (existing.empty() ? "" : ":" + existing)).c_str(), 1);
}

// The job id this job's environment says parastack already watches it under (the SPANK plugin of a
// site that watches every job sets PARASTACK_WATCHED_JOB before the script starts), or "". Two
// watchdogs on one job both sample it and both act on a hang: one is enough.
std::string already_watched() {
  const std::string watched = environment("PARASTACK_WATCHED_JOB");
  if (watched.empty()) return {};
  return watched == environment("SLURM_JOB_ID") || watched == environment("PBS_JOBID") ? watched : std::string{};
}

// Tells the script's own commands that this job is watched: `srun --parastack` starts no monitors
// of its own, and `parastack run` says that it would be a second watchdog. The plugin compares
// the value with the Slurm job id.
void say_job_is_watched() {
  std::string id = environment("SLURM_JOB_ID");
  if (id.empty()) id = environment("PBS_JOBID");
  if (!id.empty()) ::setenv("PARASTACK_WATCHED_JOB", id.c_str(), 1);
}

}  // namespace

int run_in_job(const std::vector<std::string>& args) {
  // The script first: whatever else fails, the job must run.
  std::string marker;
  for (std::size_t i = 0; i + 1 < args.size() && args[i] != "--"; ++i) {
    if (args[i] == "--end-marker") marker = args[i + 1];
  }
  std::stringstream text;
  text << std::cin.rdbuf();
  const int fd = script_file(marker.empty() ? text.str() : script_from_here_document(text.str(), marker));
  if (fd < 0) {
    std::cerr << "pbs_parastack: cannot keep the job script in memory or in a temporary file (" << std::strerror(errno)
              << ")\n";
    return 127;
  }
  const int null = ::open("/dev/null", O_RDONLY);  // a batch script's stdin, as it would be
  if (null >= 0) {
    ::dup2(null, STDIN_FILENO);
    ::close(null);
  }
  InJobOptions options;
  try {
    options = parse_in_job(args);
    if (!options.unknown.empty()) {
      std::string list;
      for (const auto& a : options.unknown) list += (list.empty() ? "" : " ") + a;
      std::cerr << "pbs_parastack: ignoring what this version does not know: " << list
                << " (the job was submitted by another version of pbs_parastack)\n";
    }
    if (options.monitor.empty()) throw std::runtime_error("no monitor command after --");
    if (const std::string watcher = already_watched(); !watcher.empty()) {
      std::cerr << "pbs_parastack: job " << watcher
                << " is already watched by parastack (the site's Slurm plugin watches every job): no second "
                   "watchdog is started, and the options given to pbs_parastack are not used\n";
    } else {
      start_monitors(monitors_command(options), fd);
      preload_progress_library(options.monitor);
      say_job_is_watched();
    }
  } catch (const std::exception& e) {
    std::cerr << "pbs_parastack: " << e.what() << "; this job runs unwatched\n";
    std::cerr.flush();
  }

  std::string path = "/dev/fd/" + std::to_string(fd);
  const passwd* user = ::getpwuid(::getuid());
  const std::string login_shell = user && user->pw_shell && *user->pw_shell ? user->pw_shell : "/bin/sh";
  const std::string& shell = options.runner == InJobOptions::Runner::Shell ? options.shell : login_shell;
  if (options.runner != InJobOptions::Runner::Itself && is_csh(shell)) {
    if (auto file = script_path_for_csh(marker.empty() ? text.str() : script_from_here_document(text.str(), marker));
        !file.empty()) {
      path = file;
    }
  }
  std::vector<std::string> argv;
  switch (options.runner) {
    case InJobOptions::Runner::Itself:
      argv = {path};
      break;
    case InJobOptions::Runner::Shell:
    case InJobOptions::Runner::LoginShell:
      argv = {shell, path};
      break;
  }
  argv.insert(argv.end(), options.script_args.begin(), options.script_args.end());
  std::vector<char*> exec_args;
  for (const auto& a : argv) exec_args.push_back(const_cast<char*>(a.c_str()));
  exec_args.push_back(nullptr);
  ::execv(exec_args[0], exec_args.data());
  std::cerr << "pbs_parastack: cannot run the job script with " << argv[0] << ": " << std::strerror(errno) << "\n";
  return 127;
}

}  // namespace parastack::pbs
