// The node sampler on real processes: Open MPI jobs the suite launches (tests/programs), real
// ptrace, real libunwind. Every job is an RAII MpiJob that kills its processes whatever happens.
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <variant>

#include "os/proc.h"
#include "os/ptrace.h"
#include "os/signal.h"
#include "os/stopped_thread.h"
#include "sampler/classify.h"
#include "sampler/rank_discovery.h"
#include "sampler/stack_sampler.h"
#include "support/mpi_job.h"

namespace parastack {
namespace {

using namespace std::chrono_literals;
using sampler::RankSample;
using sampler::SampleOptions;
using sampler::StackSampler;
using stats::RankState;
using testing::MpiJob;
using testing::test_program;

// Samples until `expected` holds in `consecutive` samples in a row (a rank needs a moment after
// writing its ready file to enter its call), or the deadline passes; returns the last sample.
RankSample settle(StackSampler& sampler, os::Pid pid, RankState expected, const SampleOptions& options = {},
                  int consecutive = 3) {
  RankSample last;
  int in_a_row = 0;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    last = sampler.sample(pid, options);
    in_a_row = last.state == expected ? in_a_row + 1 : 0;
    if (in_a_row >= consecutive) break;
    std::this_thread::sleep_for(5ms);  // pacing between samples, not synchronisation
  }
  return last;
}

// Waits until the process has used more CPU than now: it is running, not left stopped.
bool makes_progress(os::Pid pid, std::chrono::seconds within = 10s) {
  const auto before = os::read_stat(pid);
  if (!before) return false;
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto now = os::read_stat(pid);
    if (!now) return false;
    if (now->state != 't' && now->state != 'T' && now->cpu_ticks > before->cpu_ticks) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

struct BlockingCall {
  const char* mode;
  const char* mpi_function;
};

void PrintTo(const BlockingCall& c, std::ostream* out) { *out << c.mode; }

class BlockedRanks : public ::testing::TestWithParam<BlockingCall> {};

TEST_P(BlockedRanks, AreInMpiAndTheComputingRankIsNot) {
  MpiJob job(4, test_program("ps_target"), {GetParam().mode, "compute"});
  const auto launched = job.wait_ready();
  // Discovery finds exactly these ranks, with these pids.
  const auto found = sampler::discover_ranks({sampler::JobSelector::Kind::Launcher, os::Pid{job.launcher_pid()}, {}});
  ASSERT_EQ(found.ranks.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(found.ranks[r].rank, r);
    EXPECT_EQ(found.ranks[r].pid.value, launched[r].pid);
    EXPECT_EQ(found.ranks[r].world_size, 4);
    EXPECT_GE(found.ranks[r].threads, 1u);
  }
  StackSampler sampler;
  for (int r = 0; r < 3; ++r) {
    const auto s = settle(sampler, os::Pid{launched[r].pid}, RankState::InMpi);
    EXPECT_EQ(s.state, RankState::InMpi) << "rank " << r << ": " << s.describe();
    EXPECT_EQ(s.mpi_function, GetParam().mpi_function) << "rank " << r;
  }
  SampleOptions with_frames;
  with_frames.frames = true;
  const auto computing = settle(sampler, os::Pid{launched[3].pid}, RankState::OutMpi, with_frames);
  EXPECT_EQ(computing.state, RankState::OutMpi) << computing.describe();
  // Several frames deep, named from the program's symbols.
  std::vector<std::string> names;
  for (const auto& f : computing.frames) names.push_back(f.function);
  std::string path;
  for (const auto& name : names) path += name + " < ";
  EXPECT_NE(std::find(names.begin(), names.end(), "compute_kernel"), names.end()) << path;
  EXPECT_NE(std::find(names.begin(), names.end(), "main"), names.end()) << path;
}

INSTANTIATE_TEST_SUITE_P(Calls, BlockedRanks,
                         ::testing::Values(BlockingCall{"wait", "MPI_Wait"}, BlockingCall{"barrier", "MPI_Barrier"},
                                           BlockingCall{"allreduce", "MPI_Allreduce"},
                                           BlockingCall{"recv", "MPI_Recv"}),
                         [](const auto& test) { return std::string(test.param.mode); });

// The two holes of the name rule, on live ranks.
TEST(Sampler, FinalizeIsInMpiAndAnApplicationMpiNameIsNot) {
  MpiJob job(3, test_program("ps_target"), {"finalize", "halo"});
  const auto launched = job.wait_ready();
  StackSampler sampler;
  SampleOptions with_frames;
  with_frames.frames = true;
  for (int r = 0; r < 2; ++r) {
    const auto s = settle(sampler, os::Pid{launched[r].pid}, RankState::InMpi, with_frames);
    EXPECT_EQ(s.state, RankState::InMpi) << "rank " << r << ": " << s.describe();
    std::vector<std::string_view> names;
    for (const auto& f : s.frames) names.push_back(f.function);
    // No MPI_ frame at all: the name rule would call this rank OUT_MPI.
    EXPECT_EQ(sampler::classify_by_name(names, true), RankState::OutMpi) << "rank " << r;
  }
  const auto halo = settle(sampler, os::Pid{launched[2].pid}, RankState::OutMpi, with_frames);
  EXPECT_EQ(halo.state, RankState::OutMpi) << halo.describe();
  std::vector<std::string_view> names;
  for (const auto& f : halo.frames) names.push_back(f.function);
  EXPECT_NE(std::find(names.begin(), names.end(), "mpi_exchange_halo"), names.end());
  EXPECT_EQ(sampler::classify_by_name(names, true), RankState::InMpi);  // the name rule is fooled
}

// A rank stopped inside the kernel's vdso (clock_gettime) is unwound through it: the vdso has no
// file for libunwind to read its unwind table from, so the sampler hands it the table from the
// vdso's image. Before, such a stack read "?? > clock_gettime > ??" and its path was unknown.
TEST(Sampler, RankStoppedInTheVdsoIsUnwoundThroughIt) {
  MpiJob job(2, test_program("ps_target"), {"barrier", "clock"});
  const auto launched = job.wait_ready();
  StackSampler sampler;
  SampleOptions with_frames;
  with_frames.frames = true;
  // The loop spends most of its time in the vdso; wait for a sample that stopped it there.
  std::optional<sampler::RankSample> in_vdso;
  for (int attempt = 0; attempt < 500 && !in_vdso; ++attempt) {
    auto s = sampler.sample(os::Pid{launched[1].pid}, with_frames);
    ASSERT_FALSE(s.failure) << s.describe();
    if (!s.frames.empty() && s.frames[0].module == "[vdso]") in_vdso = std::move(s);
  }
  ASSERT_TRUE(in_vdso) << "no sample in 500 stopped the rank inside the vdso";
  std::vector<std::string> names;
  for (const auto& f : in_vdso->frames) names.push_back(f.module + ":" + f.function);
  const auto joined = ::testing::PrintToString(names);
  EXPECT_EQ(in_vdso->state, RankState::OutMpi) << joined << " " << in_vdso->describe();
  EXPECT_NE(in_vdso->path, 0u) << joined;
  EXPECT_TRUE(in_vdso->frames[0].function.find("clock_gettime") != std::string::npos) << joined;
  const auto has = [&](std::string_view function) {
    return std::any_of(in_vdso->frames.begin(), in_vdso->frames.end(),
                       [&](const auto& f) { return f.function == function; });
  };
  EXPECT_TRUE(has("read_cpu_clock_forever")) << joined;
  EXPECT_TRUE(has("main")) << joined;
  // The path is the loop's, wherever in it the rank was stopped: in the vdso or in its own code.
  std::set<std::uint64_t> paths;
  for (int i = 0; i < 50; ++i) {
    const auto s = sampler.sample(os::Pid{launched[1].pid});
    if (s.path != 0) paths.insert(s.path);
  }
  EXPECT_EQ(paths, std::set<std::uint64_t>{in_vdso->path});
}

TEST(Sampler, BusyPollingRankIsSeenInMpiTestOrItsLoop) {
  MpiJob job(3, test_program("ps_target"), {"testpoll", "compute"});
  const auto launched = job.wait_ready();
  StackSampler sampler;
  int in_test = 0;
  std::set<std::uint64_t> paths_in_test;
  for (int i = 0; i < 60; ++i) {
    const auto s = sampler.sample(os::Pid{launched[0].pid});
    ASSERT_FALSE(s.failure) << s.describe();
    if (s.state == RankState::InMpi) {
      EXPECT_EQ(s.mpi_function, "MPI_Test");
      paths_in_test.insert(s.path);
      ++in_test;
    }
  }
  EXPECT_GT(in_test, 0);
  // One call site, so one path, wherever MPI_Test itself is at the moment.
  EXPECT_EQ(paths_in_test.size(), 1u);
  EXPECT_FALSE(paths_in_test.contains(0));
}

TEST(Sampler, FortranRanks) {
  MpiJob job(3, test_program("ps_target_fortran"), {});
  const auto launched = job.wait_ready();
  StackSampler sampler;
  for (int r = 0; r < 2; ++r) {
    const auto s = settle(sampler, os::Pid{launched[r].pid}, RankState::InMpi);
    EXPECT_EQ(s.state, RankState::InMpi) << s.describe();
    EXPECT_EQ(s.mpi_function, "MPI_Barrier");
  }
  EXPECT_EQ(settle(sampler, os::Pid{launched[2].pid}, RankState::OutMpi).state, RankState::OutMpi);
}

TEST(Sampler, ThreadMultipleRankIsInMpiWhenAnyThreadIs) {
  MpiJob job(2, test_program("ps_hybrid"), {"multiple"});
  const auto launched = job.wait_ready();
  StackSampler sampler;
  const os::Pid pid{launched[0].pid};
  const auto any = settle(sampler, pid, RankState::InMpi);
  EXPECT_TRUE(any.thread_multiple);
  EXPECT_EQ(any.state, RankState::InMpi) << any.describe();
  EXPECT_EQ(any.mpi_function, "MPI_Recv");
  EXPECT_GE(any.threads_sampled, 2u);
  // Its main thread computes meanwhile: IN_MPI for S, at work outside MPI for stillness, and placed
  // (the receive's call site and the computing loop together).
  EXPECT_TRUE(any.at_work_outside);
  EXPECT_NE(any.path, 0u);
  EXPECT_EQ(sampler.sample(pid).path, any.path) << "neither thread moved";
  SampleOptions main_only;
  main_only.threads = sampler::ThreadRule::MainThread;
  const auto main = settle(sampler, pid, RankState::OutMpi, main_only);
  EXPECT_EQ(main.state, RankState::OutMpi);
  EXPECT_FALSE(main.at_work_outside);
}

TEST(Sampler, FunneledRankIsJudgedByItsMainThread) {
  MpiJob job(2, test_program("ps_hybrid"), {"funneled"});
  const auto launched = job.wait_ready();
  StackSampler sampler;
  const auto s = settle(sampler, os::Pid{launched[1].pid}, RankState::OutMpi);
  EXPECT_FALSE(s.thread_multiple);
  EXPECT_EQ(s.state, RankState::OutMpi) << s.describe();
  EXPECT_EQ(s.threads_sampled, 1u);
}

TEST(Discovery, TwoMpiProgramsInOneJobAreTwoInstances) {
  const std::string job_id = "pstest" + std::to_string(::getpid());
  // One after the other: two mpiruns starting together can make one fail (Open MPI 4's session
  // directory clean-up, docs/user-guide.md), and the test is about discovery.
  MpiJob first(3, test_program("ps_target"), {"barrier", "compute"}, {"SLURM_JOB_ID=" + job_id});
  const auto a = first.wait_ready();
  MpiJob second(2, test_program("ps_target"), {"allreduce", "compute"}, {"SLURM_JOB_ID=" + job_id});
  const auto b = second.wait_ready();
  const auto found = sampler::discover_ranks({sampler::JobSelector::Kind::Slurm, {}, job_id});
  ASSERT_EQ(found.ranks.size(), 5u);
  std::map<std::string, std::vector<int>> by_instance;
  std::set<pid_t> pids;
  for (const auto& r : found.ranks) {
    by_instance[r.instance].push_back(r.rank);
    pids.insert(r.pid.value);
  }
  ASSERT_EQ(by_instance.size(), 2u);
  std::vector<std::vector<int>> rank_lists;
  for (auto& [instance, ranks] : by_instance) rank_lists.push_back(ranks);
  std::sort(rank_lists.begin(), rank_lists.end(), [](auto& x, auto& y) { return x.size() < y.size(); });
  EXPECT_EQ(rank_lists[0], (std::vector<int>{0, 1}));
  EXPECT_EQ(rank_lists[1], (std::vector<int>{0, 1, 2}));
  for (const auto& r : a) EXPECT_TRUE(pids.contains(r.pid));
  for (const auto& r : b) EXPECT_TRUE(pids.contains(r.pid));
}

// What a monitor on another node does (it cannot see the launcher): the leader names the launch
// under the launcher, and the ranks that carry it are found without any process ancestry.
TEST(Discovery, RanksAreFoundByTheirLaunchWithoutSeeingTheLauncher) {
  MpiJob job(3, test_program("ps_target"), {"barrier", "compute"});
  const auto ranks = job.wait_ready();  // before the other starts: see TwoMpiProgramsInOneJobAreTwoInstances
  MpiJob other(2, test_program("ps_target"), {"barrier", "compute"});
  other.wait_ready();
  const auto launches = sampler::launches_under(os::Pid{job.launcher_pid()});
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_NE(launches, sampler::launches_under(os::Pid{other.launcher_pid()}));

  sampler::JobSelector elsewhere{sampler::JobSelector::Kind::Launcher, os::Pid{0}, {}, launches};
  const auto found = sampler::discover_ranks(elsewhere);
  ASSERT_EQ(found.ranks.size(), 3u);  // not the other job's
  for (std::size_t r = 0; r < ranks.size(); ++r) EXPECT_EQ(found.ranks[r].pid.value, ranks[r].pid);

  elsewhere.launches = {"1.0;tcp://192.0.2.99:1"};
  EXPECT_TRUE(sampler::discover_ranks(elsewhere).ranks.empty());
}

// A rank on its way out may also be caught in state D for a moment (its memory torn down, its
// files flushed; seen about once in 25 runs beside two CPU hogs): the sampler leaves it alone as
// it does any thread waiting in the kernel, and says so. That is the safe answer (a rank whose
// exit stalls on a mount holds its peers, docs/sampler.md), so it is allowed.
TEST(Sampler, RankThatExitsWhileSampledGivesExitedNeverACrash) {
  MpiJob job(2, test_program("ps_target"), {"exit", "1"});
  const auto launched = job.wait_ready();
  StackSampler sampler;
  int valid = 0, exited = 0;
  while (job.launcher().running() || exited == 0) {  // running() reaps: an ended mpirun is no zombie
    for (const auto& r : launched) {
      const auto s = sampler.sample(os::Pid{r.pid});
      if (!s.failure) {
        ++valid;
      } else if (*s.failure == os::StopFailure::Exited || *s.failure == os::StopFailure::Zombie) {
        ++exited;
      } else {
        EXPECT_EQ(*s.failure, os::StopFailure::InKernel) << s.describe();
      }
    }
    if (valid + exited > 100000) break;
  }
  EXPECT_GT(valid, 0);
  EXPECT_GT(exited, 0);
  EXPECT_EQ(job.wait_exit(30s), 0);
}

// A thread whose stack pointer points at nothing: the copy reads no byte, and the sample says so
// with the errno's text rather than "incomplete unwind"; the process runs on, untouched.
TEST(Sampler, UnreadableStackIsUnknownWithTheReadError) {
  testing::ChildProcess child({test_program("ps_nompi"), "lost-stack"});
  child.wait_ready_file("nompi", 30s);
  StackSampler sampler;
  sampler::RankSample s;
  // The ready file is written just before the stack pointer is moved: sample until it has been.
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  do {
    s = sampler.sample(os::Pid{child.pid()});
    ASSERT_FALSE(s.failure) << s.describe();
  } while (s.note.rfind("stack not readable", 0) != 0 && std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(s.state, RankState::Unknown);
  EXPECT_EQ(s.note, "stack not readable at the stack pointer: Bad address");
  EXPECT_TRUE(makes_progress(os::Pid{child.pid()}));
}

TEST(Sampler, NonMpiProcessIsOutOfMpiAndNotARank) {
  testing::ChildProcess child({test_program("ps_nompi"), "spin"});
  child.wait_ready_file("nompi", 30s);
  StackSampler sampler;
  const auto s = settle(sampler, os::Pid{child.pid()}, RankState::OutMpi);
  EXPECT_EQ(s.state, RankState::OutMpi);
  EXPECT_FALSE(s.mpi_library_found);
  EXPECT_EQ(s.note, "no MPI library mapped");
  EXPECT_TRUE(sampler::discover_ranks({sampler::JobSelector::Kind::Launcher, os::Pid{::getpid()}, {}}).ranks.empty());
}

TEST(Sampler, ProcessOfAnotherUserIsAClearPermissionError) {
  testing::ChildProcess child({test_program("ps_nompi"), "spin"});
  child.wait_ready_file("nompi", 30s);
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t sampler_process = ::fork();
  if (sampler_process == 0) {
    // As nobody, sample a root-owned process.
    ::close(pipe_fds[0]);
    if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
        ::setresuid(65534, 65534, 65534) != 0) {
      ::_exit(3);
    }
    StackSampler sampler;
    const auto s = sampler.sample(os::Pid{child.pid()});
    const std::string result = s.describe();
    ::write(pipe_fds[1], result.data(), result.size());
    ::_exit(s.failure && *s.failure == os::StopFailure::Denied ? 0 : 1);
  }
  ::close(pipe_fds[1]);
  char buffer[256] = {};
  const ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer - 1);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(sampler_process, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "as nobody: " << std::string(buffer, n > 0 ? n : 0);
  EXPECT_EQ(std::string(buffer, n > 0 ? n : 0), "permission denied");
  EXPECT_TRUE(makes_progress(os::Pid{child.pid()}));
}

TEST(Sampler, ZombieIsReportedAsSuch) {
  const pid_t zombie = ::fork();
  if (zombie == 0) ::_exit(0);
  // Await the zombie state (before it, the exiting child may be in state D: "waiting in the
  // kernel"); it is not reaped until the end of the test.
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  std::optional<os::ProcStat> stat;
  while ((!(stat = os::read_stat(os::Pid{zombie})) || stat->state != 'Z') &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(2ms);
  }
  if (!stat || stat->state != 'Z') ::waitpid(zombie, nullptr, 0);
  ASSERT_TRUE(stat && stat->state == 'Z') << "the child never became a zombie";
  StackSampler sampler;
  const auto s = sampler.sample(os::Pid{zombie});
  ASSERT_TRUE(s.failure.has_value());
  EXPECT_TRUE(*s.failure == os::StopFailure::Zombie || *s.failure == os::StopFailure::Exited) << s.describe();
  ::waitpid(zombie, nullptr, 0);
}

// The kernel's struct clone_args (linux/sched.h, whose macros clash with <sched.h>'s).
struct CloneArgs {
  std::uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size;
};

// A child that sleeps in pause() under the given pid (clone3's set_tid; root only): a pid reused
// by another process, made on purpose. Killed and reaped at the end of the scope.
class ProcessWithPid {
 public:
  explicit ProcessWithPid(pid_t wanted) {
    pid_t tid = wanted;
    CloneArgs args{};
    args.exit_signal = SIGCHLD;
    args.set_tid = reinterpret_cast<std::uint64_t>(&tid);
    args.set_tid_size = 1;
    const long got = ::syscall(SYS_clone3, &args, sizeof args);
    if (got == 0) {
      while (true) ::pause();  // async-signal-safe only: this is a clone of a threaded process
    }
    pid_ = static_cast<pid_t>(got);
    error_ = got < 0 ? errno : 0;
  }
  ~ProcessWithPid() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  ProcessWithPid(const ProcessWithPid&) = delete;
  ProcessWithPid& operator=(const ProcessWithPid&) = delete;
  pid_t pid() const { return pid_; }
  int error() const { return error_; }

 private:
  pid_t pid_ = -1;
  int error_ = 0;
};

// Neither stopped nor traced: sleeping in pause() as it was.
void expect_untouched(pid_t pid) {
  const auto stat = os::read_stat(os::Pid{pid});
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->state, 'S');
  EXPECT_EQ(os::read_status(os::Pid{pid})->tracer, 0);
}

// A monitor watches a whole batch job, whose script may rebuild the program between two steps: the
// second step's ranks run another file at the same path (here perhaps under the same inode number,
// which ext4 reuses), whose functions sit where the old one's did. They are named from that file,
// not from the symbols read for the first step.
TEST(Sampler, AProgramRebuiltAtTheSamePathIsNamedFromTheNewFile) {
  testing::TempDir dir;
  const auto program = dir.path() / "app";
  StackSampler sampler;  // one monitor: every cache it keeps lives as long as it does
  SampleOptions with_frames;
  with_frames.frames = true;
  const auto loop_names = [&](const std::string& built) {
    std::filesystem::remove(program);
    std::filesystem::copy_file(built, program);  // with its mode: executable
    testing::ChildProcess child({program.string(), "spin"});
    child.wait_ready_file("nompi", 30s);
    std::set<std::string> names;
    for (int i = 0; i < 40; ++i) {
      const auto s = sampler.sample(os::Pid{child.pid()}, with_frames);
      EXPECT_FALSE(s.failure) << s.describe();
      for (const auto& f : s.frames) {
        if (f.function.starts_with("spin_step")) names.insert(f.function);
      }
    }
    return names;
  };
  EXPECT_EQ(loop_names(test_program("ps_nompi")), std::set<std::string>{"spin_step"});
  EXPECT_EQ(loop_names(test_program("ps_nompi_rebuilt")), std::set<std::string>{"spin_step_rebuilt"});
}

// The range of the mapping of `file` (its first, lowest) in the process; nullopt if none.
std::optional<std::pair<std::uint64_t, std::uint64_t>> mapped_range(os::Pid pid, const std::string& file) {
  const auto maps = os::read_maps(pid);
  if (!maps) return std::nullopt;
  std::optional<std::pair<std::uint64_t, std::uint64_t>> range;
  for (const auto& m : *maps) {
    if (m.path != file) continue;
    if (!range) range.emplace(m.start, m.end);
    range->second = std::max(range->second, m.end);
  }
  return range;
}

// Open MPI opens and closes dozens of components inside MPI_Init, and one it keeps is mapped where
// a closed one was. A monitor that first looked at a rank before must unwind and name the new one
// from its own file at once, not from what it read of the closed one: until 2026-12-04 it did so
// for up to 10 s, and a rank deadlocked at its first MPI call "moved" when the maps were read again.
TEST(Sampler, ALibraryMappedWhereAClosedOneWasIsNamedFromItsOwnFile) {
  testing::TempDir dir;
  const auto next = dir.path() / "next";
  const std::string a = test_program("libps_plugin_a.so"), b = test_program("libps_plugin_b.so");
  testing::ChildProcess child({test_program("ps_nompi"), "plugins", a, b, next.string()});
  const os::Pid pid{child.pid()};
  StackSampler sampler;  // one monitor, which keeps what it read of the process between samples
  SampleOptions with_frames;
  with_frames.frames = true;
  // The names of the first stack seen through the plugin's entry (the ready file is written on the
  // way in), from plugin_wait inwards.
  const auto stack_in_plugin = [&] {
    std::vector<std::string> names;
    for (int i = 0; i < 2000; ++i) {
      const auto s = sampler.sample(pid, with_frames);
      EXPECT_FALSE(s.failure) << s.describe();
      names.clear();
      for (const auto& f : s.frames) {
        names.push_back(f.function);
        if (f.function == "plugin_wait" && names.size() >= 2) return names;
      }
    }
    return names;
  };
  child.wait_ready_file("plugin.a", 30s);
  const auto in_a = stack_in_plugin();
  ASSERT_GE(in_a.size(), 2u);
  EXPECT_EQ(in_a[in_a.size() - 2], "wait_in_a") << ::testing::PrintToString(in_a);
  const auto a_range = mapped_range(pid, a);
  ASSERT_TRUE(a_range);
  std::ofstream(next).put('\n');
  child.wait_ready_file("plugin.b", 30s);
  const auto b_range = mapped_range(pid, b);
  ASSERT_TRUE(b_range);
  ASSERT_FALSE(mapped_range(pid, a)) << "plugin a is still mapped";
  ASSERT_TRUE(b_range->first < a_range->second && a_range->first < b_range->second)
      << "plugin b was not mapped where plugin a was: nothing to test";
  const auto in_b = stack_in_plugin();
  ASSERT_GE(in_b.size(), 2u);
  EXPECT_EQ(in_b[in_b.size() - 2], "wait_in_b") << ::testing::PrintToString(in_b);
}

TEST(Sampler, PidReusedByAnotherProcessIsNeverSampledNorSignalled) {
  if (::geteuid() != 0) GTEST_SKIP() << "choosing a pid (clone3 set_tid) needs root";
  os::ProcessIdentity rank;
  {
    testing::ChildProcess child({test_program("ps_nompi"), "spin"});
    child.wait_ready_file("nompi", 30s);
    rank = *os::identify(os::Pid{child.pid()});
  }  // the rank exits and is reaped: its pid is free
  // Start times count in clock ticks (10 ms): a process made at once under the same pid could share
  // the rank's. Pid reuse in real life takes a full round of pid_max forks (seconds at least).
  const auto ticks_now = [] {
    timespec t{};
    ::clock_gettime(CLOCK_BOOTTIME, &t);
    return static_cast<std::uint64_t>(t.tv_sec) * ::sysconf(_SC_CLK_TCK) +
           static_cast<std::uint64_t>(t.tv_nsec) / (1'000'000'000 / ::sysconf(_SC_CLK_TCK));
  };
  while (ticks_now() <= rank.start_ticks + 1) std::this_thread::sleep_for(2ms);
  ProcessWithPid stranger(rank.pid.value);
  ASSERT_EQ(stranger.pid(), rank.pid.value) << "clone3 set_tid: " << std::strerror(stranger.error());
  const auto now = os::identify(rank.pid);
  ASSERT_TRUE(now);
  ASSERT_NE(now->start_ticks, rank.start_ticks);
  // Let it get into pause() (it is 'R' for a moment after the clone).
  for (int i = 0; i < 1000 && os::read_stat(rank.pid)->state != 'S'; ++i) std::this_thread::sleep_for(2ms);

  // The sampler refuses before it seizes...
  StackSampler sampler;
  const auto s = sampler.sample(rank);
  ASSERT_TRUE(s.failure.has_value());
  EXPECT_EQ(*s.failure, os::StopFailure::Replaced) << s.describe();
  expect_untouched(stranger.pid());
  // ...and a stop that got as far as the seize (the pid passed to the stranger in between) checks
  // again before it stops anything, and lets go.
  auto stopped = os::StoppedThread::stop(rank, os::main_thread(rank.pid));
  ASSERT_TRUE(std::holds_alternative<os::StopFailure>(stopped));
  EXPECT_EQ(std::get<os::StopFailure>(stopped), os::StopFailure::Replaced);
  for (int i = 0; i < 1000 && os::read_stat(rank.pid)->state != 'S'; ++i) std::this_thread::sleep_for(2ms);
  expect_untouched(stranger.pid());
  // Signals go by identity: the old rank's SIGKILL does not reach the stranger.
  EXPECT_EQ(os::send_signal(rank, SIGKILL), os::SignalResult::Gone);
  EXPECT_FALSE(os::is_alive(rank));
  EXPECT_TRUE(os::is_alive(*now));
  expect_untouched(stranger.pid());
  // The stranger's own identity is signalled.
  EXPECT_EQ(os::send_signal(*now, SIGKILL), os::SignalResult::Sent);
}

// A process of another user that claims to be a rank of the job (the job's environment, under the
// job's launcher) is never read beyond its owner, never sampled and never signalled.
TEST(Discovery, ProcessOfAnotherUserIsNeverARankWhateverItsEnvironment) {
  if (::geteuid() != 0) GTEST_SKIP() << "starting a process as another user needs root";
  const std::vector<std::string> rank_environment{"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=1"};
  testing::ChildProcess ours({test_program("ps_nompi"), "spin"}, rank_environment);
  testing::ChildProcess theirs(
      {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", test_program("ps_nompi"), "spin"},
      rank_environment);
  ours.wait_ready_file("nompi", 30s);
  // nobody cannot write the ready directory: await its exec as nobody instead.
  for (int i = 0; i < 5000; ++i) {
    const auto stat = os::read_stat(os::Pid{theirs.pid()});
    const auto status = os::read_status(os::Pid{theirs.pid()});
    if (stat && status && stat->comm == "ps_nompi" && status->real_uid == 65534) break;
    std::this_thread::sleep_for(2ms);
  }
  ASSERT_EQ(os::read_status(os::Pid{theirs.pid()})->real_uid, 65534u);
  ASSERT_EQ(os::read_stat(os::Pid{theirs.pid()})->comm, "ps_nompi");

  const auto found = sampler::discover_ranks({sampler::JobSelector::Kind::Launcher, os::Pid{::getpid()}, {}});
  ASSERT_EQ(found.ranks.size(), 1u);
  EXPECT_EQ(found.ranks[0].pid.value, ours.pid());
  std::string problems;
  for (const auto& p : found.problems) problems += p + "\n";
  EXPECT_NE(problems.find("pid " + std::to_string(theirs.pid()) + " (ps_nompi): owned by uid 65534"), std::string::npos)
      << problems;
  EXPECT_TRUE(makes_progress(os::Pid{theirs.pid()}));
}

// Waits until the thread `tid` of `pid` is a zombie (ended, not reaped yet); its last state.
char await_zombie(os::Pid pid, os::Tid tid) {
  const auto state = [&] {
    const auto stat = os::read_thread_stat(pid, tid);
    return stat ? stat->state : '?';
  };
  for (int i = 0; i < 5000 && state() != 'Z'; ++i) std::this_thread::sleep_for(2ms);
  return state();
}

// Under `mpirun -np N parastack run -- ./app` each rank is the child of a watcher (and every
// watcher samples every rank). If it ends while a sample waits for it to stop, its end is the
// launcher's wait's to take, with its exit status: taken by the sample (until 2026-12-04), the
// status was lost and parastack run waited for its job for ever.
TEST(Sampler, OurOwnChildThatEndsAsASampleWaitsForItsStopKeepsItsStatusForOurWait) {
  testing::ChildProcess child({test_program("ps_nompi"), "spin"});
  child.wait_ready_file("nompi", 30s);
  const os::Pid pid{child.pid()};
  const os::Tid tid{child.pid()};
  ASSERT_EQ(os::ptrace_seize(tid), os::PtraceStatus::Ok);
  ASSERT_EQ(::kill(pid.value, SIGKILL), 0);  // it ends between the seize and the wait
  ASSERT_EQ(await_zombie(pid, tid), 'Z');
  EXPECT_EQ(os::wait_for_stop(tid).kind, os::StopKind::Exited);
  os::ptrace_detach(tid, 0);  // as StoppedThread::stop does next: it must not take the end either
  EXPECT_EQ(child.wait_exit(30s), 128 + SIGKILL) << "the child's end was taken by the sample";
}

// A thread of such a child that ends while held is the tracer's to reap (its process's end is not
// reported before): reaped, the child's end then reaches our wait.
TEST(Sampler, AThreadOfOurOwnChildThatEndsWhileHeldIsReapedAndTheChildsEndReachesUs) {
  testing::ChildProcess child({test_program("ps_nompi"), "threads"});
  child.wait_ready_file("nompi", 30s);
  const os::ProcessIdentity process = *os::identify(os::Pid{child.pid()});
  std::optional<os::Tid> second;
  for (const auto t : os::list_threads(process.pid)) {
    if (t != os::main_thread(process.pid)) second = t;
  }
  ASSERT_TRUE(second) << "ps_nompi threads has one thread";
  {
    auto held = os::StoppedThread::stop(process, *second);
    ASSERT_TRUE(std::holds_alternative<os::StoppedThread>(held));
    ASSERT_EQ(::kill(process.pid.value, SIGKILL), 0);
    ASSERT_EQ(await_zombie(process.pid, *second), 'Z');
  }  // the detach fails, and the thread is reaped
  EXPECT_EQ(child.wait_exit(30s), 128 + SIGKILL) << "the child's end never reached us";
}

TEST(Sampler, JobControlStoppedProcessStaysStopped) {
  testing::ChildProcess child({test_program("ps_nompi"), "spin"});
  child.wait_ready_file("nompi", 30s);
  const os::Pid pid{child.pid()};
  ASSERT_EQ(::kill(pid.value, SIGSTOP), 0);
  for (int i = 0; i < 1000 && os::read_stat(pid)->state != 'T'; ++i) std::this_thread::sleep_for(2ms);
  ASSERT_EQ(os::read_stat(pid)->state, 'T');
  StackSampler sampler;
  const auto s = sampler.sample(pid);
  EXPECT_EQ(s.state, RankState::OutMpi) << s.describe();
  EXPECT_TRUE(s.job_control_stopped) << "a stopped process must be told from a running one";
  // Still stopped, as its owner left it. Detaching kicks a tracee whose group stop is in effect
  // awake so that it re-enters that stop (the kernel's __ptrace_unlink); /proc can show 'R' for
  // that moment, longer on a loaded machine, without a single user instruction running. So: it
  // settles back into 'T', and it does not run (a resumed spinner would burn CPU at once).
  for (int i = 0; i < 1000 && os::read_stat(pid)->state != 'T'; ++i) std::this_thread::sleep_for(2ms);
  EXPECT_EQ(os::read_stat(pid)->state, 'T');
  EXPECT_FALSE(makes_progress(pid, 1s)) << "the stopped process ran after the sample";
  ASSERT_EQ(::kill(pid.value, SIGCONT), 0);
  EXPECT_TRUE(makes_progress(pid));
  EXPECT_FALSE(sampler.sample(pid).job_control_stopped);
}

TEST(Sampler, ProcessHeldByADebuggerIsReportedAndReleasedLater) {
  testing::ChildProcess child({test_program("ps_nompi"), "spin"});
  child.wait_ready_file("nompi", 30s);
  const os::Pid pid{child.pid()};
  // This test thread plays the debugger.
  ASSERT_EQ(::ptrace(PTRACE_SEIZE, pid.value, nullptr, nullptr), 0);
  StackSampler sampler;
  std::optional<os::StopFailure> failure, after_waiting;
  std::thread other([&] {  // a different tracer thread
    failure = sampler.sample(pid).failure;
    after_waiting = sampler.sample_many({*os::identify(pid)}).front().failure;  // a hold that lasts
  });
  other.join();
  EXPECT_EQ(failure, os::StopFailure::AlreadyTraced);
  EXPECT_EQ(after_waiting, os::StopFailure::AlreadyTraced);
  // The debugger lets go (detaching needs the tracee stopped).
  ASSERT_EQ(::ptrace(PTRACE_INTERRUPT, pid.value, nullptr, nullptr), 0);
  ASSERT_EQ(::waitpid(pid.value, nullptr, __WALL), pid.value);
  ASSERT_EQ(::ptrace(PTRACE_DETACH, pid.value, nullptr, nullptr), 0);
  EXPECT_EQ(settle(sampler, pid, RankState::OutMpi).state, RankState::OutMpi);
  EXPECT_TRUE(makes_progress(pid));
}

// A process waiting uninterruptibly in the kernel (state D: a read from a stalled NFS or Lustre
// mount) would stop only once the wait ends, and a seized process cannot be let go before it stops:
// a sample would wait as long, hours on a dead mount. It is left alone (never seized: no tracer
// shows), said to be in the kernel, and sampled as usual once the wait ends.
TEST(Sampler, AProcessWaitingInTheKernelIsLeftAloneAndSampledOnceItReturns) {
  testing::TempDir dir;
  const auto release = dir.path() / "release";
  struct Release {  // whatever happens, the waiting process is let go
    std::filesystem::path path;
    ~Release() { std::ofstream(path).put('\n'); }
  } let_go{release};
  testing::ChildProcess child({test_program("ps_nompi"), "kernel", release.string()});
  child.wait_ready_file("nompi", 30s);
  const os::Pid pid{child.pid()};
  for (int i = 0; i < 5000 && os::read_stat(pid)->state != 'D'; ++i) std::this_thread::sleep_for(2ms);
  ASSERT_EQ(os::read_stat(pid)->state, 'D');
  StackSampler sampler;
  const auto once = sampler.sample(pid);
  EXPECT_EQ(once.failure, os::StopFailure::InKernel) << once.describe();
  EXPECT_EQ(once.describe(), "waiting in the kernel (state D)");
  EXPECT_EQ(sampler.sample_many({*os::identify(pid)}).front().failure, os::StopFailure::InKernel);
  EXPECT_EQ(os::read_status(pid)->tracer, 0) << "seized while it waited";
  ASSERT_EQ(os::read_stat(pid)->state, 'D') << "let go before the test did";

  std::ofstream(release).put('\n');
  for (int i = 0; i < 5000 && os::read_stat(pid)->state == 'D'; ++i) std::this_thread::sleep_for(2ms);
  EXPECT_EQ(settle(sampler, pid, RankState::OutMpi).state, RankState::OutMpi);
  EXPECT_TRUE(makes_progress(pid));
}

// A rank killed while a sample holds one of its threads (mpirun aborting the job, the OOM killer,
// a crash in another thread) ends as a zombie that, traced, is reported to the monitor and not to
// its parent; and a process whose thread is an unreaped zombie is not reported at all. Before,
// the detach failed (ESRCH) and nobody reaped it: mpirun waited for the rank until the monitor
// exited, and a batch job's monitors exit when its script does: the job never ended.
class HeldWhenKilled : public ::testing::TestWithParam<bool> {};

TEST_P(HeldWhenKilled, ARankKilledWhileHeldStillEndsItsJob) {
  const bool hold_main_thread = GetParam();
  MpiJob job(2, test_program("ps_target"), {"barrier", "compute"});
  const auto launched = job.wait_ready();
  const os::ProcessIdentity rank = *os::identify(os::Pid{launched[1].pid});
  std::optional<os::Tid> tid;
  for (const auto t : os::list_threads(rank.pid)) {
    if ((t == os::main_thread(rank.pid)) == hold_main_thread) tid = t;
  }
  ASSERT_TRUE(tid) << "rank 1 has no thread but its main one";
  {
    auto held = os::StoppedThread::stop(rank, *tid);
    ASSERT_TRUE(std::holds_alternative<os::StoppedThread>(held));
    ASSERT_EQ(::kill(rank.pid.value, SIGKILL), 0);
    // The held thread ends as a zombie, which only its tracer, this test, can reap.
    const auto state = [&] {
      const auto stat = os::read_thread_stat(rank.pid, *tid);
      return stat ? stat->state : '?';
    };
    for (int i = 0; i < 5000 && state() != 'Z'; ++i) std::this_thread::sleep_for(2ms);
    ASSERT_EQ(state(), 'Z');
  }  // the sample ends: its detach fails, and the zombie is reaped
  EXPECT_NE(job.launcher().wait_exit(60s), -1) << "mpirun never saw its rank end";
  EXPECT_FALSE(os::is_alive(rank));
}

INSTANTIATE_TEST_SUITE_P(Threads, HeldWhenKilled, ::testing::Values(true, false),
                         [](const auto& test) { return test.param ? "MainThread" : "AnotherThread"; });

// The system call a process's main thread is blocked in now (from /proc, without a stop); -1 if none.
long blocked_in(os::Pid pid) {
  const auto wait = os::read_thread_wait(pid, os::main_thread(pid));
  return wait ? wait->syscall : -1;
}

bool in_epoll_wait(os::Pid pid) { return blocked_in(pid) == SYS_epoll_wait || blocked_in(pid) == SYS_epoll_pwait; }

// A rank blocked in epoll_wait in its own code (an application's event loop) is sampled as it
// waits, never stopped: a ptrace stop makes epoll_wait fail with EINTR (signal(7)), and this
// program, like code that never expects a signal, then aborts the job (before: at the first sample).
TEST(Sampler, ARankWaitingInEpollIsSampledWithoutBreakingItsWait) {
  MpiJob job(2, test_program("ps_target"), {"barrier", "epoll"});
  const auto launched = job.wait_ready();
  const os::Pid pid{launched[1].pid};
  const auto wait_now = [&] { return os::read_thread_wait(pid, os::main_thread(pid)); };
  for (int i = 0; i < 5000 && !in_epoll_wait(pid); ++i) std::this_thread::sleep_for(2ms);
  ASSERT_TRUE(in_epoll_wait(pid));
  const auto before = wait_now();
  StackSampler sampler;
  SampleOptions with_frames;
  with_frames.frames = true;
  std::set<std::uint64_t> paths;
  for (int i = 0; i < 100; ++i) {
    const auto s = sampler.sample(pid, with_frames);
    ASSERT_FALSE(s.failure) << s.describe();
    EXPECT_EQ(s.state, RankState::OutMpi) << s.describe();
    EXPECT_EQ(s.stopped, 0ns) << "stopped in its wait";
    std::vector<std::string> names;
    for (const auto& f : s.frames) names.push_back(f.function);
    const auto has = [&](std::string_view name) { return std::find(names.begin(), names.end(), name) != names.end(); };
    ASSERT_TRUE(has("wait_for_event") && has("main")) << ::testing::PrintToString(names);
    paths.insert(s.path);
  }
  EXPECT_EQ(paths.size(), 1u);
  EXPECT_FALSE(paths.contains(0));
  // The very same wait, unbroken: a broken one would have aborted the job.
  EXPECT_EQ(wait_now(), before);
  EXPECT_TRUE(os::is_alive(*os::identify(pid)));

  // Stopped by a signal (Ctrl-Z, kill -STOP) in that wait, the rank still shows the call in /proc,
  // but it is no longer waiting in it: the sampler stops it like any other and says it is paused
  // (the watch holds a paused job), rather than sample it as if it waited. The signal itself broke
  // the wait (the rank aborts the job once continued): this ends the test.
  ASSERT_EQ(::kill(pid.value, SIGSTOP), 0);
  for (int i = 0; i < 5000 && os::read_stat(pid)->state != 'T'; ++i) std::this_thread::sleep_for(2ms);
  ASSERT_EQ(os::read_stat(pid)->state, 'T');
  ASSERT_TRUE(in_epoll_wait(pid)) << "/proc no longer shows a stopped thread's call: this part proves nothing";
  const auto paused = sampler.sample(pid);
  ASSERT_FALSE(paused.failure) << paused.describe();
  EXPECT_TRUE(paused.job_control_stopped);
  // Back in its stop once the detach's kick is over (JobControlStoppedProcessStaysStopped).
  for (int i = 0; i < 1000 && os::read_stat(pid)->state != 'T'; ++i) std::this_thread::sleep_for(2ms);
  EXPECT_EQ(os::read_stat(pid)->state, 'T') << "a paused rank was resumed";
}

// Each call in os::stop_interrupts that a test program can wait in: a thread waiting there is
// sampled without a stop, 20 times, and its wait goes on unbroken; then one plain ptrace stop
// (seize, interrupt, detach: what the sampler did before) breaks it. The second half is the kernel
// behaviour the list stands on, so a kernel that stops breaking a call fails here, and so would
// one more call found in the list by mistake.
struct WaitThatAStopBreaks {
  const char* call;
  long syscall;
};

void PrintTo(const WaitThatAStopBreaks& w, std::ostream* out) { *out << w.call; }

class WaitsThatAStopBreaks : public ::testing::TestWithParam<WaitThatAStopBreaks> {};

TEST_P(WaitsThatAStopBreaks, AreSampledAsTheyWaitAndAStopWouldHaveBrokenThem) {
  const auto [call, syscall] = GetParam();
  testing::ChildProcess waiting({test_program("ps_nompi"), "wait", call});
  for (int i = 0; i < 15000 && waiting.running() && !std::filesystem::exists(waiting.ready_dir() / "nompi"); ++i) {
    std::this_thread::sleep_for(2ms);
  }
  // A site may disable io_uring (kernel.io_uring_disabled) or a container forbid it (ENOSYS, EPERM:
  // ps_nompi exits 4): nothing to test. Any other failure to set the wait up is the test's own.
  if (!waiting.running() && waiting.wait_exit(0s) == 4) GTEST_SKIP() << call << " is disabled on this machine";
  const os::Pid pid{waiting.wait_ready_file("nompi", 30s)};
  const auto wait_now = [&] { return os::read_thread_wait(pid, os::main_thread(pid)); };
  for (int i = 0; i < 5000 && blocked_in(pid) != syscall; ++i) std::this_thread::sleep_for(2ms);
  const auto before = wait_now();
  ASSERT_TRUE(before && before->syscall == syscall) << call << " never waited in system call " << syscall;
  EXPECT_TRUE(os::stop_interrupts(syscall));
  StackSampler sampler;
  for (int i = 0; i < 20; ++i) {
    const auto s = sampler.sample(pid);
    ASSERT_FALSE(s.failure) << s.describe();
    EXPECT_EQ(s.state, RankState::OutMpi) << s.describe();
    EXPECT_EQ(s.stopped, 0ns);
  }
  EXPECT_EQ(wait_now(), before) << "the wait was broken";
  ASSERT_TRUE(waiting.running());

  ASSERT_EQ(::ptrace(PTRACE_SEIZE, pid.value, nullptr, nullptr), 0);
  ASSERT_EQ(::ptrace(PTRACE_INTERRUPT, pid.value, nullptr, nullptr), 0);
  ASSERT_EQ(::waitpid(pid.value, nullptr, __WALL), pid.value);
  ASSERT_EQ(::ptrace(PTRACE_DETACH, pid.value, nullptr, nullptr), 0);
  EXPECT_EQ(waiting.wait_exit(30s), 3) << "one stop did not break " << call;
}

INSTANTIATE_TEST_SUITE_P(Calls, WaitsThatAStopBreaks,
                         ::testing::Values(WaitThatAStopBreaks{"epoll", SYS_epoll_wait},
                                           WaitThatAStopBreaks{"io_uring", SYS_io_uring_enter},
                                           WaitThatAStopBreaks{"aio", SYS_io_getevents},
                                           WaitThatAStopBreaks{"sigwait", SYS_rt_sigtimedwait},
                                           WaitThatAStopBreaks{"recv-timeout", SYS_recvfrom}),
                         [](const auto& test) {
                           std::string name = test.param.call;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// A debugger attached to such a rank (seized, and left running in its wait) is still a debugger:
// the sample says "already traced", as for any rank a debugger holds, and is not taken behind its
// back from /proc.
TEST(Sampler, ARankWaitingInEpollUnderADebuggerIsReportedTraced) {
  MpiJob job(2, test_program("ps_target"), {"barrier", "epoll"});
  const auto launched = job.wait_ready();
  const os::Pid pid{launched[1].pid};
  for (int i = 0; i < 5000 && !in_epoll_wait(pid); ++i) std::this_thread::sleep_for(2ms);
  ASSERT_TRUE(in_epoll_wait(pid));
  // This test thread is the debugger; seizing stops nothing. The job is killed at the end, as
  // letting go of a seized thread needs a stop, which would break its wait.
  ASSERT_EQ(::ptrace(PTRACE_SEIZE, pid.value, nullptr, nullptr), 0);
  ASSERT_TRUE(in_epoll_wait(pid));
  StackSampler sampler;
  EXPECT_EQ(sampler.sample(pid).failure, os::StopFailure::AlreadyTraced);
  EXPECT_TRUE(in_epoll_wait(pid)) << "the debugger's rank was stopped";
}

// Another tracer that holds a process for a moment, as a second watchdog's sample of the same job
// does (parastack run inside a --parastack job), is waited out: the sample is taken once it lets
// go, rather than reported "already traced by a debugger" (which the model takes for a debugger
// stopping the job). Before, two watchers on one job each saw the other as a debugger at every
// collision and ignored their alarms: a spinning rank was found after 15 s instead of 4.
TEST(Sampler, ABriefHoldByAnotherTracerIsWaitedOut) {
  testing::ChildProcess child({test_program("ps_nompi"), "spin"});
  child.wait_ready_file("nompi", 30s);
  const os::Pid pid{child.pid()};
  // This test thread is the other tracer: the process is seized and stopped when the sample starts.
  ASSERT_EQ(::ptrace(PTRACE_SEIZE, pid.value, nullptr, nullptr), 0);
  ASSERT_EQ(::ptrace(PTRACE_INTERRUPT, pid.value, nullptr, nullptr), 0);
  ASSERT_EQ(::waitpid(pid.value, nullptr, __WALL), pid.value);
  StackSampler sampler;
  std::atomic<pid_t> sampling_thread{0};
  RankSample taken;
  const os::ProcessIdentity process = *os::identify(pid);
  std::thread other([&] {
    sampling_thread = static_cast<pid_t>(::syscall(SYS_gettid));
    taken = sampler.sample_many({process}).front();
  });
  while (sampling_thread == 0) std::this_thread::sleep_for(100us);
  // The hold lasts until the sampler, refused, pauses before it tries again (its thread sleeps):
  // a hold timed by a sleep here could end before the sample began, and prove nothing.
  const os::Tid sampler_tid{sampling_thread};
  bool refused = false;
  for (int i = 0; i < 100000 && !refused; ++i) {
    const auto wait = os::read_thread_wait(os::Pid{::getpid()}, sampler_tid);
    refused = wait && (wait->syscall == SYS_clock_nanosleep || wait->syscall == SYS_nanosleep);
  }
  const long detached = ::ptrace(PTRACE_DETACH, pid.value, nullptr, nullptr);
  other.join();  // before any assertion: a joinable thread left behind would abort the test binary
  ASSERT_EQ(detached, 0);
  ASSERT_TRUE(refused) << "the sampler never paused for the hold: " << taken.describe();
  EXPECT_FALSE(taken.failure.has_value()) << taken.describe();
  EXPECT_EQ(taken.state, RankState::OutMpi) << taken.describe();
  EXPECT_TRUE(makes_progress(pid));
}

// held_ranks' question, "is a rank stopped by someone else?", answered the same way: a tracer
// that lets go within sampler::kBriefHold was sampling; one that stays is holding.
TEST(Sampler, OnlyATracerThatStaysCountsAsHolding) {
  testing::ChildProcess child({test_program("ps_nompi"), "spin"});
  child.wait_ready_file("nompi", 30s);
  const os::ProcessIdentity process = *os::identify(os::Pid{child.pid()});
  const pid_t nobody = -1;
  EXPECT_EQ(sampler::lasting_tracers({process}, nobody).front(), 0);  // untraced
  // A hold that lasts: this thread's, until released below.
  ASSERT_EQ(::ptrace(PTRACE_SEIZE, process.pid.value, nullptr, nullptr), 0);
  const auto tid = static_cast<pid_t>(::syscall(SYS_gettid));
  EXPECT_EQ(sampler::lasting_tracers({process}, nobody).front(), tid);
  EXPECT_EQ(sampler::lasting_tracers({process}, tid).front(), 0);  // the asking monitor's own hold is no one else's
  ASSERT_EQ(::ptrace(PTRACE_INTERRUPT, process.pid.value, nullptr, nullptr), 0);
  ASSERT_EQ(::waitpid(process.pid.value, nullptr, __WALL), process.pid.value);
  ASSERT_EQ(::ptrace(PTRACE_DETACH, process.pid.value, nullptr, nullptr), 0);
  // A brief one: another thread seizes and stops the process, and lets go once the question has
  // seen the hold (the asking thread pauses, asleep, before it looks again): a hold timed by a sleep
  // could end before the question was asked, and prove nothing.
  enum { kPending, kHeld, kRefused };
  std::atomic<int> brief_state{kPending};
  std::atomic<bool> hold_seen{false};
  const os::Tid asking{tid};
  std::thread brief([&] {
    if (::ptrace(PTRACE_SEIZE, process.pid.value, nullptr, nullptr) != 0) {
      brief_state = kRefused;
      return;
    }
    ::ptrace(PTRACE_INTERRUPT, process.pid.value, nullptr, nullptr);
    ::waitpid(process.pid.value, nullptr, __WALL);
    brief_state = kHeld;
    for (int i = 0; i < 100000 && !hold_seen; ++i) {
      const auto wait = os::read_thread_wait(os::Pid{::getpid()}, asking);
      hold_seen = wait && (wait->syscall == SYS_clock_nanosleep || wait->syscall == SYS_nanosleep);
    }
    ::ptrace(PTRACE_DETACH, process.pid.value, nullptr, nullptr);
  });
  // Not a sleep: the other thread takes this thread's sleep for the question's pause.
  while (brief_state == kPending) std::this_thread::yield();
  const pid_t after_brief_hold = brief_state == kHeld ? sampler::lasting_tracers({process}, nobody).front() : -1;
  brief.join();
  ASSERT_EQ(brief_state, kHeld) << "the second seize was refused";
  ASSERT_TRUE(hold_seen) << "the question never paused for the hold";
  EXPECT_EQ(after_brief_hold, 0);
  EXPECT_TRUE(makes_progress(process.pid));
}

TEST(Sampler, GdbCanAttachWhileRanksAreBeingSampled) {
  MpiJob job(2, test_program("ps_target"), {"barrier", "compute"});
  const auto launched = job.wait_ready();
  std::atomic<bool> stop{false};
  std::atomic<int> samples{0};
  std::thread loop([&] {
    StackSampler sampler;
    while (!stop) {
      for (const auto& r : launched) {
        sampler.sample(os::Pid{r.pid});
        ++samples;
      }
      // 100 samples a second: 40 times parastack's default pace. Back to back, a sampler would
      // hold some rank seized at almost any moment, and gdb's attach can only fail then (EPERM).
      std::this_thread::sleep_for(10ms);
    }
  });
  // An attach that lands while a sample holds the rank (a few ms out of every 10 here) fails
  // with EPERM, as for any second tracer; the user simply tries again. What must never happen is a
  // rank that stays held: then every try fails.
  while (samples.load() < static_cast<int>(launched.size())) std::this_thread::sleep_for(1ms);
  const std::string gdb = "timeout 60 gdb -nx -batch -p " + std::to_string(launched[0].pid) +
                          " -ex 'info threads' -ex detach >/dev/null 2>&1";
  int status = -1;
  for (int attempt = 0; attempt < 5 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0); ++attempt) {
    status = std::system(gdb.c_str());
  }
  stop = true;
  loop.join();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "gdb could not attach in 5 tries";
  EXPECT_GT(samples.load(), 0);
  for (const auto& r : launched) EXPECT_TRUE(makes_progress(os::Pid{r.pid})) << "rank " << r.rank;
}

// ---- call-path signatures (stats::RankSnapshot::path): a hung rank keeps one, a healthy one moves ----

// A random pause of 0-50 ms between samples, so that samples do not beat with the job's period.
void random_pause(std::mt19937& rng) {
  std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 50)(rng)));
}

// Samples until the rank is in `expected` state with the same known path in 3 samples in a row
// (the hang needs a moment to reach every rank), or the deadline passes; returns the last sample.
RankSample settle_path(StackSampler& sampler, os::Pid pid, RankState expected) {
  RankSample last;
  int in_a_row = 0;
  std::uint64_t previous = 0;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    last = sampler.sample(pid);
    const bool steady = last.state == expected && last.path != 0 && last.path == previous;
    in_a_row = steady ? in_a_row + 1 : last.state == expected && last.path != 0 ? 1 : 0;
    previous = last.path;
    if (in_a_row >= 3) break;
    std::this_thread::sleep_for(10ms);  // pacing between samples, not synchronisation
  }
  return last;
}

TEST(SampledPath, HungRanksKeepOnePath) {
  // ps_solver with the fault injector: rank 1 spins forever outside MPI at its 10th MPI call; the
  // others then wait for it forever inside MPI (its ring neighbours in MPI_Sendrecv, rank 3 in
  // MPI_Allreduce).
  constexpr int kRanks = 4, kSpinning = 1;
  std::vector<std::string> argv{"mpirun", "--oversubscribe", "-np", std::to_string(kRanks)};
  for (const auto& x : {"LD_PRELOAD=" + test_program("libps_fault.so"), std::string("PS_FAULT_KIND=spin"),
                        "PS_FAULT_RANK=" + std::to_string(kSpinning), std::string("PS_FAULT_AFTER_CALLS=10")}) {
    argv.insert(argv.end(), {"-x", x});
  }
  argv.insert(argv.end(), {test_program("ps_solver"), "blocking", "600"});
  testing::ChildProcess job(argv, testing::mpi_test_environment());
  std::vector<os::Pid> ranks;
  for (int r = 0; r < kRanks; ++r) ranks.push_back(os::Pid{job.wait_ready_file("rank." + std::to_string(r), 60s)});
  job.wait_ready_file("fault." + std::to_string(kSpinning), 60s);

  StackSampler sampler;
  // The hang reaches the ranks one after another, and a rank can sit for a while at an earlier
  // call and look settled there: on a loaded CI machine (2026-12-04) rank 0 kept one
  // MPI_Sendrecv's path for 3 samples, waiting for a descheduled neighbour, then went on to the
  // one where it waits for the spinner for good. So the hang has settled when a pass over all the
  // ranks finds each at the path the pass before found it at.
  std::vector<std::uint64_t> paths(kRanks, 0), before;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  do {
    before = paths;
    for (int r = 0; r < kRanks; ++r) {
      const RankState expected = r == kSpinning ? RankState::OutMpi : RankState::InMpi;
      const auto settled = settle_path(sampler, ranks[r], expected);
      ASSERT_EQ(settled.state, expected) << "rank " << r << ": " << settled.describe();
      ASSERT_NE(settled.path, 0u) << "rank " << r << ": " << settled.describe();
      paths[r] = settled.path;
    }
  } while (paths != before && std::chrono::steady_clock::now() < deadline);
  ASSERT_EQ(paths, before) << "the ranks' paths did not settle in 60 s";
  std::mt19937 rng(1);
  for (int r = 0; r < kRanks; ++r) {
    for (int i = 0; i < 10; ++i) {
      random_pause(rng);
      const auto s = sampler.sample(ranks[r]);
      EXPECT_EQ(s.path, paths[r]) << "rank " << r << ", sample " << i << ": " << s.describe() << " " << s.mpi_function;
    }
  }
}

// Single-steps a spinning process's main thread until its pc is on a PLT stub of `executable` (the
// stub's `jmp *GOT(%rip)`, ff 25: in an executable's code only PLT stubs jump through the GOT), and
// leaves it there stopped by SIGSTOP, a job-control stop, which the sampler samples where it is and
// leaves in place. Returns the stub's address, or nullopt if none was reached in `steps` steps.
std::optional<std::uint64_t> stop_on_a_plt_stub(os::Pid pid, const std::string& executable, int steps = 100000) {
  const auto maps = os::read_maps(pid);
  if (!maps) return std::nullopt;
  std::vector<sampler::CodeRange> code;
  for (const auto& m : *maps) {
    if (m.executable && m.path.ends_with(executable)) code.push_back({m.start, m.end});
  }
  if (::ptrace(PTRACE_SEIZE, pid.value, nullptr, nullptr) != 0) return std::nullopt;
  int status = 0;
  if (::ptrace(PTRACE_INTERRUPT, pid.value, nullptr, nullptr) != 0 ||
      ::waitpid(pid.value, &status, __WALL) != pid.value) {
    return std::nullopt;
  }
  std::optional<std::uint64_t> stub;
  for (int step = 0; step < steps && !stub; ++step) {
    user_regs_struct regs{};
    if (::ptrace(PTRACE_GETREGS, pid.value, nullptr, &regs) != 0) break;
    const bool in_code =
        std::any_of(code.begin(), code.end(), [&](const sampler::CodeRange& c) { return c.contains(regs.rip); });
    errno = 0;
    const long word = in_code ? ::ptrace(PTRACE_PEEKTEXT, pid.value, regs.rip, nullptr) : 0;
    if (in_code && errno == 0 && (word & 0xffff) == 0x25ff) {
      stub = regs.rip;
      break;
    }
    if (::ptrace(PTRACE_SINGLESTEP, pid.value, nullptr, nullptr) != 0 ||
        ::waitpid(pid.value, &status, __WALL) != pid.value) {
      break;
    }
  }
  // Queue a SIGSTOP while the process is held, then let go: it stops before its next instruction,
  // so it stays on the stub. Not PTRACE_DETACH's signal argument: when the stub is found at the
  // first look, the thread is in PTRACE_INTERRUPT's event stop, where the kernel ignores that
  // argument, and the process ran on (a CI failure, 2026-12-02).
  if (stub) ::kill(pid.value, SIGSTOP);
  ::ptrace(PTRACE_DETACH, pid.value, nullptr, nullptr);
  return stub;
}

// The demo's bug: heat's rank 1 spins in refine_boundary, which calls libm's fmax through the
// executable's PLT. That stub is on the way into the runtime, not a place of the rank's own, so a
// sample that finds the rank there must not give it another path: it did, and each such sample
// broke the stasis evidence of the demo's hang. Random samples found the stub in ~6% of samples on
// one machine and in none of 5000 (five runs) on another (AMD EPYC, 2026-11-28), so the test puts
// the rank there: single-stepped onto the stub and held by SIGSTOP.
TEST(SampledPath, ASpinCallingALibraryThroughThePltKeepsOnePath) {
  testing::ChildProcess job(
      {"mpirun", "--oversubscribe", "-np", "2", test_program("heat"), "600", "--bug-rank", "1", "--bug-after", "0"},
      testing::mpi_test_environment());
  // heat writes no ready files: its ranks are found as parastack finds them.
  std::optional<os::Pid> spinning;
  for (const auto deadline = std::chrono::steady_clock::now() + 60s;
       !spinning && std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(20ms)) {
    for (const auto& r :
         sampler::discover_ranks({sampler::JobSelector::Kind::Launcher, os::Pid{job.pid()}, {}}).ranks) {
      if (r.rank == 1) spinning = r.pid;
    }
  }
  ASSERT_TRUE(spinning) << "heat's rank 1 was not found";
  StackSampler sampler;
  SampleOptions with_frames;
  with_frames.frames = true;
  // The bug strikes at rank 1's first step; from then on it is outside MPI for good.
  const auto settled = settle_path(sampler, *spinning, RankState::OutMpi);
  ASSERT_EQ(settled.state, RankState::OutMpi);
  std::map<std::uint64_t, int> paths;
  std::mt19937 rng(3);
  for (int i = 0; i < 200; ++i) {
    // A random pause of up to 1 ms, so that samples do not beat with the loop.
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 1000)(rng)));
    const auto s = sampler.sample(*spinning);
    ASSERT_EQ(s.state, RankState::OutMpi) << s.describe();
    ++paths[s.path];
  }
  std::string seen;
  for (const auto& [path, count] : paths) seen += " " + std::to_string(count);
  EXPECT_EQ(paths.size(), 1u) << "samples per path:" << seen;
  EXPECT_FALSE(paths.contains(0));

  struct Resume {  // whatever happens, the rank runs again
    os::Pid pid;
    ~Resume() { ::kill(pid.value, SIGCONT); }
  } resume{*spinning};
  const auto stub = stop_on_a_plt_stub(*spinning, "/heat");
  ASSERT_TRUE(stub) << "single-stepping never reached a PLT stub";
  for (int i = 0; i < 5000 && os::read_stat(*spinning)->state != 'T'; ++i) std::this_thread::sleep_for(2ms);
  ASSERT_EQ(os::read_stat(*spinning)->state, 'T');
  const auto on_stub = sampler.sample(*spinning, with_frames);
  ASSERT_FALSE(on_stub.failure) << on_stub.describe();
  EXPECT_TRUE(on_stub.job_control_stopped);
  ASSERT_FALSE(on_stub.frames.empty());
  EXPECT_EQ(on_stub.frames[0].address, *stub);
  EXPECT_TRUE(on_stub.frames[0].function.empty()) << on_stub.frames[0].function;
  EXPECT_TRUE(on_stub.frames[0].module.ends_with("heat")) << on_stub.frames[0].module;
  EXPECT_EQ(on_stub.state, RankState::OutMpi) << on_stub.describe();
  EXPECT_EQ(on_stub.path, settled.path);
  ASSERT_EQ(::kill(spinning->value, SIGCONT), 0);
  EXPECT_TRUE(makes_progress(*spinning));
}

// Rank 1 of `job` once its spin has begun (its rank.1 and fault.1 ready files), seen outside MPI.
os::Pid spinning_rank_one(testing::ChildProcess& job, StackSampler& sampler) {
  const os::Pid spinning{job.wait_ready_file("rank.1", 60s)};
  job.wait_ready_file("fault.1", 60s);
  EXPECT_EQ(settle(sampler, spinning, RankState::OutMpi).state, RankState::OutMpi);
  return spinning;
}

// A hybrid MPI + OpenMP rank whose solve never converges (tests/programs/ps_openmp.c, 2 threads a
// rank): its main thread runs one parallel region over and over, found now in the region's body
// (smooth._omp_fn.0) and now in libgomp (waiting at the region's closing barrier for the other
// thread, starting the next region). Both are the place of smooth, which entered the runtime, so
// the rank keeps one path as a serial spin does. Before, they were two places, and the rank never
// looked still.
TEST(SampledPath, ASpinThroughAnOpenMpRegionKeepsOnePath) {
  testing::ChildProcess job({"mpirun", "--oversubscribe", "-np", "2", "-x", "OMP_NUM_THREADS=2",
                             test_program("ps_openmp"), "600", "--bug-rank", "1", "--bug-after", "0"},
                            testing::mpi_test_environment());
  StackSampler sampler;
  const os::Pid spinning = spinning_rank_one(job, sampler);
  ASSERT_FALSE(HasFailure());
  const SampleOptions with_frames{.frames = true};
  std::map<std::uint64_t, int> paths;
  int in_body = 0, in_runtime = 0;
  std::mt19937 rng(4);
  for (int i = 0; i < 300; ++i) {
    // A random pause of up to 1 ms, so that samples do not beat with the region's rhythm.
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 1000)(rng)));
    const auto s = sampler.sample(spinning, with_frames);
    ASSERT_EQ(s.state, RankState::OutMpi) << s.describe();
    ASSERT_FALSE(s.frames.empty()) << s.describe();
    ++paths[s.path];
    in_body += s.frames[0].function.find("_omp_fn") != std::string::npos ? 1 : 0;
    in_runtime += s.frames[0].module.find("libgomp") != std::string::npos ? 1 : 0;
  }
  std::string seen;
  for (const auto& [path, count] : paths) seen += " " + std::to_string(count);
  EXPECT_EQ(paths.size(), 1u) << "samples per path:" << seen << "; in the body " << in_body << ", in libgomp "
                              << in_runtime;
  EXPECT_FALSE(paths.contains(0));
  // The case this test is about: samples found the thread on both sides of the region's edge.
  EXPECT_GT(in_body, 0);
  EXPECT_GT(in_runtime, 0);
}

// 300 samples of a process spinning in ps_ring.py's converge(), called from main(): one path, while
// the interpreter's innermost C function changes; Python frames named, in the interpreter's run.
void expect_one_path_through_python_spin(StackSampler& sampler, os::Pid spinning) {
  const SampleOptions with_frames{.frames = true};
  std::map<std::uint64_t, int> paths;
  std::set<std::string> innermost_c;
  std::mt19937 rng(5);
  for (int i = 0; i < 300; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 1000)(rng)));
    const auto s = sampler.sample(spinning, with_frames);
    ASSERT_EQ(s.state, RankState::OutMpi) << s.describe();
    ++paths[s.path];
    const auto c = std::find_if(s.frames.begin(), s.frames.end(), [](const auto& f) { return f.module != "Python"; });
    ASSERT_NE(c, s.frames.end());
    innermost_c.insert(c->function);
    // Python's frames, innermost first, inside the interpreter's run: converge, then main, then
    // the module.
    std::vector<std::string> python;
    for (const auto& f : s.frames) {
      if (f.module == "Python") python.push_back(f.function);
    }
    ASSERT_EQ(python.size(), 3u) << s.describe();
    EXPECT_EQ(python[0].rfind("converge (" + test_program("ps_ring.py") + ":", 0), 0u) << python[0];
    EXPECT_EQ(python[1].rfind("main (", 0), 0u) << python[1];
    EXPECT_EQ(python[2].rfind("<module> (", 0), 0u) << python[2];
  }
  std::string seen;
  for (const auto& [path, count] : paths) seen += " " + std::to_string(count);
  EXPECT_EQ(paths.size(), 1u) << "samples per path:" << seen;
  EXPECT_FALSE(paths.contains(0));
  // The case this is about: the interpreter's C frames moved.
  std::string functions;
  for (const auto& f : innermost_c) functions += " " + f;
  EXPECT_GT(innermost_c.size(), 1u) << "innermost C functions:" << functions;
}

// An mpi4py rank spinning in Python (tests/programs/ps_ring.py spin: rank 1 loops for ever in
// converge()). Its C stack is the interpreter's, whose innermost function changes with the bytecode
// it runs (the eval loop, integer arithmetic, an object's deallocation): before, 300 samples gave
// 9 paths and the rank never looked still. Its Python stack (python_stack.h) is one place, and the
// frames name the function and line, in the interpreter's run that executes them.
TEST(SampledPath, ARankSpinningInPythonKeepsOnePathAndShowsItsPythonFrames) {
  if (::access("/usr/lib/python3/dist-packages/mpi4py/__init__.py", R_OK) != 0)
    GTEST_FAIL() << "mpi4py is not installed (packaging/bootstrap.sh test installs python3-mpi4py)";
  testing::ChildProcess job(
      {"mpirun", "--oversubscribe", "-np", "2", "/usr/bin/python3", test_program("ps_ring.py"), "spin", "0"},
      testing::mpi_test_environment());
  StackSampler sampler;
  const os::Pid spinning = spinning_rank_one(job, sampler);
  ASSERT_FALSE(HasFailure());
  expect_one_path_through_python_spin(sampler, spinning);
}

// An mpi4py rank is a process before it is an MPI rank: Python loads libmpi (dlopen) when the
// program imports mpi4py, and a monitor may find the rank (by its launcher's environment) and
// sample it before that. Its MPI library must then be found once it is loaded: before 2026-12-05
// it never was, and the rank was OUT_MPI for good (a 4-rank job beside another had S = 2/4 in
// every healthy observation, and its spinning rank went unfound for 180 s).
TEST(RankState, AnMpiLibraryLoadedAfterTheRanksFirstSampleIsFound) {
  if (::access("/usr/lib/python3/dist-packages/mpi4py/__init__.py", R_OK) != 0)
    GTEST_FAIL() << "mpi4py is not installed (packaging/bootstrap.sh test installs python3-mpi4py)";
  testing::TempDir control;
  const auto import_now = control.path() / "import";
  auto environment = testing::mpi_test_environment();
  environment.push_back("PS_RING_IMPORT_AFTER=" + import_now.string());
  testing::ChildProcess job({"mpirun", "--oversubscribe", "-np", "2", "-x", "PS_RING_IMPORT_AFTER", "/usr/bin/python3",
                             test_program("ps_ring.py"), "deadlock", "0"},
                            environment);
  const os::Pid rank{job.wait_ready_file("python.1", 60s)};
  StackSampler sampler;
  const RankSample before = sampler.sample(rank);
  EXPECT_FALSE(before.mpi_library_found) << before.describe();
  EXPECT_EQ(before.state, RankState::OutMpi) << before.describe();
  std::ofstream(import_now).put('\n');
  job.wait_ready_file("fault.1", 60s);  // rank 1 waits for ever in a receive nobody sends
  const RankSample after = settle(sampler, rank, RankState::InMpi);
  EXPECT_TRUE(after.mpi_library_found) << after.describe();
  EXPECT_EQ(after.state, RankState::InMpi) << after.describe();
  EXPECT_EQ(after.mpi_function, "MPI_Mprobe") << after.describe();  // mpi4py's recv of a pickled object
}

// The same spin without MPI, in each CPython whose structures differ (python_stack.h: 3.11 flags
// a run's first frame, 3.12 ends it with a shim frame, 3.13 has no _PyCFrame and checks its own
// offsets): testing::test_pythons().
TEST(SampledPath, ASpinInEachCPythonNamedKeepsOnePath) {
  for (const std::string& python : testing::test_pythons()) {
    SCOPED_TRACE(python);
    testing::ChildProcess spin({python, test_program("ps_ring.py"), "alone"}, testing::mpi_test_environment());
    StackSampler sampler;
    const os::Pid spinning = spinning_rank_one(spin, sampler);
    ASSERT_FALSE(HasFailure());
    expect_one_path_through_python_spin(sampler, spinning);
  }
}

// A healthy solver computing 2-4 ms per iteration, short enough that 50 samples see every rank
// both computing and exchanging.
class HealthySolverPaths : public ::testing::TestWithParam<const char*> {};

TEST_P(HealthySolverPaths, RanksMoveBetweenPaths) {
  MpiJob job(4, test_program("ps_solver"), {GetParam(), "600", "2"});
  const auto launched = job.wait_ready();
  StackSampler sampler;
  std::mt19937 rng(2);
  std::vector<std::map<std::uint64_t, int>> paths(launched.size());
  for (int i = 0; i < 50; ++i) {
    random_pause(rng);
    for (std::size_t r = 0; r < launched.size(); ++r) {
      const auto s = sampler.sample(os::Pid{launched[r].pid});
      ASSERT_FALSE(s.failure) << "rank " << r << ": " << s.describe();
      if (s.path != 0) ++paths[r][s.path];
    }
  }
  for (std::size_t r = 0; r < launched.size(); ++r) {
    std::string seen;
    for (const auto& [path, count] : paths[r]) seen += " " + std::to_string(count);
    EXPECT_GE(paths[r].size(), 2u) << "rank " << r << ": samples per known path:" << seen;
  }
}

INSTANTIATE_TEST_SUITE_P(Styles, HealthySolverPaths, ::testing::Values("blocking", "polling"),
                         [](const auto& test) { return std::string(test.param); });

// The monitor killed at any moment of its sample loop (SIGKILL, then SIGTERM) never leaves a rank
// stopped: every rank keeps running afterwards.
void kill_monitor_repeatedly(int signal) {
  MpiJob job(2, test_program("ps_target"), {"barrier", "compute"});
  const auto launched = job.wait_ready();
  std::mt19937 rng(static_cast<unsigned>(signal));
  std::uniform_int_distribution<int> delay_us(200, 30000);
  for (int round = 0; round < 25; ++round) {
    const pid_t monitor = ::fork();
    if (monitor == 0) {
      const std::string launcher = std::to_string(job.launcher_pid());
      ::execl(PARASTACK_BENCH_BIN, PARASTACK_BENCH_BIN, "sample-bench", "--pid", launcher.c_str(), "--loop", "0.0001",
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));  // a random moment
    ::kill(monitor, signal);
    int status = 0;
    ::waitpid(monitor, &status, 0);
    for (const auto& r : launched) {
      const auto stat = os::read_stat(os::Pid{r.pid});
      ASSERT_TRUE(stat.has_value());
      EXPECT_NE(stat->state, 't') << "round " << round << ": rank " << r.rank << " left in a trace stop";
      ASSERT_TRUE(makes_progress(os::Pid{r.pid})) << "round " << round << ": rank " << r.rank;
    }
  }
}

TEST(Sampler, SigkillOfTheMonitorNeverLeavesARankStopped) { kill_monitor_repeatedly(SIGKILL); }
TEST(Sampler, SigtermOfTheMonitorNeverLeavesARankStopped) { kill_monitor_repeatedly(SIGTERM); }

// Ctrl-Z (SIGTSTP) stops a monitor at once, by default, wherever it is: in the middle of a sample
// it left the rank it held stopped for as long as the monitor stayed stopped (`parastack stacks`
// suspended at a terminal). Held like the termination signals, it now stops the monitor only after
// the detach.
TEST(Sampler, CtrlZOfTheMonitorNeverLeavesARankStopped) {
  MpiJob job(2, test_program("ps_target"), {"barrier", "compute"});
  const auto launched = job.wait_ready();
  std::mt19937 rng(20);
  std::uniform_int_distribution<int> delay_us(200, 30000);
  for (int round = 0; round < 25; ++round) {
    const pid_t monitor = ::fork();
    if (monitor == 0) {
      // Its own process group, whose parent (this test) is outside it: the kernel discards SIGTSTP
      // to an orphaned group, and this test's own is one when ctest runs from a detached shell
      // (nohup bash -c .ci/run: every member's parent is in the group or outside the session).
      ::setpgid(0, 0);
      const std::string launcher = std::to_string(job.launcher_pid());
      ::execl(PARASTACK_BENCH_BIN, PARASTACK_BENCH_BIN, "sample-bench", "--pid", launcher.c_str(), "--loop", "0.0001",
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    struct Reaped {  // however the round ends, the monitor goes
      pid_t pid;
      ~Reaped() {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    } reaped{monitor};
    // Here too (the child may not have run yet): a SIGTSTP that found it still in this test's
    // group would be discarded, and it would never stop (seen on a loaded CI machine).
    ::setpgid(monitor, monitor);
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));  // a random moment
    ASSERT_EQ(::kill(monitor, SIGTSTP), 0);
    int status = 0;
    pid_t got = 0;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while ((got = ::waitpid(monitor, &status, WUNTRACED | WNOHANG)) == 0 &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);  // polling a condition (the monitor's stop), bounded
    }
    ASSERT_EQ(got, monitor) << "round " << round << ": the monitor did not stop within 60 s of SIGTSTP";
    ASSERT_TRUE(WIFSTOPPED(status)) << "round " << round << ": the monitor ended (status " << status << ")";
    for (const auto& r : launched) {  // while the monitor stays stopped
      const auto stat = os::read_stat(os::Pid{r.pid});
      ASSERT_TRUE(stat.has_value());
      EXPECT_NE(stat->state, 't') << "round " << round << ": rank " << r.rank << " left in a trace stop";
      ASSERT_TRUE(makes_progress(os::Pid{r.pid})) << "round " << round << ": rank " << r.rank;
    }
  }
}

}  // namespace
}  // namespace parastack
