// The progress library (libparastack-progress.so, mpi_progress/) on real Open MPI jobs, its page
// read as the monitor reads it (sampler/progress_reader.h): a healthy job, one job per fault kind
// of ps_progress (tests/programs/ps_progress.c, whose header gives the ground truth), a Fortran
// rank, a rank without the library, and processes without MPI that load it anyway. Every job is
// an RAII ChildProcess that kills its processes whatever happens.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "os/proc.h"
#include "sampler/progress_reader.h"
#include "sampler/stack_sampler.h"
#include "support/mpi_job.h"

namespace parastack {
namespace {

using namespace std::chrono_literals;
using sampler::progress_call_name;
using sampler::read_progress_page;
using testing::ChildProcess;
using testing::LaunchedRank;
using testing::test_program;
using Page = parastack_progress_page;

const std::string kLibrary = PARASTACK_PROGRESS_LIBRARY_PATH;
constexpr int kWrongTag = 4242;      // ps_progress.c's WRONG_TAG
constexpr int kDeadlockTag = 31337;  // ps_progress.c's DEADLOCK_TAG

// `mpirun -x LD_PRELOAD=library program args...`: the library in the ranks only, as
// --mpi-progress would put it there. (MpiJob has no place for mpirun's own options.)
class PreloadedJob {
 public:
  PreloadedJob(int ranks, const std::string& program, const std::vector<std::string>& args, bool preload = true)
      : ranks_(ranks), launcher_(command(ranks, program, args, preload), testing::mpi_test_environment()) {}

  std::vector<LaunchedRank> wait_ready(std::chrono::seconds timeout = 60s) {
    std::vector<LaunchedRank> launched;
    for (int r = 0; r < ranks_; ++r) {
      launched.push_back({r, launcher_.wait_ready_file("rank." + std::to_string(r), timeout)});
    }
    return launched;
  }
  ChildProcess& launcher() { return launcher_; }

 private:
  static std::vector<std::string> command(int ranks, const std::string& program, const std::vector<std::string>& args,
                                          bool preload) {
    std::vector<std::string> argv{"mpirun", "--oversubscribe", "-np", std::to_string(ranks)};
    if (preload) argv.insert(argv.end(), {"-x", "LD_PRELOAD=" + kLibrary});
    argv.push_back(program);
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  int ranks_;
  ChildProcess launcher_;
};

std::string describe(const parastack_progress_operation& op) {
  std::ostringstream out;
  out << "{kind " << op.kind << " peer " << op.peer << " tag " << op.tag << " comm " << op.comm << " seq "
      << op.sequence << "}";
  return out.str();
}

std::string describe(const Page& page) {
  std::ostringstream out;
  out << "rank " << page.world_rank << "/" << page.world_size << ": kind " << page.kind << " "
      << progress_call_name(page.call) << " " << describe(page.operation) << " entries " << page.entries
      << " completed " << page.completed << " polls " << page.polls;
  if (page.kind == PARASTACK_WAIT) {
    out << " waits " << page.wait_count << "/" << page.wait_total << (page.wait_any ? " any" : " all") << ":";
    for (std::uint32_t i = 0; i < std::min<std::uint32_t>(page.wait_count, PARASTACK_PROGRESS_MAX_WAITS); ++i) {
      out << " " << describe(page.waits[i]);
    }
  }
  out << " comms:";
  for (const auto& c : page.comms) {
    if (c.id)
      out << " {" << std::hex << c.id << std::dec << " size " << c.size << " rank " << c.rank << " coll "
          << c.collectives << "}";
  }
  return out.str();
}

std::string describe(const std::vector<Page>& pages) {
  std::string text;
  for (const auto& page : pages) text += "\n  " + describe(page);
  return text;
}

// The rank's page; fails the test with the reader's problem if there is none.
Page page_of(const LaunchedRank& rank) {
  std::string problem;
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (auto page = read_progress_page(os::Pid{rank.pid}, problem)) return *page;
    // A healthy rank can be caught entering a call (the page differs between the two reads).
    if (problem != "the page changed while read") break;
  }
  ADD_FAILURE() << "rank " << rank.rank << " (pid " << rank.pid << "): " << problem;
  return Page{};
}

// Reads every rank's page until no rank has entered or left a call over `still_reads` reads in a
// row (a hung job: every rank stays in its call, or outside MPI), or the deadline passes. The
// pacing between reads is not synchronisation: the condition is the pages themselves.
std::vector<Page> settled_pages(const std::vector<LaunchedRank>& ranks, int still_reads = 10) {
  std::vector<Page> last;
  int still = 0;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline && still < still_reads) {
    std::vector<Page> pages;
    std::string problem;
    for (const auto& rank : ranks) {
      if (auto page = read_progress_page(os::Pid{rank.pid}, problem)) pages.push_back(*page);
    }
    const bool same = pages.size() == ranks.size() && last.size() == pages.size() &&
                      std::equal(pages.begin(), pages.end(), last.begin(), [](const Page& a, const Page& b) {
                        return a.entries == b.entries && a.kind == b.kind;
                      });
    still = same ? still + 1 : 0;
    last = std::move(pages);
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(still, still_reads) << "the pages did not settle:" << describe(last);
  return last;
}

const parastack_progress_comm* comm_with_id(const Page& page, std::uint64_t id) {
  for (const auto& c : page.comms) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

// The communicators other than MPI_COMM_WORLD.
std::vector<parastack_progress_comm> other_comms(const Page& page) {
  std::vector<parastack_progress_comm> found;
  for (const auto& c : page.comms) {
    if (c.id != PARASTACK_COMM_UNKNOWN && c.id != PARASTACK_COMM_WORLD) found.push_back(c);
  }
  return found;
}

bool waits_for(const Page& page, std::uint32_t kind, int peer, std::optional<int> tag = std::nullopt) {
  for (std::uint32_t i = 0; i < std::min<std::uint32_t>(page.wait_count, PARASTACK_PROGRESS_MAX_WAITS); ++i) {
    const auto& op = page.waits[i];
    if (op.kind == kind && op.peer == peer && op.comm == PARASTACK_COMM_WORLD && (!tag || op.tag == *tag)) return true;
  }
  return false;
}

void expect_in_world_allreduce(const Page& page) {
  EXPECT_EQ(page.kind, PARASTACK_COLLECTIVE) << describe(page);
  EXPECT_EQ(progress_call_name(page.call), "MPI_Allreduce") << describe(page);
  EXPECT_EQ(page.operation.comm, PARASTACK_COMM_WORLD) << describe(page);
}

// Every rank but those in `elsewhere` waits in MPI_Allreduce on MPI_COMM_WORLD.
void expect_others_in_world_allreduce(const std::vector<Page>& pages, std::initializer_list<int> elsewhere) {
  for (int r = 0; r < static_cast<int>(pages.size()); ++r) {
    if (std::find(elsewhere.begin(), elsewhere.end(), r) == elsewhere.end()) expect_in_world_allreduce(pages[r]);
  }
}

std::vector<std::string> fault_args(const char* kind, int rank) {
  return {"--fault", kind, "--fault-rank", std::to_string(rank), "--fault-after", "1"};
}

// A 4-rank ps_progress job with the fault `kind` on rank `faulty`, once it fired and every rank's
// page settled (the pages are read then; the job runs on until the object goes).
struct FaultedJob {
  FaultedJob(const char* kind, int faulty)
      : job(4, test_program("ps_progress"), fault_args(kind, faulty)), ranks(job.wait_ready()) {
    job.launcher().wait_ready_file("fault." + std::to_string(faulty), 60s);
    pages = settled_pages(ranks);
  }
  PreloadedJob job;
  std::vector<LaunchedRank> ranks;
  std::vector<Page> pages;
};

TEST(ProgressPage, HealthyRanksShowTheirCommunicatorsAndProgress) {
  PreloadedJob job(4, test_program("ps_progress"), {});
  const auto ranks = job.wait_ready();
  std::vector<Page> first;
  for (const auto& rank : ranks) first.push_back(page_of(rank));
  ASSERT_FALSE(::testing::Test::HasFailure());
  for (int r = 0; r < 4; ++r) {
    const Page& page = first[r];
    EXPECT_EQ(page.magic, PARASTACK_PROGRESS_MAGIC);
    EXPECT_EQ(page.world_rank, r) << describe(page);
    EXPECT_EQ(page.world_size, 4) << describe(page);
    EXPECT_EQ(page.comm_count, 2u) << describe(page);
    EXPECT_EQ(page.comm_overflow, 0u) << describe(page);
    const auto* world = comm_with_id(page, PARASTACK_COMM_WORLD);
    ASSERT_NE(world, nullptr) << describe(page);
    EXPECT_EQ(world->size, 4);
    EXPECT_EQ(world->rank, r);
    EXPECT_GE(world->collectives, 1u) << "MPI_Comm_split counts on MPI_COMM_WORLD: " << describe(page);
  }
  // The halves: one id on each half, another between them; ranks in comm order.
  std::vector<std::uint64_t> half_ids;
  for (int r = 0; r < 4; ++r) {
    const auto halves = other_comms(first[r]);
    ASSERT_EQ(halves.size(), 1u) << describe(first[r]);
    EXPECT_EQ(halves[0].size, 2);
    EXPECT_EQ(halves[0].rank, r % 2);
    half_ids.push_back(halves[0].id);
  }
  EXPECT_EQ(half_ids[0], half_ids[1]);
  EXPECT_EQ(half_ids[2], half_ids[3]);
  EXPECT_NE(half_ids[0], half_ids[2]);
  // Every rank completes calls: `completed` grows while the job runs.
  for (int r = 0; r < 4; ++r) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    Page later = first[r];
    while (later.completed <= first[r].completed && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(10ms);  // pacing; the condition is the page
      later = page_of(ranks[r]);
    }
    EXPECT_GT(later.completed, first[r].completed) << describe(later);
    EXPECT_GT(later.entries, first[r].entries) << describe(later);
  }
}

// Freed communicators give their slots back; past the page's room the rest are counted, not kept.
TEST(ProgressPage, CommunicatorsBeyondThePageAreCounted) {
  constexpr int kKept = 70, kRoom = PARASTACK_PROGRESS_MAX_COMMS - 2;  // world and the half take two
  PreloadedJob job(2, test_program("ps_progress"), {"--churn", "300", "--comms", std::to_string(kKept)});
  const auto ranks = job.wait_ready();
  const Page first = page_of(ranks[0]), second = page_of(ranks[1]);
  ASSERT_FALSE(::testing::Test::HasFailure());
  for (const Page* page : {&first, &second}) {
    EXPECT_EQ(page->comm_count, static_cast<std::uint32_t>(PARASTACK_PROGRESS_MAX_COMMS)) << describe(*page);
    EXPECT_EQ(page->comm_overflow, static_cast<std::uint32_t>(kKept - kRoom)) << describe(*page);
    // split, 300 dups, 70 dups: all collective on MPI_COMM_WORLD, before any loop collective.
    EXPECT_GE(comm_with_id(*page, PARASTACK_COMM_WORLD)->collectives, 1u + 300u + kKept);
  }
  // The copies: distinct ids, the same on both ranks (the halves of 2 ranks differ: one each).
  auto ids = [](const Page& page) {
    std::vector<std::uint64_t> found;
    for (const auto& c : other_comms(page)) {
      if (c.size == 2) found.push_back(c.id);
    }
    std::sort(found.begin(), found.end());
    return found;
  };
  const auto ids0 = ids(first), ids1 = ids(second);
  EXPECT_EQ(ids0.size(), static_cast<std::size_t>(kRoom));
  EXPECT_EQ(std::adjacent_find(ids0.begin(), ids0.end()), ids0.end()) << "two copies share an id";
  EXPECT_EQ(ids0, ids1);
}

// R skips an Allreduce and waits in the next ring exchange for its left neighbour, which is in
// that Allreduce, one collective ahead of R on MPI_COMM_WORLD, like everyone else.
TEST(ProgressPage, SkippedCollective) {
  constexpr int kFaulty = 1, kLeft = 0;
  const FaultedJob job("skip-collective", kFaulty);
  const auto& pages = job.pages;
  ASSERT_EQ(pages.size(), 4u);
  const Page& faulty = pages[kFaulty];
  EXPECT_EQ(faulty.kind, PARASTACK_WAIT) << describe(pages);
  EXPECT_EQ(progress_call_name(faulty.call), "MPI_Waitall") << describe(faulty);
  EXPECT_EQ(faulty.wait_any, 0u);
  // Its Isend to the right was eager, done before the Waitall: nothing it waits for.
  EXPECT_EQ(faulty.wait_total, 1u) << describe(faulty);
  EXPECT_TRUE(waits_for(faulty, PARASTACK_RECV, kLeft)) << describe(faulty);
  EXPECT_FALSE(waits_for(faulty, PARASTACK_SEND, kFaulty + 1)) << describe(faulty);
  const auto* world = comm_with_id(faulty, PARASTACK_COMM_WORLD);
  ASSERT_NE(world, nullptr);
  for (int r = 0; r < 4; ++r) {
    if (r == kFaulty) continue;
    expect_in_world_allreduce(pages[r]);
    EXPECT_GT(pages[r].operation.sequence, world->collectives) << describe(pages);
    EXPECT_EQ(pages[r].operation.sequence, world->collectives + 1) << describe(pages);
  }
}

// R and its right neighbour P each receive from the other a message nobody sends.
TEST(ProgressPage, DeadlockedPair) {
  constexpr int kFaulty = 3, kPartner = 0;
  const FaultedJob job("deadlock-pair", kFaulty);
  const auto& pages = job.pages;
  ASSERT_EQ(pages.size(), 4u);
  for (const auto& [rank, peer] : {std::pair{kFaulty, kPartner}, std::pair{kPartner, kFaulty}}) {
    const Page& page = pages[rank];
    EXPECT_EQ(page.kind, PARASTACK_RECV) << describe(pages);
    EXPECT_EQ(progress_call_name(page.call), "MPI_Recv") << describe(page);
    EXPECT_EQ(page.operation.kind, PARASTACK_RECV) << describe(page);
    EXPECT_EQ(page.operation.peer, peer) << describe(page);
    EXPECT_EQ(page.operation.tag, kDeadlockTag) << describe(page);
    EXPECT_EQ(page.operation.comm, PARASTACK_COMM_WORLD) << describe(page);
  }
}

// R's receive from the left has the wrong tag: R waits for ever, its left neighbour (whose eager
// send completed) went on into the Allreduce.
TEST(ProgressPage, WrongTag) {
  constexpr int kFaulty = 2, kLeft = 1;
  const FaultedJob job("wrong-tag", kFaulty);
  const auto& pages = job.pages;
  ASSERT_EQ(pages.size(), 4u);
  const Page& faulty = pages[kFaulty];
  EXPECT_EQ(faulty.kind, PARASTACK_WAIT) << describe(pages);
  EXPECT_EQ(progress_call_name(faulty.call), "MPI_Waitall") << describe(faulty);
  EXPECT_TRUE(waits_for(faulty, PARASTACK_RECV, kLeft, kWrongTag)) << describe(faulty);
  // Its eager send to the right was done before the Waitall: listed, it would read as R waiting
  // for a rank that is waiting for R.
  EXPECT_EQ(faulty.wait_total, 1u) << describe(faulty);
  EXPECT_FALSE(waits_for(faulty, PARASTACK_SEND, kFaulty + 1)) << describe(faulty);
  expect_others_in_world_allreduce(pages, {kFaulty});
}

// R waits for a large send that nobody receives (a rendezvous): a send still pending when the wait
// began is listed, unlike an eager one.
TEST(ProgressPage, UnreceivedSend) {
  constexpr int kFaulty = 2, kRight = 3;
  const FaultedJob job("unreceived-send", kFaulty);
  const auto& pages = job.pages;
  ASSERT_EQ(pages.size(), 4u);
  const Page& faulty = pages[kFaulty];
  EXPECT_EQ(faulty.kind, PARASTACK_WAIT) << describe(pages);
  EXPECT_EQ(progress_call_name(faulty.call), "MPI_Wait") << describe(faulty);
  EXPECT_EQ(faulty.wait_total, 1u) << describe(faulty);
  EXPECT_TRUE(waits_for(faulty, PARASTACK_SEND, kRight, kDeadlockTag)) << describe(faulty);
  expect_others_in_world_allreduce(pages, {kFaulty});
}

// R computes for ever outside MPI: its right neighbour waits for its message, the others for it in
// the Allreduce.
TEST(ProgressPage, ComputeHang) {
  constexpr int kFaulty = 1, kRight = 2;
  const FaultedJob job("compute", kFaulty);
  const auto& pages = job.pages;
  ASSERT_EQ(pages.size(), 4u);
  EXPECT_EQ(pages[kFaulty].kind, PARASTACK_OUTSIDE) << describe(pages);
  EXPECT_EQ(pages[kRight].kind, PARASTACK_WAIT) << describe(pages);
  EXPECT_TRUE(waits_for(pages[kRight], PARASTACK_RECV, kFaulty)) << describe(pages[kRight]);
  expect_others_in_world_allreduce(pages, {kFaulty, kRight});
}

// Fortran calls go to PMPI_ directly: the library's Fortran entry points record them.
TEST(ProgressPage, FortranRanks) {
  PreloadedJob job(2, test_program("ps_progress_fortran"), {});
  const auto ranks = job.wait_ready();
  const auto pages = settled_pages(ranks);
  ASSERT_EQ(pages.size(), 2u);
  const Page& receiver = pages[1];
  EXPECT_EQ(receiver.kind, PARASTACK_RECV) << describe(pages);
  EXPECT_EQ(progress_call_name(receiver.call), "MPI_Recv");
  EXPECT_EQ(receiver.operation.peer, 0) << describe(receiver);
  EXPECT_EQ(receiver.operation.tag, 4711) << describe(receiver);
  EXPECT_EQ(receiver.operation.comm, PARASTACK_COMM_WORLD) << describe(receiver);
  const Page& barrier = pages[0];
  EXPECT_EQ(barrier.kind, PARASTACK_COLLECTIVE) << describe(pages);
  EXPECT_EQ(progress_call_name(barrier.call), "MPI_Barrier");
  EXPECT_EQ(barrier.operation.comm, PARASTACK_COMM_WORLD);
  // MPI_Comm_dup (one collective on MPI_COMM_WORLD), then the barrier: the second.
  EXPECT_EQ(barrier.operation.sequence, 2u) << describe(barrier);
  // The copy made by MPI_Comm_dup: one id on both ranks, one collective (the Allreduce) on it.
  const auto copies0 = other_comms(pages[0]), copies1 = other_comms(pages[1]);
  ASSERT_EQ(copies0.size(), 1u) << describe(pages);
  ASSERT_EQ(copies1.size(), 1u) << describe(pages);
  EXPECT_EQ(copies0[0].id, copies1[0].id);
  EXPECT_EQ(copies0[0].collectives, 1u);
  EXPECT_EQ(copies1[0].collectives, 1u);
}

// The library defines MPI_Init too; the sampler must still take Open MPI's library for the MPI
// library (the first file by address that defines MPI_Init: ld.so maps the preloaded library
// above libmpi) and see the library's wrapper frames as the way into it.
TEST(ProgressPage, SamplerStillFindsOpenMpiBesideTheLibrary) {
  constexpr int kFaulty = 1;
  const FaultedJob job("compute", kFaulty);
  const auto& pages = job.pages;
  ASSERT_EQ(pages.size(), 4u);
  sampler::StackSampler stacks;
  for (int r = 0; r < 4; ++r) {
    const auto sample = stacks.sample(os::Pid{job.ranks[r].pid});
    if (r == kFaulty) {
      EXPECT_EQ(sample.state, stats::RankState::OutMpi) << sample.describe();
    } else {
      EXPECT_EQ(sample.state, stats::RankState::InMpi) << sample.describe();
      EXPECT_EQ(sample.mpi_function, progress_call_name(pages[r].call)) << sample.describe() << describe(pages[r]);
    }
  }
}

// MPI_THREAD_MULTIPLE: two threads in MPI calls at once, on two communicators; the job runs to its
// end as it does without the library.
TEST(ProgressPage, ThreadMultipleJobRuns) {
  testing::TempDir scratch;
  const auto out = (scratch.path() / "stdout").string();
  auto environment = testing::mpi_test_environment();
  ChildProcess job({"mpirun", "--oversubscribe", "-np", "3", "-x", "LD_PRELOAD=" + kLibrary, test_program("ps_solver"),
                    "hybrid", "2", "2"},
                   testing::ChildOptions{environment, out, "", ""});
  EXPECT_EQ(job.wait_exit(120s), 0);
  EXPECT_NE(testing::read_file(out).find("iterations"), std::string::npos) << testing::read_file(out);
}

TEST(ProgressPage, RankWithoutTheLibraryHasNone) {
  PreloadedJob job(2, test_program("ps_progress"), {}, /*preload=*/false);
  const auto ranks = job.wait_ready();
  std::string problem;
  EXPECT_FALSE(read_progress_page(os::Pid{ranks[0].pid}, problem));
  EXPECT_EQ(problem, "no progress library in the rank");
}

// The counts the sampler reads with every sample (sampler::ProgressCounters): ranks polling in vain
// (ps_target testpoll: an MPI_Test loop for a message the last rank never sends) show their polls
// and no completed call; the last rank, computing, neither; a rank without the library nothing.
TEST(ProgressPage, EverySampleReadsTheCountsOfCompletedCallsAndVainPolls) {
  PreloadedJob job(3, test_program("ps_target"), {"testpoll", "compute"});
  const auto ranks = job.wait_ready();
  sampler::ProgressCounters counters;
  std::vector<os::ProcessIdentity> identities;
  for (const auto& r : ranks) {
    const auto identity = os::identify(os::Pid{r.pid});
    ASSERT_TRUE(identity.has_value()) << "rank " << r.rank;
    identities.push_back(*identity);
  }
  // The first read of a rank has nothing to compare its polls with.
  for (const auto& identity : identities) {
    const auto first = counters.read(identity);
    ASSERT_TRUE(first.has_value()) << "pid " << identity.pid.value;
    EXPECT_FALSE(first->polled);
  }
  // A poller polls every few microseconds: the condition is awaited by reading, with a deadline.
  for (int poller : {0, 1}) {
    std::optional<sampler::ProgressCounters::Counts> before = counters.read(identities[poller]), now;
    ASSERT_TRUE(before.has_value());
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    do now = counters.read(identities[poller]);
    while (now && !now->polled && std::chrono::steady_clock::now() < deadline);
    ASSERT_TRUE(now.has_value());
    EXPECT_TRUE(now->polled) << "rank " << poller;
    EXPECT_EQ(now->completed, before->completed) << "rank " << poller << ": its test never succeeds";
  }
  const auto computing = counters.read(identities[2]);
  ASSERT_TRUE(computing.has_value());
  const auto again = counters.read(identities[2]);
  ASSERT_TRUE(again.has_value());
  EXPECT_FALSE(again->polled);
  EXPECT_EQ(again->completed, computing->completed);

  PreloadedJob plain(2, test_program("ps_progress"), {}, /*preload=*/false);
  const auto plain_ranks = plain.wait_ready();
  const auto identity = os::identify(os::Pid{plain_ranks[0].pid});
  ASSERT_TRUE(identity.has_value());
  EXPECT_FALSE(counters.read(*identity).has_value());
}

TEST(ProgressPage, ProcessGoneIsSaid) {
  std::string problem;
  pid_t gone = 0;
  {
    ChildProcess child({"/bin/true"});
    ASSERT_EQ(child.wait_exit(30s), 0);
    gone = child.pid();
  }
  EXPECT_FALSE(read_progress_page(os::Pid{gone}, problem));
  EXPECT_EQ(problem, "the rank is gone");
}

// The library also ends up in processes without MPI (a shell, mpirun itself): it must load
// silently, with lazy and with immediate binding, and change nothing.
TEST(ProgressPage, LibraryIsQuietOutsideMpi) {
  testing::TempDir scratch;
  for (const char* binding : {"LD_BIND_NOW=", "LD_BIND_NOW=1"}) {
    const auto err = (scratch.path() / "stderr").string();
    ChildProcess child({"/bin/true"}, testing::ChildOptions{{"LD_PRELOAD=" + kLibrary, binding}, "", err, ""});
    EXPECT_EQ(child.wait_exit(30s), 0) << binding;
    EXPECT_EQ(testing::read_file(err), "") << binding;
  }
  // mpirun, its daemons and the ranks, all with the library: the job runs as without it.
  for (const char* binding : {"LD_BIND_NOW=", "LD_BIND_NOW=1"}) {
    const auto out = (scratch.path() / "stdout").string(), err = (scratch.path() / "stderr").string();
    auto environment = testing::mpi_test_environment();
    environment.insert(environment.end(), {"LD_PRELOAD=" + kLibrary, binding});
    ChildProcess job({"mpirun", "--oversubscribe", "-np", "2", test_program("ps_progress"), "--iterations", "20"},
                     testing::ChildOptions{environment, out, err, ""});
    EXPECT_EQ(job.wait_exit(120s), 0) << binding << ": " << testing::read_file(err);
    EXPECT_NE(testing::read_file(out).find("iterations 20"), std::string::npos) << testing::read_file(out);
  }
}

}  // namespace
}  // namespace parastack
