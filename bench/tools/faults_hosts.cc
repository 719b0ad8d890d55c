// parastack-faults-hosts: the 2-host part of the fault campaign (bench/faults.sh runs it). A
// healthy 8-rank job spans two emulated hosts (tests/support/emulated_hosts.h: their own network,
// hostname and /proc, Open MPI over ssh and TCP), with one parastack-monitor per host beside it.
// Each trial kills, terminates, or stops-continues-kills the leading monitor (node1) or the
// follower (node2) at a random moment 0.3-6 s after the monitors started, then checks what
// faults.sh checks on one host: no rank left stopped or traced, every rank runs on, no monitor
// left behind, and at the job's end its status 0 and its own output line.
//
// Prints one line per trial, "TRIAL hosts FAULT OK" or "TRIAL hosts FAULT problem...", for
// faults.sh's table; exits 77 (with the reason) where emulated hosts cannot run.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/emulated_hosts.h"
#include "support/mpi_job.h"

namespace parastack::bench {
namespace {

using namespace std::chrono_literals;
using testing::ChildOptions;
using testing::ChildProcess;
using testing::EmulatedHosts;
using testing::read_file;
using testing::TempDir;
using Clock = std::chrono::steady_clock;

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Every live process whose name is `comm` (as /proc/PID/comm has it, at most 15 characters).
std::vector<pid_t> processes_named(const std::string& comm) {
  std::vector<pid_t> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (read_file(entry.path() / "comm") != comm + "\n") continue;
    const std::string stat = read_file(entry.path() / "stat");
    const auto paren = stat.rfind(')');
    if (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z') continue;
    found.push_back(std::stoi(name));
  }
  return found;
}

// The ranks of this tool's jobs: ps_solver processes run from the build's own path (another job on
// the machine, another build's, is not ours to judge).
std::vector<pid_t> our_ranks() {
  const std::string program = testing::test_program("ps_solver");
  std::vector<pid_t> ours;
  for (pid_t pid : processes_named("ps_solver")) {
    const std::string command = read_file("/proc/" + std::to_string(pid) + "/cmdline");
    if (command.compare(0, program.size() + 1, program + '\0') == 0) ours.push_back(pid);
  }
  return ours;
}

char state_of(pid_t pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() ? stat[paren + 2] : '\0';
}

// utime + stime, in ticks; -1 once the process is gone.
long long cpu_ticks(pid_t pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = stat.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream fields(stat.substr(paren + 2));
  std::string field;
  long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stoll(field);
    if (i == 15) stime = std::stoll(field);
  }
  return utime + stime;
}

std::string tracer_of(pid_t pid) {
  std::istringstream status(read_file("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("TracerPid:", 0) == 0) return line.substr(line.find_first_not_of(" \t", 10));
  }
  return "0";
}

// Every rank of the job: not in a trace stop, not traced, and running on (CPU time grows within 5 s).
std::string check_ranks() {
  std::string problems;
  for (pid_t rank : our_ranks()) {
    const std::string which = "rank pid " + std::to_string(rank);
    if (state_of(rank) == 't') problems += which + " left in a trace stop; ";
    if (const auto tracer = tracer_of(rank); tracer != "0") problems += which + " still traced by " + tracer + "; ";
    const long long before = cpu_ticks(rank);
    const auto deadline = Clock::now() + 5s;
    while (true) {
      const long long after = cpu_ticks(rank);
      if (after < 0 || after > before) break;
      if (Clock::now() > deadline) {
        problems += which + " did not run for 5 s; ";
        break;
      }
      std::this_thread::sleep_for(10ms);  // polling a condition (the rank's CPU time), bounded
    }
  }
  return problems;
}

// One process for a report: pid, name, state and wait channel.
std::string describe(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::string comm = read_file(proc + "/comm");
  if (!comm.empty()) comm.pop_back();
  return "[" + std::to_string(pid) + " " + comm + " " + std::string(1, state_of(pid)) + " " +
         read_file(proc + "/wchan") + "] ";
}

// What every rank is doing now, for a job that did not end: pid, host, state, tracer, wait channel.
std::string ranks_now() {
  std::string said;
  for (pid_t rank : our_ranks()) {
    const std::string proc = "/proc/" + std::to_string(rank);
    said += "[pid " + std::to_string(rank) + " state " + std::string(1, state_of(rank)) + " tracer " + tracer_of(rank) +
            " wchan " + read_file(proc + "/wchan") + " cpu " + std::to_string(cpu_ticks(rank)) + "] ";
  }
  return said;
}

void await_gone(pid_t pid, std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (::kill(pid, 0) == 0 && state_of(pid) != 'Z' && state_of(pid) != '\0' && Clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);  // polling a condition (the process's end), bounded
  }
}

void hit(pid_t pid, const std::string& way, std::mt19937& random) {
  std::uniform_int_distribution<int> pause_ms(1, 30);
  if (way == "kill") {
    ::kill(pid, SIGKILL);
  } else if (way == "term") {
    ::kill(pid, SIGTERM);
  } else {
    ::kill(pid, SIGSTOP);
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(random)));
    ::kill(pid, SIGCONT);
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(random)));
    ::kill(pid, SIGKILL);
  }
  await_gone(pid, 30s);
}

// The pid, as seen here, of the mpirun the ChildProcess started on node1, inside node1.
pid_t launcher_inside(ChildProcess& process) {
  const auto deadline = Clock::now() + 60s;
  while (Clock::now() < deadline && process.running()) {
    for (pid_t pid : process.descendants()) {
      if (read_file("/proc/" + std::to_string(pid) + "/comm") == "mpirun\n") return EmulatedHosts::pid_inside(pid);
    }
    std::this_thread::sleep_for(20ms);
  }
  return 0;
}

struct Campaign {
  EmulatedHosts& hosts;
  std::string monitor;
  std::mt19937 random;
  int trials_left;

  // The monitors on this campaign's hosts (not those of any other job on the machine).
  std::vector<pid_t> monitors_on_our_hosts() const {
    std::vector<pid_t> ours;
    for (pid_t pid : processes_named("parastack-monit")) {
      if (hosts.host_of(pid) >= 0) ours.push_back(pid);
    }
    return ours;
  }

  std::vector<std::string> mpirun(const std::vector<std::string>& rest) const {
    return hosts.on(0) +
           std::vector<std::string>{"mpirun", "--hostfile", hosts.hostfile(), "--mca", "btl", "tcp,self"} + rest;
  }

  // One healthy job, and monitor trials beside it while it has time left for one.
  void run_job() {
    TempDir dir;
    const auto out = (dir.path() / "app.out").string();
    ChildProcess app(
        mpirun({"-np", "8", "-x", "PS_READY_DIR", testing::test_program("ps_solver"), "blocking", "60"}),
        ChildOptions{testing::mpi_test_environment(), out, (dir.path() / "app.err").string(), dir.path().string()});
    for (int rank = 0; rank < 8; ++rank) app.wait_ready_file("rank." + std::to_string(rank), 120s);
    const auto started = Clock::now();
    const pid_t launcher = launcher_inside(app);
    if (launcher <= 0) throw std::runtime_error("no mpirun on node1: " + read_file(dir.path() / "app.err"));
    for (int t = 0; trials_left > 0 && app.running() && Clock::now() - started < 40s; ++t, --trials_left) {
      const std::string way = std::vector<std::string>{"kill", "term", "stop-cont-kill"}[trials_left % 3];
      const bool leader = (trials_left / 3) % 2 == 0;
      const std::string fault = std::string(leader ? "leader" : "follower") + "-" + way;
      const auto problems = trial(dir, launcher, leader, way, t);
      std::cout << "TRIAL hosts " << fault << ' ' << (problems.empty() ? "OK" : problems) << std::endl;
    }
    const int status = app.wait_exit(180s);
    std::string problems;
    if (status < 0) {
      problems = "job still running 180 s after its last trial: ranks " + ranks_now() + "; its launcher " +
                 describe(app.pid()) + ", under it ";
      for (pid_t pid : app.descendants()) problems += describe(pid);
      problems += "; ";
    }
    if (status > 0) problems = "job exited with status " + std::to_string(status) + "; ";
    if (status != 0) problems += "its stderr: " + read_file(dir.path() / "app.err").substr(0, 800) + "; ";
    if (read_file(out).find("iterations ") == std::string::npos) problems += "job output lost its line; ";
    std::cout << "TRIAL hosts job " << (problems.empty() ? "OK" : problems) << std::endl;
  }

  std::string trial(const TempDir& dir, pid_t launcher, bool leader, const std::string& way, int t) {
    const auto log = dir.path() / ("monitors." + std::to_string(t) + ".err");
    std::string problems;
    {
      ChildProcess monitors(
          mpirun({"--map-by", "ppr:1:node", "-np", "2", monitor, "--pid", std::to_string(launcher), "--report",
                  (dir.path() / ("report." + std::to_string(t) + ".json")).string(), "--log-level", "info"}),
          ChildOptions{testing::mpi_test_environment(), {}, log.string(), dir.path().string()});
      std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(300, 6000)(random)));
      pid_t target = 0;
      for (pid_t pid : processes_named("parastack-monit")) {
        if (hosts.host_of(pid) == (leader ? 0 : 1)) target = pid;
      }
      if (target > 0) {
        hit(target, way, random);
        // A leader asked to stop says so (read once its mpirun has passed on all it wrote); a
        // follower's log line is the leader's "monitoring lost".
        if (way == "term" && leader) {
          monitors.wait_exit(30s);
          if (read_file(log).find("asked to stop") == std::string::npos) {
            problems += "no line in the log after SIGTERM: " + read_file(log).substr(0, 600) + "; ";
          }
        }
      }
      // The monitors' mpirun goes with the scope, as a batch system ends a step.
    }
    // The monitors' mpirun is gone: no monitor may outlive it on either host.
    const auto deadline = Clock::now() + 15s;
    while (!monitors_on_our_hosts().empty() && Clock::now() < deadline) std::this_thread::sleep_for(20ms);
    if (const auto left = monitors_on_our_hosts(); !left.empty()) {
      problems += std::to_string(left.size()) + " monitor(s) outlived their mpirun; ";
      for (pid_t pid : left) ::kill(pid, SIGKILL);
    }
    problems += check_ranks();
    return problems;
  }
};

}  // namespace
}  // namespace parastack::bench

// NOLINTNEXTLINE(bugprone-exception-escape): a bench tool; terminate names what it could not handle.
int main(int argc, char** argv) {
  using namespace parastack;
  CLI::App app{"parastack-faults-hosts: monitors of a 2-host job killed at random moments (bench/faults.sh)"};
  int trials = 24;
  unsigned seed = 1;
  std::string monitor = PARASTACK_MONITOR_BIN;
  app.add_option("--trials", trials, "Monitor trials")->capture_default_str();
  app.add_option("--seed", seed, "Seed of the random moments")->capture_default_str();
  app.add_option("--monitor", monitor, "parastack-monitor")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (auto why = testing::EmulatedHosts::unavailable()) {
    std::cout << "SKIP no emulated hosts: " << *why << std::endl;
    return 77;
  }
  testing::EmulatedHosts hosts(2, 4);
  bench::Campaign campaign{hosts, monitor, std::mt19937(seed), trials};
  while (campaign.trials_left > 0) campaign.run_job();
  return 0;
}
