// Strong ids. The kernel uses pid_t for processes and threads alike, and mixing them up is the
// classic ptrace bug: PTRACE_* and waitpid(__WALL) take a thread id, /proc/PID/environ a process.
#pragma once

#include <sys/types.h>

#include <compare>
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

inline Tid main_thread(Pid pid) { return Tid{pid.value}; }
inline std::string proc_dir(Pid pid) { return "/proc/" + std::to_string(pid.value); }

}  // namespace parastack::os
