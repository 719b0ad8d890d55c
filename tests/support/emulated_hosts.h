// Emulated hosts: several "nodes" on this machine, each in its own network, UTS, PID and mount
// namespace, with its own address on a private bridge, its own hostname, its own /proc and an ssh
// server (dropbear). Open MPI reaches them as it reaches real nodes: its default ssh launcher,
// a hostfile of names, the TCP transport. A monitor on one host sees only that host's processes.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/mpi_job.h"

namespace parastack::testing {

class EmulatedHosts {
 public:
  // Why emulated hosts cannot run here (not root, a tool missing, no namespaces), or nothing.
  static std::optional<std::string> unavailable();

  // Brings up `count` hosts named node1, node2... with addresses 10.77.0.1, 10.77.0.2..., each
  // offering `slots` slots in hostfile(). Waits until each accepts ssh from node1. Throws on
  // failure.
  EmulatedHosts(int count, int slots);
  // Kills every host's init: the kernel then ends every process on that host.
  ~EmulatedHosts() = default;
  EmulatedHosts(const EmulatedHosts&) = delete;
  EmulatedHosts& operator=(const EmulatedHosts&) = delete;

  static std::string name(int host) { return "node" + std::to_string(host + 1); }
  // The command prefix that runs a command on `host` (nsenter into all its namespaces).
  std::vector<std::string> on(int host) const;
  // The hosts in the format of Torque/PBS's $PBS_NODEFILE (one line per slot), which Open MPI
  // also reads as a hostfile.
  std::string hostfile() const { return (dir_.path() / "hostfile").string(); }

  // The pid a process has inside its host's PID namespace (pid is as seen here).
  static pid_t pid_inside(pid_t pid);
  // The host a process (pid as seen here) runs on, or -1 if on none of them.
  int host_of(pid_t pid) const;

 private:
  TempDir dir_;
  std::vector<std::unique_ptr<ChildProcess>> hosts_;  // unshare, whose child is the host's init
  std::vector<pid_t> init_;                           // each host's init, as seen here
};

}  // namespace parastack::testing
