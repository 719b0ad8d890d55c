// Strong ids. The kernel uses pid_t for processes and threads alike, and mixing them up is the
// classic ptrace bug: PTRACE_* and waitpid(__WALL) take a thread id, /proc/PID/environ a process.
#pragma once

#include <sys/types.h>

#include <compare>
#include <cstdint>
#include <string>

namespace parastack::os {

struct Pid {
  pid_t value = 0;
  auto operator<=>(const Pid&) const = default;
};

struct Tid {
  pid_t value = 0;
  auto operator<=>(const Tid&) const = default;
};

// One process, for as long as it lives: a pid alone may name another process once it is reused.
// start_ticks is /proc/PID/stat's start time (clock ticks since boot, 10 ms); 0 means "whatever
// process has the pid now" (a one-off command given a pid by the user). Two processes could share
// both only if the pid came round again within one tick: a whole round of pid_max forks takes
// seconds.
struct ProcessIdentity {
  Pid pid;
  std::uint64_t start_ticks = 0;
  auto operator<=>(const ProcessIdentity&) const = default;
};

inline Tid main_thread(Pid pid) { return Tid{pid.value}; }
inline std::string proc_dir(Pid pid) { return "/proc/" + std::to_string(pid.value); }

}  // namespace parastack::os
