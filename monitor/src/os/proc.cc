#include "os/proc.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string_view>

#include "os/scoped_fd.h"

namespace parastack::os {
namespace {

std::optional<std::string> read_file_raw(const std::string& path) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  std::string data;
  char buffer[8192];
  while (true) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    if (n == 0) break;
    data.append(buffer, static_cast<std::size_t>(n));
  }
  return data;
}

std::vector<std::string> split_nul(const std::string& data) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start < data.size()) {
    const std::size_t end = data.find('\0', start);
    parts.push_back(data.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return parts;
}

std::vector<pid_t> numeric_entries(const std::string& dir) {
  std::vector<pid_t> ids;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return ids;
  while (const dirent* entry = ::readdir(d)) {
    pid_t id = 0;
    const char* name = entry->d_name;
    const auto [end, error] = std::from_chars(name, name + std::strlen(name), id);
    if (error == std::errc() && *end == '\0') ids.push_back(id);
  }
  ::closedir(d);
  return ids;
}

// The file /proc/PID/NAME read whole and parsed; nullopt (errno set) when it cannot be read.
template <class Parse>
auto read_parsed(Pid pid, const char* name, Parse parse) -> decltype(parse(std::string_view())) {
  const auto text = read_file_raw(proc_dir(pid) + "/" + name);
  if (!text) return std::nullopt;
  return parse(*text);
}

// The file /proc/PID/task/TID/NAME read whole and parsed, as read_parsed.
template <class Parse>
auto read_thread_parsed(Pid pid, Tid tid, const char* name, Parse parse) -> decltype(parse(std::string_view())) {
  const auto text = read_file_raw(proc_dir(pid) + "/task/" + std::to_string(tid.value) + "/" + name);
  if (!text) return std::nullopt;
  return parse(*text);
}

}  // namespace

std::optional<std::string> read_text_file(const std::string& path) { return read_file_raw(path); }

std::optional<ProcStat> read_stat(Pid pid) { return read_parsed(pid, "stat", parse_stat); }

std::optional<ProcStat> read_thread_stat(Pid pid, Tid tid) { return read_thread_parsed(pid, tid, "stat", parse_stat); }

std::optional<ThreadWait> read_thread_wait(Pid pid, Tid tid) {
  return read_thread_parsed(pid, tid, "syscall", parse_syscall);
}

std::optional<std::unordered_map<std::string, std::string>> read_environ(Pid pid) {
  auto data = read_file_raw(proc_dir(pid) + "/environ");
  if (!data) return std::nullopt;
  std::unordered_map<std::string, std::string> environment;
  for (const auto& entry : split_nul(*data)) {
    const auto equals = entry.find('=');
    if (equals != std::string::npos) environment.emplace(entry.substr(0, equals), entry.substr(equals + 1));
  }
  return environment;
}

std::optional<std::vector<std::string>> read_cmdline(Pid pid) {
  auto data = read_file_raw(proc_dir(pid) + "/cmdline");
  if (!data) return std::nullopt;
  return split_nul(*data);
}

std::optional<ProcStatus> read_status(Pid pid) { return read_parsed(pid, "status", parse_status); }

std::optional<ProcStatus> read_thread_status(Pid pid, Tid tid) {
  return read_thread_parsed(pid, tid, "status", parse_status);
}

std::optional<ProcessIdentity> identify(Pid pid) {
  const auto stat = read_stat(pid);
  if (!stat) return std::nullopt;
  return ProcessIdentity{pid, stat->start_ticks};
}

bool has_pid_now(const ProcessIdentity& process) {
  const auto stat = read_stat(process.pid);
  return stat && (process.start_ticks == 0 || stat->start_ticks == process.start_ticks);
}

bool is_alive(const ProcessIdentity& process) {
  const auto stat = read_stat(process.pid);
  return stat && stat->state != 'Z' && stat->state != 'X' &&
         (process.start_ticks == 0 || stat->start_ticks == process.start_ticks);
}

std::vector<Pid> list_processes() {
  std::vector<Pid> pids;
  for (pid_t id : numeric_entries("/proc")) pids.push_back(Pid{id});
  return pids;
}

std::vector<Tid> list_threads(Pid pid) {
  std::vector<Tid> tids;
  for (pid_t id : numeric_entries(proc_dir(pid) + "/task")) tids.push_back(Tid{id});
  return tids;
}

std::optional<std::vector<Mapping>> read_maps(Pid pid) { return read_parsed(pid, "maps", parse_maps); }

std::optional<std::string> mapped_file(Pid pid, std::uint64_t start, std::uint64_t end) {
  char link[96];
  std::snprintf(link, sizeof link, "/proc/%d/map_files/%llx-%llx", static_cast<int>(pid.value),
                static_cast<unsigned long long>(start), static_cast<unsigned long long>(end));
  char target[PATH_MAX];
  const ssize_t n = ::readlink(link, target, sizeof target);
  if (n <= 0 || static_cast<std::size_t>(n) == sizeof target) return std::nullopt;
  return std::string(target, static_cast<std::size_t>(n));
}

std::optional<std::vector<std::uint16_t>> listening_tcp_ports(Pid pid) {
  const std::string fd_dir = proc_dir(pid) + "/fd";
  DIR* d = ::opendir(fd_dir.c_str());
  if (!d) return std::nullopt;
  std::vector<std::uint64_t> sockets;
  while (const dirent* entry = ::readdir(d)) {
    char target[64];
    const std::string link = fd_dir + "/" + entry->d_name;
    const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    if (n <= 0) continue;
    const std::string_view text(target, static_cast<std::size_t>(n));
    constexpr std::string_view kSocket = "socket:[";
    if (!text.starts_with(kSocket) || !text.ends_with(']')) continue;
    std::uint64_t inode = 0;
    const auto digits = text.substr(kSocket.size(), text.size() - kSocket.size() - 1);
    if (std::from_chars(digits.data(), digits.data() + digits.size(), inode).ec == std::errc()) {
      sockets.push_back(inode);
    }
  }
  ::closedir(d);
  std::vector<std::uint16_t> ports;
  for (const char* table : {"net/tcp", "net/tcp6"}) {
    const auto text = read_file_raw(proc_dir(pid) + "/" + table);
    if (!text) continue;  // no IPv6 in this kernel
    for (const SocketPort& listener : parse_tcp_listeners(*text)) {
      if (std::find(sockets.begin(), sockets.end(), listener.inode) != sockets.end()) ports.push_back(listener.port);
    }
  }
  std::sort(ports.begin(), ports.end());
  ports.erase(std::unique(ports.begin(), ports.end()), ports.end());
  return ports;
}

std::optional<IoCounters> read_io(Pid pid) { return read_parsed(pid, "io", parse_io); }

std::optional<SchedStat> read_schedstat(Pid pid) { return read_parsed(pid, "schedstat", parse_schedstat); }

std::uint64_t ticks_to_ns(std::uint64_t ticks) {
  static const long ticks_per_second = ::sysconf(_SC_CLK_TCK);
  return ticks * (1'000'000'000u / static_cast<std::uint64_t>(ticks_per_second > 0 ? ticks_per_second : 100));
}

std::optional<std::uint64_t> age_ns(std::uint64_t start_ticks) {
  timespec now{};
  if (::clock_gettime(CLOCK_BOOTTIME, &now) != 0) return std::nullopt;
  const auto now_ns = static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(now.tv_nsec);
  const auto start_ns = ticks_to_ns(start_ticks);
  return now_ns > start_ns ? now_ns - start_ns : 0;
}

// ---- parsers: pure, and never throw on what they are given ----

namespace {

// The unsigned number at the start of `text` (after blanks), or nullopt.
template <class T>
std::optional<T> number_at(std::string_view text, int base = 10) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return std::nullopt;
  T value{};
  const auto [end, error] = std::from_chars(text.data() + first, text.data() + text.size(), value, base);
  if (error != std::errc()) return std::nullopt;
  return value;
}

// The value of the "Key:" line of a key-value file (/proc/PID/status, io), or an empty view.
std::string_view value_of(std::string_view text, std::string_view key) {
  for (std::size_t at = 0; at < text.size();) {
    const auto end = std::min(text.find('\n', at), text.size());
    const auto line = text.substr(at, end - at);
    if (line.starts_with(key)) return line.substr(key.size());
    at = end + 1;
  }
  return {};
}

}  // namespace

std::optional<ProcStat> parse_stat(std::string_view text) {
  // "pid (comm) state ppid ...": comm can hold anything, so split at the last ')'.
  const auto open = text.find('(');
  const auto close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    errno = EINVAL;
    return std::nullopt;
  }
  ProcStat stat;
  stat.comm = std::string(text.substr(open + 1, close - open - 1));
  // fields[0] is field 3 (state); flags = 9, utime = 14, stime = 15, starttime = 22, rss = 24
  // (proc(5)).
  std::vector<std::string_view> fields;
  const auto rest = text.substr(close + 1);
  for (std::size_t at = 0; at < rest.size();) {
    const auto first = rest.find_first_not_of(" \n", at);
    if (first == std::string_view::npos) break;
    const auto end = std::min(rest.find_first_of(" \n", first), rest.size());
    fields.push_back(rest.substr(first, end - first));
    at = end;
  }
  if (fields.size() < 22 || fields[0].size() != 1) {
    errno = EINVAL;
    return std::nullopt;
  }
  const auto parent = number_at<pid_t>(fields[1]);
  const auto flags = number_at<unsigned long>(fields[6]);
  const auto utime = number_at<std::uint64_t>(fields[11]);
  const auto stime = number_at<std::uint64_t>(fields[12]);
  const auto start = number_at<std::uint64_t>(fields[19]);
  const auto resident = number_at<std::uint64_t>(fields[21]);
  if (!parent || !flags || !utime || !stime || !start || !resident) {
    errno = EINVAL;
    return std::nullopt;
  }
  stat.state = fields[0][0];
  stat.parent = Pid{*parent};
  stat.flags = *flags;
  stat.cpu_ticks = *utime + *stime;
  stat.resident_pages = *resident;
  stat.start_ticks = *start;
  return stat;
}

std::optional<ProcStatus> parse_status(std::string_view text) {
  const auto uid = number_at<uid_t>(value_of(text, "Uid:"));
  const auto tracer = number_at<pid_t>(value_of(text, "TracerPid:"));
  if (!uid || !tracer) {
    errno = EINVAL;
    return std::nullopt;
  }
  // "State:\tS (sleeping)"
  const auto state = value_of(text, "State:");
  const auto letter = state.find_first_not_of(" \t");
  const auto thread_group = number_at<pid_t>(value_of(text, "Tgid:"));
  return ProcStatus{*uid, *tracer, letter == std::string_view::npos ? '?' : state[letter], thread_group.value_or(0)};
}

std::optional<std::vector<Mapping>> parse_maps(std::string_view text) {
  std::vector<Mapping> maps;
  for (std::size_t at = 0; at < text.size();) {
    const auto end = std::min(text.find('\n', at), text.size());
    const std::string line(text.substr(at, end - at));
    at = end + 1;
    // start-end perms offset dev inode [path]
    Mapping m;
    char perms[5] = {};
    unsigned long long start = 0, stop = 0, offset = 0, inode = 0;
    int path_at = 0;
    // NOLINTNEXTLINE(cert-err34-c): the count of conversions is checked; a line short of it is skipped.
    if (std::sscanf(line.c_str(), "%llx-%llx %4s %llx %*s %llu %n", &start, &stop, perms, &offset, &inode, &path_at) <
        5) {
      continue;  // not a mapping line: skipped, never guessed
    }
    m.start = start;
    m.end = stop;
    m.offset = offset;
    m.inode = inode;
    m.readable = perms[0] == 'r';
    m.writable = perms[1] == 'w';
    m.executable = perms[2] == 'x';
    if (path_at > 0 && static_cast<std::size_t>(path_at) < line.size()) m.path = line.substr(path_at);
    maps.push_back(std::move(m));
  }
  return maps;
}

std::optional<IoCounters> parse_io(std::string_view text) {
  const auto read = number_at<std::uint64_t>(value_of(text, "rchar:"));
  const auto written = number_at<std::uint64_t>(value_of(text, "wchar:"));
  if (!read || !written) {
    errno = EINVAL;
    return std::nullopt;
  }
  return IoCounters{*read, *written};
}

std::optional<SchedStat> parse_schedstat(std::string_view text) {
  // "1693450512 10735812345 40122\n": time on a CPU (ns), time waiting in the run queue (ns),
  // time slices run.
  const auto cpu = number_at<std::uint64_t>(text);
  const auto blank = text.find_first_of(" \t", text.find_first_not_of(" \t"));
  const auto delay = blank == std::string_view::npos ? std::nullopt : number_at<std::uint64_t>(text.substr(blank));
  if (!cpu || !delay) {
    errno = EINVAL;
    return std::nullopt;
  }
  return SchedStat{*cpu, *delay};
}

std::optional<ThreadWait> parse_syscall(std::string_view text) {
  // "232 0x5 0x7ffe8c9b19ec 0x1 0xffffffff 0x0 0x7f2a794886d0 0x7ffe8c9b19c8 0x7f2a79394ef3": the
  // call, six arguments, sp, pc; "-1 0x7ffe8c9b19c8 0x7f2a79394ef3" when blocked outside a call;
  // "running" otherwise (the kernel could not catch the thread asleep).
  std::vector<std::string_view> fields;
  for (std::size_t at = text.find_first_not_of(" \n"); at != std::string_view::npos;
       at = text.find_first_not_of(" \n", at)) {
    const auto end = std::min(text.find_first_of(" \n", at), text.size());
    fields.push_back(text.substr(at, end - at));
    at = end;
  }
  const auto hex = [](std::string_view field) -> std::optional<std::uint64_t> {
    if (!field.starts_with("0x")) return std::nullopt;
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(field.data() + 2, field.data() + field.size(), value, 16);
    if (error != std::errc() || end != field.data() + field.size() || field.size() == 2) return std::nullopt;
    return value;
  };
  ThreadWait wait;
  const bool in_call = fields.size() == 9, outside_call = fields.size() == 3 && fields[0] == "-1";
  if (in_call || outside_call) {
    const auto [end, error] = std::from_chars(fields[0].data(), fields[0].data() + fields[0].size(), wait.syscall);
    bool ok = error == std::errc() && end == fields[0].data() + fields[0].size();
    for (std::size_t i = 1; ok && i + 2 < fields.size(); ++i) {
      const auto value = hex(fields[i]);
      ok = value.has_value();
      if (ok) wait.args[i - 1] = *value;
    }
    const auto sp = hex(fields[fields.size() - 2]), pc = hex(fields.back());
    if (ok && sp && pc) {
      wait.stack_pointer = *sp;
      wait.pc = *pc;
      return wait;
    }
  }
  errno = EINVAL;
  return std::nullopt;
}

std::vector<SocketPort> parse_tcp_listeners(std::string_view text) {
  // "  sl  local_address rem_address   st tx_queue:rx_queue tr:tm->when retrnsmt   uid  timeout inode"
  // "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 12345 ..."
  constexpr std::string_view kListen = "0A";
  std::vector<SocketPort> listeners;
  std::size_t line_start = text.find('\n');  // the header
  while (line_start != std::string_view::npos && line_start < text.size()) {
    const std::size_t line_end = text.find('\n', line_start + 1);
    const std::string_view line = text.substr(
        line_start + 1, line_end == std::string_view::npos ? std::string_view::npos : line_end - line_start - 1);
    line_start = line_end;
    std::vector<std::string_view> fields;
    for (std::size_t at = line.find_first_not_of(' '); at != std::string_view::npos;
         at = line.find_first_not_of(' ', at)) {
      const std::size_t end = line.find(' ', at);
      fields.push_back(line.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
      at = end;
    }
    if (fields.size() < 10 || fields[3] != kListen) continue;
    const std::string_view local = fields[1];
    const std::size_t colon = local.rfind(':');
    if (colon == std::string_view::npos) continue;
    const auto port = number_at<std::uint16_t>(local.substr(colon + 1), 16);
    const auto inode = number_at<std::uint64_t>(fields[9]);
    if (port && inode && *inode != 0) listeners.push_back({*inode, *port});
  }
  return listeners;
}

}  // namespace parastack::os
