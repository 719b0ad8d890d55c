// The /proc parsers (os/proc.h) on files recorded from a real Debian 12 kernel (tests/data/proc:
// `cat /proc/self/{stat,status,io}`, `head -c 100000 /proc/self/maps`), and on the odd and broken
// forms a hostile or racing process could present: they must read the first right and refuse the
// others without throwing (an exception in the sampling path would end the monitor).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "os/proc.h"

namespace parastack::os {
namespace {

std::string recorded(const std::string& name) {
  std::ifstream in(std::string(PARASTACK_TEST_DATA) + "/proc/" + name);
  EXPECT_TRUE(in) << name;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A process's identity handed to another process as text (--batch-script PID:START, a session
// directory's PID.START): what is written reads back, and nothing else is taken for one.
TEST(ProcParse, AnIdentityReadsBackAndNothingElseIsOne) {
  const os::ProcessIdentity process{os::Pid{4242}, 123456789012ULL};
  EXPECT_EQ(os::to_string(process), "4242:123456789012");
  EXPECT_EQ(os::parse_identity(os::to_string(process)), process);
  EXPECT_EQ(os::parse_identity(os::to_string(process, '.'), '.'), process);
  for (const char* bad : {"", "4242", "4242:", ":5", "0:5", "4242:0", "-1:5", "4242:5x", "x4242:5", "4242.5",
                          "4242:5:6", " 4242:5", "99999999999:5"}) {
    EXPECT_EQ(os::parse_identity(bad), std::nullopt) << "'" << bad << "'";
  }
}

TEST(ProcParse, ARealStatFile) {
  const auto stat = parse_stat(recorded("stat-cat.txt"));
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->comm, "cat");
  EXPECT_EQ(stat->state, 'R');
  EXPECT_EQ(stat->parent.value, 1454);
  EXPECT_EQ(stat->flags, 4194304u);
  EXPECT_EQ(stat->cpu_ticks, 0u);
  EXPECT_EQ(stat->start_ticks, 1330296u);
  EXPECT_EQ(stat->resident_pages, 375u);
}

TEST(ProcParse, ACommandNameWithSpacesAndParentheses) {
  // A process may name itself anything (prctl PR_SET_NAME): only the last ')' ends the name.
  std::string text = recorded("stat-cat.txt");
  text.replace(text.find("(cat)"), 5, "(a) (b c)");
  const auto stat = parse_stat(text);
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->comm, "a) (b c");
  EXPECT_EQ(stat->parent.value, 1454);
  EXPECT_EQ(stat->start_ticks, 1330296u);
}

TEST(ProcParse, BrokenStatFilesAreRefusedNotThrown) {
  const std::string text = recorded("stat-cat.txt");
  // Cut anywhere before the resident size (field 24): too few fields.
  for (std::size_t length : {std::size_t{0}, std::size_t{5}, text.find(')') + 1, text.find(')') + 2,
                             text.find(" 1330296"), text.find(" 375 ")}) {
    EXPECT_NO_THROW(EXPECT_FALSE(parse_stat(text.substr(0, length))) << length);
  }
  std::string garbled = text;
  garbled.replace(garbled.find(") R 1454"), 8, ") R pid!");
  EXPECT_NO_THROW(EXPECT_FALSE(parse_stat(garbled)));
  EXPECT_NO_THROW(EXPECT_FALSE(parse_stat("1 (x) RR 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1")));
}

TEST(ProcParse, ARealStatusFileAndATracedOne) {
  const std::string text = recorded("status-cat.txt");
  const auto status = parse_status(text);
  ASSERT_TRUE(status);
  EXPECT_EQ(status->real_uid, 0u);
  EXPECT_EQ(status->tracer, 0);
  EXPECT_EQ(status->state, 'R');
  EXPECT_EQ(status->thread_group, 1458);
  EXPECT_EQ(parse_status("Uid:\t0\t0\t0\t0\nTracerPid:\t0\n")->state, '?');       // no State line
  EXPECT_EQ(parse_status("Uid:\t0\t0\t0\t0\nTracerPid:\t0\n")->thread_group, 0);  // nor a Tgid line
  std::string traced = text;
  traced.replace(traced.find("TracerPid:\t0"), 12, "TracerPid:\t4242");
  traced.replace(traced.find("Uid:\t0"), 6, "Uid:\t1000");
  const auto other = parse_status(traced);
  ASSERT_TRUE(other);
  EXPECT_EQ(other->real_uid, 1000u);
  EXPECT_EQ(other->tracer, 4242);
  EXPECT_NO_THROW(EXPECT_FALSE(parse_status("Name:\tcat\n")));
  EXPECT_NO_THROW(EXPECT_FALSE(parse_status("Uid:\tnobody\nTracerPid:\t0\n")));
}

TEST(ProcParse, ARealIoFile) {
  const auto io = parse_io(recorded("io-cat.txt"));
  ASSERT_TRUE(io);
  EXPECT_EQ(io->read_chars, 6976u);
  EXPECT_EQ(io->written_chars, 0u);
  EXPECT_NO_THROW(EXPECT_FALSE(parse_io("rchar: 12\n")));
  EXPECT_NO_THROW(EXPECT_FALSE(parse_io("rchar: -\nwchar: 1\n")));
}

TEST(ProcParse, ASchedstatFileSaysHowLongAThreadRanAndWaitedForACpu) {
  const auto sched = parse_schedstat("1693450512 10735812345 40122\n");
  ASSERT_TRUE(sched);
  EXPECT_EQ(sched->cpu_ns, 1693450512u);
  EXPECT_EQ(sched->run_delay_ns, 10735812345u);
  EXPECT_NO_THROW(EXPECT_FALSE(parse_schedstat("")));
  EXPECT_NO_THROW(EXPECT_FALSE(parse_schedstat("1693450512\n")));
  EXPECT_NO_THROW(EXPECT_FALSE(parse_schedstat("12 -3 4\n")));
  EXPECT_NO_THROW(EXPECT_FALSE(parse_schedstat("x 3 4\n")));
}

// The reader and the age on this very process: a thread that has run for a while has run, and
// the process is at least that old. It spins until its own CPU clock says 40 ms, not for a wall
// time: on a loaded node 30 ms of wall time gave 16 ms of CPU (a CI run). schedstat's sum is
// brought up to date only at ticks and switches, so it may lag the clock by a tick or so.
TEST(ProcParse, ThisProcessHasRunAndHasAnAge) {
  auto thread_cpu_ns = [] {
    timespec now{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return std::uint64_t(now.tv_sec) * 1'000'000'000 + std::uint64_t(now.tv_nsec);
  };
  while (thread_cpu_ns() < 40'000'000u) {
  }
  const auto sched = read_schedstat(Pid{::getpid()});
  ASSERT_TRUE(sched) << "no /proc/self/schedstat: " << std::strerror(errno);
  EXPECT_GE(sched->cpu_ns, 20'000'000u);
  const auto stat = read_stat(Pid{::getpid()});
  ASSERT_TRUE(stat);
  const auto age = age_ns(stat->start_ticks);
  ASSERT_TRUE(age);
  EXPECT_GE(*age + 10'000'000, sched->cpu_ns) << "younger than the time it ran (ticks are 10 ms)";
  EXPECT_LT(*age, std::uint64_t{24} * 3600 * 1'000'000'000) << "a test process a day old?";
}

TEST(ProcParse, ASyscallFileSaysWhereABlockedThreadWaits) {
  // Read off a process blocked in epoll_wait, one blocked outside a call, and a running one.
  const auto in_call =
      parse_syscall("232 0x5 0x7ffe8c9b19ec 0x1 0xffffffff 0x0 0x7f2a794886d0 0x7ffe8c9b19c8 0x7f2a79394ef3\n");
  ASSERT_TRUE(in_call);
  EXPECT_EQ(in_call->syscall, 232);
  EXPECT_EQ(in_call->args[0], 5u);
  EXPECT_EQ(in_call->args[3], 0xffffffffu);
  EXPECT_EQ(in_call->stack_pointer, 0x7ffe8c9b19c8u);
  EXPECT_EQ(in_call->pc, 0x7f2a79394ef3u);
  const auto outside = parse_syscall("-1 0x7ffd4b3c8a28 0x7f3e5b8e2d8a\n");
  ASSERT_TRUE(outside);
  EXPECT_EQ(outside->syscall, -1);
  EXPECT_EQ(outside->stack_pointer, 0x7ffd4b3c8a28u);
  EXPECT_EQ(outside->pc, 0x7f3e5b8e2d8au);
  for (const char* broken :
       {"running\n", "", "232 0x5\n", "232 0x5 0x1 0x1 0x1 0x1 0x1 0x1 zz\n", "232 0x5 0x1 0x1 0x1 0x1 0x1 0x1 0x\n",
        "x 0x1 0x1 0x1 0x1 0x1 0x1 0x1 0x1\n", "7 0x1 0x2\n"}) {
    EXPECT_NO_THROW(EXPECT_FALSE(parse_syscall(broken)) << broken);
  }
  // This thread, reading its own file, is in a call (read), with a stack pointer of its own stack.
  const auto self = read_thread_wait(Pid{getpid()}, Tid{static_cast<pid_t>(gettid())});
  ASSERT_TRUE(self);
  EXPECT_EQ(self->syscall, SYS_read);
  int on_my_stack = 0;
  EXPECT_LT(self->stack_pointer, reinterpret_cast<std::uintptr_t>(&on_my_stack));
}

TEST(ProcParse, ARealMapsFile) {
  const std::string text = recorded("maps-head.txt");
  const auto parsed = parse_maps(text);
  ASSERT_TRUE(parsed);
  const auto& maps = *parsed;
  ASSERT_EQ(maps.size(), 37u);
  EXPECT_EQ(maps[0].start, 0x5607b0dd3000u);
  EXPECT_EQ(maps[0].end, 0x5607b0dd5000u);
  EXPECT_EQ(maps[0].path, "/usr/bin/head");
  EXPECT_TRUE(maps[0].readable);
  EXPECT_FALSE(maps[0].writable);
  EXPECT_FALSE(maps[0].executable);
  EXPECT_TRUE(maps[1].executable);
  EXPECT_TRUE(maps[4].writable);  // the file's data
  EXPECT_EQ(maps[1].offset, 0x2000u);
  EXPECT_EQ(maps[1].inode, 247498u);
  int anonymous = 0, vdso = 0;
  for (const auto& m : maps) {
    anonymous += m.path.empty() ? 1 : 0;
    vdso += m.path == "[vdso]" ? 1 : 0;
  }
  EXPECT_EQ(anonymous, 3);
  EXPECT_EQ(vdso, 1);
  // A torn last line (the file changed while it was read) is skipped, not guessed.
  EXPECT_EQ(parse_maps(text + "7f2d0d4")->size(), 37u);
}

// /proc/net/tcp as Debian 12's kernel writes it: two LISTEN sockets (0A), one connection (01), a
// LISTEN line without an inode (a socket being torn down), a torn last line.
TEST(ProcParse, TcpListenersAreTheLinesInStateListenWithTheirInode) {
  const std::string text =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 00000000:1A0B 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 402211 1 "
      "0000000000000000 100 0 0 10 0\n"
      "   1: 0100007F:8AE3 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 17 1 "
      "0000000000000000 100 0 0 10 0\n"
      "   2: 0100007F:8AE3 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 98765 1 "
      "0000000000000000 20 4 30 10 -1\n"
      "   3: 00000000:2710 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 0 1\n"
      "   4: 00000000:2711 00000000:00";
  const auto listeners = parse_tcp_listeners(text);
  ASSERT_EQ(listeners.size(), 2u);
  EXPECT_EQ(listeners[0].inode, 402211u);
  EXPECT_EQ(listeners[0].port, 0x1A0B);
  EXPECT_EQ(listeners[1].inode, 17u);
  EXPECT_EQ(listeners[1].port, 0x8AE3);
  EXPECT_TRUE(parse_tcp_listeners("").empty());
  EXPECT_TRUE(parse_tcp_listeners("header only").empty());
}

// This process's own listening socket, as an srun's is found: its port is listed while it listens.
TEST(ProcParse, AListeningSocketOfOursIsFoundByItsPort) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  socklen_t length = sizeof address;
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::uint16_t port = ntohs(address.sin_port);
  const Pid self{::getpid()};
  auto ports = listening_tcp_ports(self);
  ASSERT_TRUE(ports.has_value());
  EXPECT_EQ(std::count(ports->begin(), ports->end(), port), 0) << "bound, not yet listening";
  ASSERT_EQ(::listen(listener, 1), 0);
  ports = listening_tcp_ports(self);
  ASSERT_TRUE(ports.has_value());
  EXPECT_EQ(std::count(ports->begin(), ports->end(), port), 1);
  ::close(listener);
  ports = listening_tcp_ports(self);
  ASSERT_TRUE(ports.has_value());
  EXPECT_EQ(std::count(ports->begin(), ports->end(), port), 0) << "closed";
  EXPECT_FALSE(listening_tcp_ports(Pid{0x7ffffff0}).has_value()) << "no such process";
}

}  // namespace
}  // namespace parastack::os
