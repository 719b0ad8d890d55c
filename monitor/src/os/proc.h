// Readers for /proc. Each returns nullopt when the file cannot be read and leaves errno set:
// ENOENT/ESRCH mean the process is gone, EACCES/EPERM that it is not ours to look at.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "os/ids.h"

namespace parastack::os {

std::optional<std::string> read_text_file(const std::string& path);

struct ProcStat {
  std::string comm;  // may contain spaces and parentheses
  char state = '?';  // R, S, D, T (stopped), t (tracing stop), Z (zombie), X
  Pid parent;
  std::uint64_t start_ticks = 0;     // start time since boot, in clock ticks: with the pid, a
                                     // process identity that survives pid reuse
  std::uint64_t cpu_ticks = 0;       // utime + stime
  std::uint64_t resident_pages = 0;  // rss: of the whole process when read for a pid
  unsigned long flags = 0;           // the kernel's task flags (PF_*), field 9
};
inline constexpr unsigned long kTaskExiting = 0x4;  // PF_EXITING: the task has begun to exit
std::optional<ProcStat> read_stat(Pid pid);
std::optional<ProcStat> read_thread_stat(Pid pid, Tid tid);

// Where a blocked thread waits (/proc/PID/task/TID/syscall), read without stopping it: the system
// call (-1: blocked, but not in one), its arguments, and the user stack pointer and pc it will
// return to. nullopt while the thread runs (the kernel says "running") or when unreadable.
struct ThreadWait {
  long syscall = -1;
  std::array<std::uint64_t, 6> args{};
  std::uint64_t stack_pointer = 0, pc = 0;
  bool operator==(const ThreadWait&) const = default;
};
std::optional<ThreadWait> read_thread_wait(Pid pid, Tid tid);

std::optional<std::unordered_map<std::string, std::string>> read_environ(Pid pid);
std::optional<std::vector<std::string>> read_cmdline(Pid pid);

struct ProcStatus {
  uid_t real_uid = 0;
  pid_t tracer = 0;        // TracerPid: non-zero while a debugger (or another monitor) traces it
  char state = '?';        // as ProcStat's; '?' when the file has no State line
  pid_t thread_group = 0;  // Tgid: the process of a thread read by its tid; 0 when the file has no Tgid line
};
std::optional<ProcStatus> read_status(Pid pid);
std::optional<ProcStatus> read_thread_status(Pid pid, Tid tid);

// The identity of the process that has `pid` now; nullopt if there is none.
std::optional<ProcessIdentity> identify(Pid pid);
// True while `process` is alive (a zombie is not) and its pid has not passed to another process.
// With start_ticks 0, whether any live process has the pid.
bool is_alive(const ProcessIdentity& process);
// True when `process` has the pid now (alive or a zombie); a stale identity is false.
bool has_pid_now(const ProcessIdentity& process);

// Every process, and every thread of one process.
std::vector<Pid> list_processes();
std::vector<Tid> list_threads(Pid pid);

struct Mapping {
  std::uint64_t start = 0, end = 0, offset = 0;
  bool readable = false, writable = false, executable = false;
  std::uint64_t inode = 0;
  std::string path;  // empty for anonymous mappings; "[stack]", "[vdso]" for special ones
  bool contains(std::uint64_t address) const { return address >= start && address < end; }
  bool operator==(const Mapping&) const = default;
};
std::optional<std::vector<Mapping>> read_maps(Pid pid);
// The file mapped at exactly [start, end) now, named as /proc/PID/maps names it (readlink of
// /proc/PID/map_files/START-END: a few microseconds, where reading the maps takes hundreds, and
// allowed to whoever may trace the process). nullopt when no mapping has exactly that range (one
// unmapped, or split by mprotect) or it cannot be read.
std::optional<std::string> mapped_file(Pid pid, std::uint64_t start, std::uint64_t end);

struct IoCounters {
  std::uint64_t read_chars = 0, written_chars = 0;  // rchar, wchar
};
std::optional<IoCounters> read_io(Pid pid);

// What the scheduler has given a thread so far (/proc/PID/schedstat: the main thread's, for a
// pid): time on a CPU, and time it was runnable but waited for one (in the run queue).
struct SchedStat {
  std::uint64_t cpu_ns = 0, run_delay_ns = 0;
};
std::optional<SchedStat> read_schedstat(Pid pid);
// How long ago a process started (its ProcStat::start_ticks, against the clock the kernel counts
// them on, CLOCK_BOOTTIME); nullopt when that clock cannot be read.
std::optional<std::uint64_t> age_ns(std::uint64_t start_ticks);
// Clock ticks (ProcStat's start_ticks, cpu_ticks) in nanoseconds.
std::uint64_t ticks_to_ns(std::uint64_t ticks);

// The TCP ports `pid` listens on, IPv4 and IPv6 (its socket descriptors matched against the LISTEN
// sockets of its network namespace, /proc/PID/net/tcp and tcp6), sorted; nullopt when its
// descriptors cannot be read. What tells an srun's tasks from another's: they carry its port.
std::optional<std::vector<std::uint16_t>> listening_tcp_ports(Pid pid);

// The parsers behind the readers, on a file's text: pure, and they never throw. nullopt (errno
// EINVAL) when a field they need is missing or not a number; parse_maps skips the lines it cannot
// read and always has a value.
std::optional<ProcStat> parse_stat(std::string_view text);
std::optional<ProcStatus> parse_status(std::string_view text);
std::optional<std::vector<Mapping>> parse_maps(std::string_view text);
std::optional<IoCounters> parse_io(std::string_view text);
std::optional<SchedStat> parse_schedstat(std::string_view text);
std::optional<ThreadWait> parse_syscall(std::string_view text);
// A /proc/net/tcp or tcp6 table: each LISTEN socket's inode and local port.
struct SocketPort {
  std::uint64_t inode = 0;
  std::uint16_t port = 0;
};
std::vector<SocketPort> parse_tcp_listeners(std::string_view text);

}  // namespace parastack::os
