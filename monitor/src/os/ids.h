// Strong ids. The kernel uses pid_t for processes and threads alike, and mixing them up is the
// classic ptrace bug: PTRACE_* and waitpid(__WALL) take a thread id, /proc/PID/environ a process.
#pragma once

#include <sys/types.h>

#include <charconv>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

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

// "PID:START" (or with another separator): how an identity is handed to another process, in an
// option or an environment variable.
inline std::string to_string(const ProcessIdentity& process, char separator = ':') {
  return std::to_string(process.pid.value) + separator + std::to_string(process.start_ticks);
}
// The inverse, for a live process's identity (pid and start time both positive); nullopt for
// anything else.
inline std::optional<ProcessIdentity> parse_identity(std::string_view text, char separator = ':') {
  const auto at = text.find(separator);
  if (at == std::string_view::npos) return std::nullopt;
  pid_t pid = 0;
  std::uint64_t start = 0;
  const char* end = text.data() + text.size();
  const auto [after_pid, pid_error] = std::from_chars(text.data(), text.data() + at, pid);
  const auto [after_start, start_error] = std::from_chars(text.data() + at + 1, end, start);
  if (pid_error != std::errc() || after_pid != text.data() + at || start_error != std::errc() || after_start != end ||
      pid <= 0 || start == 0) {
    return std::nullopt;
  }
  return ProcessIdentity{Pid{pid}, start};
}

inline Tid main_thread(Pid pid) { return Tid{pid.value}; }
inline std::string proc_dir(Pid pid) { return "/proc/" + std::to_string(pid.value); }

}  // namespace parastack::os
