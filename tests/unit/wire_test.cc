// The monitors' wire protocol (network/monitors.h, wire.h): every request and reply round-trips
// through serve_request and its decoder, and a truncated, lengthened or corrupt message is refused
// with WireError, never read as something else. The node side is a FixedNodeWorker: a stand-in
// holding fixed ranks, since this tests the bytes, not sampling (the mpi and network suites run the
// real LiveNodeWorker).
#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "network/monitors.h"
#include "network/wire.h"

namespace parastack::network {
namespace {

class FixedNodeWorker final : public node::NodeWorker {
 public:
  FixedNodeWorker() {
    table_ = {{0, 3, 100, "node-a", "instance-1", "./solver"},
              {2, 3, 102, "node-a", "instance-1", "./solver"},
              {0, 1, 200, "node-a", "instance-2", "./post"}};
  }
  std::vector<node::NodeRank> discover(const std::vector<std::string>& launches) override {
    launches_seen = launches;
    return table_;
  }
  void adopt(const std::string& instance) override {
    adopted = instance;
    ranks_.clear();
    for (const auto& r : table_) {
      if (r.instance == instance) ranks_.push_back(r);
    }
  }
  const std::vector<node::NodeRank>& ranks() const override { return ranks_; }
  std::vector<stats::RankSnapshot> snapshot(const std::vector<int>& local) override {
    std::vector<stats::RankSnapshot> out;
    for (int l : local) {
      out.push_back(l == 0 ? stats::RankSnapshot{.state = stats::RankState::InMpi,
                                                 .mpi_function = "MPI_Allreduce",
                                                 .path = 0xabcdef0123456789,
                                                 .mpi_completed = std::uint64_t{1} << 50,
                                                 .mpi_polled = true,
                                                 .at_work_outside = true,
                                                 .mpi_thread_path = 0x5151515151515151}
                           : stats::RankSnapshot{.state = stats::RankState::OutMpi,
                                                 .mpi_function = "",
                                                 .path = 42,
                                                 .enclosing = {0x1234567890abcdef, 7, 0x77}});
    }
    return out;
  }
  std::vector<stats::RankState> all_states() override { return {stats::RankState::InMpi, stats::RankState::Unknown}; }
  std::vector<std::optional<stats::WorkCounters>> work_counters() override {
    return {stats::WorkCounters{std::uint64_t{1} << 40, 7'000'000'000, 123'456'789'012, 98'765'432'109,
                                std::uint64_t{1} << 45},
            std::nullopt};
  }
  std::vector<node::HeldRank> held_ranks(double within_seconds) override {
    held_window = within_seconds;
    return {{1, 4242, false}, {0, 0, true}, {2, 0, false, true}};
  }
  diagnosis::PrefixTree gather_stacks(std::vector<node::RankRecord>& records) override {
    records = {
        {0, 100, "node-a", "IN_MPI", "MPI_Allreduce", {"main", "solver", "MPI_Allreduce"}, {0x31, 0x8c, 0}, {}, ""},
        {2, 102, "node-a", "OUT_MPI", "", {"main", "solver", "relax"}, {0x31, 0x40, 0x7}, {}, "no progress library"}};
    diagnosis::RankProgress progress;
    progress.rank = 0;
    progress.activity = diagnosis::RankProgress::Activity::Wait;
    progress.call = "MPI_Waitall";
    progress.wait_total = 3;
    progress.waits = {{diagnosis::WaitOperation::Kind::Receive, 3, 7, 1, 0},
                      {diagnosis::WaitOperation::Kind::Collective, -3, -1, 0x77, 12}};
    progress.comms = {{1, 4, 0, 11}, {0x77, 2, 1, 12}};
    progress.completed = 1000;
    progress.polls = 5;
    progress.entries = 1006;
    records[0].progress = progress;
    diagnosis::PrefixTree tree;
    const diagnosis::StackTrace waiting{{"main", "solver", "", false}, {"MPI_Allreduce", "libmpi.so", "", true}};
    const diagnosis::StackTrace computing{{"main", "solver", "", false}, {"relax", "solver", "", false}};
    tree.add(waiting, 0);
    tree.add(computing, 2);
    return tree;
  }
  void signal(int s) override { signalled = s; }
  bool ranks_alive() override { return true; }
  std::uint64_t samples_taken() const override { return 17; }

  std::vector<std::string> launches_seen;
  std::string adopted;
  int signalled = 0;
  double held_window = 0;

 private:
  std::vector<node::NodeRank> table_, ranks_;
};

// Every request a leader sends, and its decoder checked on the reply.
struct Exchange {
  std::string name;
  std::string request;
  std::function<void(std::string_view)> decode;
};

std::vector<Exchange> every_exchange() {
  return {{"discover", discover_request({"mpirun-1"}), [](auto r) { decode_discovery(r); }},
          {"snapshot", snapshot_request({0, 1}), [](auto r) { decode_snapshots(r); }},
          {"all states", plain_request(Request::AllStates), [](auto r) { decode_states(r); }},
          {"work counters", plain_request(Request::WorkCounters), [](auto r) { decode_work_counters(r); }},
          {"held ranks", held_ranks_request(2.5), [](auto r) { decode_held(r); }},
          {"gather stacks", plain_request(Request::GatherStacks), [](auto r) { decode_stacks(r); }},
          {"usage", plain_request(Request::Usage), [](auto r) { decode_usage(r); }}};
}

TEST(Wire, ARankTableRoundTrips) {
  FixedNodeWorker worker;
  const auto entries = decode_discovery(serve_request(worker, 5, discover_request({"mpirun-1", "mpirun-2"})));
  EXPECT_EQ(worker.launches_seen, (std::vector<std::string>{"mpirun-1", "mpirun-2"}));
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[1].monitor, 5);
  EXPECT_EQ(entries[1].rank.rank, 2);
  EXPECT_EQ(entries[1].rank.world_size, 3);
  EXPECT_EQ(entries[1].rank.pid, 102);
  EXPECT_EQ(entries[1].rank.host, "node-a");
  EXPECT_EQ(entries[1].rank.instance, "instance-1");
  EXPECT_EQ(entries[1].rank.command, "./solver");
  EXPECT_EQ(entries[2].rank.instance, "instance-2");
  EXPECT_EQ(entries[2].rank.command, "./post");
}

TEST(Wire, TheTablesOfSeveralMonitorsCombineIntoOne) {
  FixedNodeWorker worker;
  const auto combined = combine_replies(Request::Discover, {serve_request(worker, 0, discover_request({})),
                                                            serve_request(worker, 1, discover_request({}))});
  const auto entries = decode_discovery(combined);
  ASSERT_EQ(entries.size(), 6u);
  EXPECT_EQ(entries[0].monitor, 0);
  EXPECT_EQ(entries[5].monitor, 1);
  EXPECT_EQ(entries[5].rank.pid, 200);
}

// A reader keeps a view of its message: built on a temporary (a reply straight from serve_request)
// it read freed memory (AddressSanitizer, in the test below); that no longer compiles.
static_assert(!std::is_constructible_v<WireReader, std::string>);
static_assert(std::is_constructible_v<WireReader, const std::string&>);

TEST(Wire, SnapshotsStatesAndIoCountsRoundTrip) {
  FixedNodeWorker worker;
  const std::string adopt_reply = serve_request(worker, 0, adopt_request("instance-1"));
  WireReader adopted(adopt_reply);
  EXPECT_EQ(adopted.u32(), 2u);  // the reply: how many ranks of it this monitor holds
  EXPECT_EQ(worker.adopted, "instance-1");
  const auto snapshots = decode_snapshots(serve_request(worker, 0, snapshot_request({1, 0})));
  ASSERT_EQ(snapshots.size(), 2u);
  EXPECT_EQ(snapshots[0].state, stats::RankState::OutMpi);
  EXPECT_EQ(snapshots[0].path, 42u);
  EXPECT_EQ(snapshots[0].enclosing, (stats::EnclosingPlaces{0x1234567890abcdef, 7, 0x77}));
  EXPECT_EQ(snapshots[1].enclosing, (stats::EnclosingPlaces{}));
  EXPECT_FALSE(snapshots[0].mpi_completed.has_value());
  EXPECT_EQ(snapshots[1].state, stats::RankState::InMpi);
  EXPECT_EQ(snapshots[1].mpi_function, "MPI_Allreduce");
  EXPECT_EQ(snapshots[1].path, 0xabcdef0123456789u);
  EXPECT_EQ(snapshots[1].mpi_completed, std::uint64_t{1} << 50);
  EXPECT_TRUE(snapshots[1].mpi_polled);
  EXPECT_FALSE(snapshots[0].mpi_polled);
  EXPECT_TRUE(snapshots[1].at_work_outside);
  EXPECT_FALSE(snapshots[0].at_work_outside);
  EXPECT_EQ(snapshots[1].mpi_thread_path, 0x5151515151515151u);
  EXPECT_EQ(snapshots[0].mpi_thread_path, 0u);
  // The first snapshot's progress flags lie after the count (4), state (1), empty call (4), path
  // (8), enclosing places (24) and its MPI thread's path (8): unknown flag bits, or a count's bytes
  // without its flag, are refused, not read as a count.
  const std::string reply = serve_request(worker, 0, snapshot_request({1, 0}));
  ASSERT_EQ(reply[49], '\0');
  std::string bad = reply;
  bad[49] = 8;
  EXPECT_THROW(decode_snapshots(bad), WireError);
  bad = reply;
  bad[50] = 1;
  EXPECT_THROW(decode_snapshots(bad), WireError);

  EXPECT_EQ(decode_states(serve_request(worker, 0, plain_request(Request::AllStates))),
            (std::vector<stats::RankState>{stats::RankState::InMpi, stats::RankState::Unknown}));
  const auto work = decode_work_counters(serve_request(worker, 0, plain_request(Request::WorkCounters)));
  ASSERT_EQ(work.size(), 2u);
  ASSERT_TRUE(work[0].has_value());
  EXPECT_EQ(work[0]->io_bytes, std::uint64_t{1} << 40);
  EXPECT_EQ(work[0]->resident_bytes, 7'000'000'000u);
  EXPECT_EQ(work[0]->cpu_ns, 123'456'789'012u);
  EXPECT_EQ(work[0]->run_delay_ns, 98'765'432'109u);
  EXPECT_EQ(work[0]->age_ns, std::uint64_t{1} << 45);
  EXPECT_FALSE(work[1].has_value());
  const auto held = decode_held(serve_request(worker, 0, held_ranks_request(12.75)));
  EXPECT_EQ(worker.held_window, 12.75);  // the window of the alarm's evidence reaches the node
  ASSERT_EQ(held.size(), 3u);
  EXPECT_EQ(held[0].local, 1);
  EXPECT_EQ(held[0].tracer, 4242);
  EXPECT_FALSE(held[0].stopped);
  EXPECT_FALSE(held[0].in_kernel);
  EXPECT_EQ(held[1].local, 0);
  EXPECT_EQ(held[1].tracer, 0);
  EXPECT_TRUE(held[1].stopped);
  EXPECT_FALSE(held[1].in_kernel);
  EXPECT_EQ(held[2].local, 2);
  EXPECT_FALSE(held[2].stopped);
  EXPECT_TRUE(held[2].in_kernel);
  EXPECT_EQ(decode_usage(serve_request(worker, 0, plain_request(Request::Usage))).samples, 17u);
  serve_request(worker, 0, signal_request(15));
  EXPECT_EQ(worker.signalled, 15);
}

TEST(Wire, StacksRoundTripAndMergeAcrossMonitors) {
  FixedNodeWorker worker;
  const auto one = serve_request(worker, 0, plain_request(Request::GatherStacks));
  std::vector<node::RankRecord> records;
  const auto tree = worker.gather_stacks(records);
  const auto decoded = decode_stacks(one);
  EXPECT_TRUE(decoded.tree == tree);
  ASSERT_EQ(decoded.records.size(), 2u);
  EXPECT_EQ(decoded.records[1].state, "OUT_MPI");
  EXPECT_EQ(decoded.records[0].mpi_function, "MPI_Allreduce");
  EXPECT_EQ(decoded.records[1].path, records[1].path);
  EXPECT_EQ(decoded.records[1].call_sites, records[1].call_sites);
  EXPECT_EQ(decoded.records[1].progress_problem, "no progress library");
  EXPECT_FALSE(decoded.records[1].progress);
  ASSERT_TRUE(decoded.records[0].progress);
  const auto& p = *decoded.records[0].progress;
  EXPECT_EQ(diagnosis::describe(p), diagnosis::describe(*records[0].progress));
  EXPECT_EQ(p.waits.size(), 2u);
  EXPECT_EQ(p.waits[1].sequence, 12u);
  ASSERT_EQ(p.comms.size(), 2u);
  EXPECT_EQ(p.comms[1].id, 0x77u);
  EXPECT_EQ(p.comms[1].collectives, 12u);
  EXPECT_EQ(p.completed, 1000u);
  EXPECT_EQ(p.polls, 5u);
  EXPECT_EQ(p.entries, 1006u);

  const auto merged = decode_stacks(combine_replies(Request::GatherStacks, {one, one}));
  EXPECT_EQ(merged.records.size(), 4u);
  EXPECT_EQ(merged.tree.node_count(), tree.node_count());  // the same paths: no new node
}

TEST(Wire, EveryTruncatedReplyIsRefused) {
  FixedNodeWorker worker;
  serve_request(worker, 0, adopt_request("instance-1"));
  for (const auto& exchange : every_exchange()) {
    const std::string reply = serve_request(worker, 0, exchange.request);
    ASSERT_NO_THROW(exchange.decode(reply)) << exchange.name;
    for (std::size_t length = 0; length < reply.size(); ++length) {
      EXPECT_THROW(exchange.decode(std::string_view(reply).substr(0, length)), WireError)
          << exchange.name << ": " << length << " of " << reply.size() << " bytes";
    }
    EXPECT_THROW(exchange.decode(reply + '\0'), WireError) << exchange.name << ": one byte too many";
  }
}

TEST(Wire, EveryTruncatedOrLengthenedRequestIsRefused) {
  FixedNodeWorker worker;
  serve_request(worker, 0, adopt_request("instance-1"));
  auto requests = every_exchange();
  requests.push_back({"adopt", adopt_request("instance-1"), nullptr});
  requests.push_back({"signal", signal_request(15), nullptr});
  for (const auto& exchange : requests) {
    for (std::size_t length = 0; length < exchange.request.size(); ++length) {
      EXPECT_THROW(serve_request(worker, 0, std::string_view(exchange.request).substr(0, length)), WireError)
          << exchange.name << ": " << length << " of " << exchange.request.size() << " bytes";
    }
    EXPECT_THROW(serve_request(worker, 0, exchange.request + '\0'), WireError) << exchange.name;
  }
}

TEST(Wire, CorruptMessagesAreRefusedBeforeAnythingIsAllocatedForThem) {
  FixedNodeWorker worker;
  serve_request(worker, 0, adopt_request("instance-1"));
  EXPECT_THROW(serve_request(worker, 0, std::string(1, static_cast<char>(99))), WireError);  // no such request
  EXPECT_THROW(serve_request(worker, 0, snapshot_request({7})), WireError);                  // no such rank here
  // A count of four billion snapshots in a few bytes: refused, not allocated (it would be 190 GB).
  WireWriter huge;
  huge.u32(0xffffffffu).u8(0);
  EXPECT_THROW(decode_snapshots(huge.bytes()), WireError);
  EXPECT_THROW(decode_states(huge.bytes()), WireError);
  EXPECT_THROW(decode_work_counters(huge.bytes()), WireError);
  // A rank state that does not exist.
  WireWriter state;
  state.u32(1).u8(7);
  EXPECT_THROW(decode_states(state.bytes()), WireError);
  // A rank naming a program its block does not list.
  WireWriter table;
  table.u32(1).i32(0).str("node-a").u32(0).u32(1).i32(0).i32(1).i32(100).u16(0);
  EXPECT_THROW(decode_discovery(table.bytes()), WireError);
  // A stack tree that does not decode.
  WireWriter stacks;
  stacks.str("not a tree").u32(0);
  EXPECT_THROW(decode_stacks(stacks.bytes()), WireError);
}

}  // namespace
}  // namespace parastack::network
