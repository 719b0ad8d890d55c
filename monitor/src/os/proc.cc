#include "os/proc.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <sstream>

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

std::optional<ProcStat> parse_stat(const std::string& text) {
  // "pid (comm) state ppid ...": comm can hold anything, so split at the last ')'.
  const auto open = text.find('(');
  const auto close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) {
    errno = EINVAL;
    return std::nullopt;
  }
  ProcStat stat;
  stat.comm = text.substr(open + 1, close - open - 1);
  std::istringstream rest(text.substr(close + 2));
  std::vector<std::string> fields;
  for (std::string field; rest >> field;) fields.push_back(field);
  // fields[0] is field 3 (state); utime=14, stime=15, starttime=22 in proc(5) numbering.
  if (fields.size() < 20) {
    errno = EINVAL;
    return std::nullopt;
  }
  stat.state = fields[0][0];
  stat.parent = Pid{static_cast<pid_t>(std::stol(fields[1]))};
  stat.flags = std::stoul(fields[6]);
  stat.cpu_ticks = std::stoull(fields[11]) + std::stoull(fields[12]);
  stat.start_ticks = std::stoull(fields[19]);
  return stat;
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

}  // namespace

std::optional<std::string> read_text_file(const std::string& path) { return read_file_raw(path); }

std::optional<ProcStat> read_stat(Pid pid) {
  auto text = read_file_raw(proc_dir(pid) + "/stat");
  if (!text) return std::nullopt;
  return parse_stat(*text);
}

std::optional<ProcStat> read_thread_stat(Pid pid, Tid tid) {
  auto text = read_file_raw(proc_dir(pid) + "/task/" + std::to_string(tid.value) + "/stat");
  if (!text) return std::nullopt;
  return parse_stat(*text);
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

std::optional<ProcStatus> read_status(Pid pid) {
  auto text = read_file_raw(proc_dir(pid) + "/status");
  if (!text) return std::nullopt;
  ProcStatus status;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("Uid:")) status.real_uid = static_cast<uid_t>(std::stoul(line.substr(4)));
    if (line.starts_with("TracerPid:")) status.tracer = static_cast<pid_t>(std::stol(line.substr(10)));
  }
  return status;
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

std::optional<std::vector<Mapping>> read_maps(Pid pid) {
  auto text = read_file_raw(proc_dir(pid) + "/maps");
  if (!text) return std::nullopt;
  std::vector<Mapping> maps;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    // start-end perms offset dev inode [path]
    Mapping m;
    char perms[5] = {};
    unsigned long long start = 0, end = 0, offset = 0, inode = 0;
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %4s %llx %*s %llu %n", &start, &end, perms, &offset,
                    &inode, &path_at) < 5) {
      continue;
    }
    m.start = start;
    m.end = end;
    m.offset = offset;
    m.inode = inode;
    m.readable = perms[0] == 'r';
    m.executable = perms[2] == 'x';
    if (path_at > 0 && static_cast<std::size_t>(path_at) < line.size()) m.path = line.substr(path_at);
    maps.push_back(std::move(m));
  }
  return maps;
}

std::optional<IoCounters> read_io(Pid pid) {
  auto text = read_file_raw(proc_dir(pid) + "/io");
  if (!text) return std::nullopt;
  IoCounters io;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("rchar:")) io.read_chars = std::stoull(line.substr(6));
    if (line.starts_with("wchar:")) io.written_chars = std::stoull(line.substr(6));
  }
  return io;
}

}  // namespace parastack::os
