// The /proc parsers (os/proc.h) on anything: a process controls its own name and mappings, and a
// file read while the process exits can be cut anywhere. The first byte picks the parser (0 stat,
// 1 status, 2 maps, 3 io, 4 net/tcp, 5 task/TID/syscall, 6 schedstat); the rest is the file. A parser never throws,
// says EINVAL when it gives nothing, and what it gives, written back in the kernel's layout, parses to the same value.
#include <cerrno>
#include <cstdint>
#include <string>
#include <string_view>

#include "check.h"
#include "os/proc.h"

namespace {

using namespace parastack::os;

std::string hex(std::uint64_t value) {
  static const char digits[] = "0123456789abcdef";
  std::string text;
  do {
    text.insert(text.begin(), digits[value % 16]);
    value /= 16;
  } while (value != 0);
  return text;
}

void check_stat(std::string_view text) {
  errno = 0;
  const auto stat = parse_stat(text);
  if (!stat) {
    FUZZ_REQUIRE(errno == EINVAL);
    return;
  }
  // The name is everything between the first '(' and the last ')'.
  const auto open = text.find('('), close = text.rfind(')');
  FUZZ_REQUIRE(open != std::string_view::npos && close != std::string_view::npos && open < close);
  FUZZ_REQUIRE(stat->comm == text.substr(open + 1, close - open - 1));
  FUZZ_REQUIRE(stat->state != ' ' && stat->state != '\n' && stat->state != ')');
  // Fields 3 (state), 4 (ppid), 9 (flags), 14 + 15 (utime + stime), 22 (starttime).
  const std::string line = "1 (" + stat->comm + ") " + stat->state + " " + std::to_string(stat->parent.value) +
                           " 0 0 0 0 " + std::to_string(stat->flags) + " 0 0 0 0 " + std::to_string(stat->cpu_ticks) +
                           " 0 0 0 0 0 0 0 " + std::to_string(stat->start_ticks) + " 0 0\n";
  const auto again = parse_stat(line);
  FUZZ_REQUIRE(again);
  FUZZ_REQUIRE(again->comm == stat->comm && again->state == stat->state);
  FUZZ_REQUIRE(again->parent.value == stat->parent.value && again->flags == stat->flags);
  FUZZ_REQUIRE(again->cpu_ticks == stat->cpu_ticks && again->start_ticks == stat->start_ticks);
}

void check_status(std::string_view text) {
  errno = 0;
  const auto status = parse_status(text);
  if (!status) {
    FUZZ_REQUIRE(errno == EINVAL);
    return;
  }
  const std::string state = status->state == '?' ? "" : std::string("State:\t") + status->state + " (x)\n";
  const std::string thread_group =
      status->thread_group == 0 ? "" : "Tgid:\t" + std::to_string(status->thread_group) + "\n";
  const auto again =
      parse_status("Name:\tx\n" + state + thread_group + "TracerPid:\t" + std::to_string(status->tracer) + "\nUid:\t" +
                   std::to_string(status->real_uid) + "\t0\t0\t0\n");
  FUZZ_REQUIRE(again && again->real_uid == status->real_uid && again->tracer == status->tracer &&
               again->state == status->state && again->thread_group == status->thread_group);
}

void check_maps(std::string_view text) {
  const auto maps = parse_maps(text);
  FUZZ_REQUIRE(maps);  // always a value: lines it cannot read are skipped
  std::size_t lines = 0;
  for (std::size_t at = 0; at < text.size(); ++lines) {
    const auto end = text.find('\n', at);
    at = end == std::string_view::npos ? text.size() : end + 1;
  }
  FUZZ_REQUIRE(maps->size() <= lines);
  for (const auto& m : *maps) {
    FUZZ_REQUIRE(m.path.find('\n') == std::string::npos);
    std::string line = hex(m.start) + "-" + hex(m.end) + " " + (m.readable ? "r" : "-") + (m.writable ? "w" : "-") +
                       (m.executable ? "x" : "-") + "p " + hex(m.offset) + " fe:00 " + std::to_string(m.inode);
    if (!m.path.empty()) line += "                     " + m.path;
    const auto again = parse_maps(line + "\n");
    FUZZ_REQUIRE(again && again->size() == 1);
    const auto& a = again->front();
    FUZZ_REQUIRE(a.start == m.start && a.end == m.end && a.offset == m.offset && a.inode == m.inode);
    FUZZ_REQUIRE(a.readable == m.readable && a.writable == m.writable && a.executable == m.executable &&
                 a.path == m.path);
  }
}

void check_io(std::string_view text) {
  errno = 0;
  const auto io = parse_io(text);
  if (!io) {
    FUZZ_REQUIRE(errno == EINVAL);
    return;
  }
  const auto again = parse_io("rchar: " + std::to_string(io->read_chars) +
                              "\nwchar: " + std::to_string(io->written_chars) + "\nsyscr: 1\n");
  FUZZ_REQUIRE(again && again->read_chars == io->read_chars && again->written_chars == io->written_chars);
}

void check_schedstat(std::string_view text) {
  errno = 0;
  const auto sched = parse_schedstat(text);
  if (!sched) {
    FUZZ_REQUIRE(errno == EINVAL);
    return;
  }
  const auto again =
      parse_schedstat(std::to_string(sched->cpu_ns) + " " + std::to_string(sched->run_delay_ns) + " 7\n");
  FUZZ_REQUIRE(again && again->cpu_ns == sched->cpu_ns && again->run_delay_ns == sched->run_delay_ns);
}

void check_tcp_listeners(std::string_view text) {
  for (const SocketPort& listener : parse_tcp_listeners(text)) {
    FUZZ_REQUIRE(listener.inode != 0);
    const auto again =
        parse_tcp_listeners("  sl  local_address rem_address   st\n   0: 00000000:" + hex(listener.port) +
                            " 00000000:0000 0A 00000000:00000000 00:00000000 " + "00000000  1000        0 " +
                            std::to_string(listener.inode) + " 1\n");
    FUZZ_REQUIRE(again.size() == 1 && again[0].port == listener.port && again[0].inode == listener.inode);
  }
}

void check_syscall(std::string_view text) {
  errno = 0;
  const auto wait = parse_syscall(text);
  if (!wait) {
    FUZZ_REQUIRE(errno == EINVAL);
    return;
  }
  std::string line = std::to_string(wait->syscall);
  if (wait->syscall != -1) {
    for (const auto arg : wait->args) line += " 0x" + hex(arg);
  }
  line += " 0x" + hex(wait->stack_pointer) + " 0x" + hex(wait->pc) + "\n";
  const auto again = parse_syscall(line);
  FUZZ_REQUIRE(again && again->syscall == wait->syscall && again->stack_pointer == wait->stack_pointer &&
               again->pc == wait->pc && (wait->syscall == -1 || again->args == wait->args));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 7) {
    case 0:
      check_stat(text);
      break;
    case 1:
      check_status(text);
      break;
    case 2:
      check_maps(text);
      break;
    case 3:
      check_io(text);
      break;
    case 4:
      check_tcp_listeners(text);
      break;
    case 5:
      check_syscall(text);
      break;
    default:
      check_schedstat(text);
      break;
  }
  return 0;
}
