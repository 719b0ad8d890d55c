// The monitors' messages (network/monitors.h, wire.h) as a broken or hostile peer could send them.
// The first byte picks the decoder (0 discovery, 1 snapshots, 2 states, 3 work counters, 4 stacks, 5 usage) or
// serve_request (6: a request to a monitor). A message is refused with WireError only; one that is
// accepted, encoded again by serve_request (the monitors' own encoder) and decoded, is the same.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "network/monitors.h"
#include "network/wire.h"

namespace {

using namespace parastack;
using namespace parastack::network;

// A node worker that answers with what it is given: serve_request is then an encoder.
class ReplayWorker final : public node::NodeWorker {
 public:
  std::vector<node::NodeRank> discover(const std::vector<std::string>&) override { return table; }
  void adopt(const std::string&) override {}
  const std::vector<node::NodeRank>& ranks() const override { return table; }
  std::vector<stats::RankSnapshot> snapshot(const std::vector<int>& local) override {
    std::vector<stats::RankSnapshot> out;
    for (int l : local) out.push_back(snapshots.at(static_cast<std::size_t>(l)));
    return out;
  }
  std::vector<stats::RankState> all_states() override { return states; }
  std::vector<std::optional<stats::WorkCounters>> work_counters() override { return work; }
  std::vector<node::HeldRank> held_ranks(double) override { return held; }
  diagnosis::PrefixTree gather_stacks(std::vector<node::RankRecord>& out) override {
    out = records;
    return tree;
  }
  void signal(int) override {}
  bool ranks_alive() override { return true; }
  std::uint64_t samples_taken() const override { return 3; }

  std::vector<node::NodeRank> table;
  std::vector<stats::RankSnapshot> snapshots;
  std::vector<stats::RankState> states;
  std::vector<std::optional<stats::WorkCounters>> work;
  std::vector<node::HeldRank> held;
  diagnosis::PrefixTree tree;
  std::vector<node::RankRecord> records;
};

bool same_rank(const node::NodeRank& a, const node::NodeRank& b) {
  return a.rank == b.rank && a.world_size == b.world_size && a.pid == b.pid && a.host == b.host &&
         a.instance == b.instance && a.command == b.command;
}

bool same_record(const node::RankRecord& a, const node::RankRecord& b) {
  return a.rank == b.rank && a.pid == b.pid && a.host == b.host && a.state == b.state &&
         a.mpi_function == b.mpi_function;
}

void check_discovery(std::string_view reply) {
  const auto entries = decode_discovery(reply);
  // One monitor's block per run of entries from the same monitor and host, encoded by that
  // monitor's serve_request and combined as the tree of monitors combines them.
  std::vector<std::string> blocks;
  for (std::size_t i = 0; i < entries.size();) {
    ReplayWorker worker;
    std::size_t j = i;
    while (j < entries.size() && entries[j].monitor == entries[i].monitor &&
           entries[j].rank.host == entries[i].rank.host) {
      worker.table.push_back(entries[j++].rank);
    }
    blocks.push_back(serve_request(worker, entries[i].monitor, discover_request({})));
    i = j;
  }
  if (blocks.empty()) return;
  const auto again = decode_discovery(combine_replies(Request::Discover, blocks));
  FUZZ_REQUIRE(again.size() == entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    FUZZ_REQUIRE(again[i].monitor == entries[i].monitor && same_rank(again[i].rank, entries[i].rank));
  }
}

void check_snapshots(std::string_view reply) {
  ReplayWorker worker;
  worker.snapshots = decode_snapshots(reply);
  worker.table.resize(worker.snapshots.size());
  std::vector<int> all;
  for (std::size_t i = 0; i < worker.snapshots.size(); ++i) all.push_back(static_cast<int>(i));
  // Every field is written back as it was read: the same bytes.
  FUZZ_REQUIRE(serve_request(worker, 0, snapshot_request(all)) == reply);
}

void check_states(std::string_view reply) {
  ReplayWorker worker;
  worker.states = decode_states(reply);
  FUZZ_REQUIRE(serve_request(worker, 0, plain_request(Request::AllStates)) == reply);
}

void check_work(std::string_view reply) {
  ReplayWorker worker;
  worker.work = decode_work_counters(reply);
  // An unknown rank's counts are not kept, so compare values, not bytes.
  FUZZ_REQUIRE(decode_work_counters(serve_request(worker, 0, plain_request(Request::WorkCounters))) == worker.work);
}

void check_held(std::string_view reply) {
  ReplayWorker worker;
  worker.held = decode_held(reply);
  FUZZ_REQUIRE(serve_request(worker, 0, held_ranks_request(1.5)) == reply);
}

void check_stacks(std::string_view reply) {
  ReplayWorker worker;
  auto gathered = decode_stacks(reply);
  worker.tree = std::move(gathered.tree);
  worker.records = std::move(gathered.records);
  const std::string encoded = serve_request(worker, 0, plain_request(Request::GatherStacks));
  const auto again = decode_stacks(encoded);
  FUZZ_REQUIRE(again.tree == worker.tree);
  FUZZ_REQUIRE(again.records.size() == worker.records.size());
  for (std::size_t i = 0; i < worker.records.size(); ++i)
    FUZZ_REQUIRE(same_record(again.records[i], worker.records[i]));
  // Two monitors' replies merge into one tree holding both monitors' records.
  const auto merged = decode_stacks(combine_replies(Request::GatherStacks, {encoded, encoded}));
  FUZZ_REQUIRE(merged.records.size() == 2 * worker.records.size());
}

void check_usage(std::string_view reply) {
  const Usage usage = decode_usage(reply);
  WireWriter w;
  w.f64(usage.cpu_seconds).f64(usage.wall_seconds).u64(usage.samples);
  FUZZ_REQUIRE(w.bytes() == reply);
}

void check_request(std::string_view request) {
  ReplayWorker worker;
  worker.table = {{0, 2, 100, "node-a", "instance-1", "./solver"}, {1, 2, 101, "node-a", "instance-1", "./solver"}};
  worker.snapshots = {{stats::RankState::InMpi, "MPI_Recv", 7}, {stats::RankState::OutMpi, "", 9}};
  worker.states = {stats::RankState::InMpi, stats::RankState::OutMpi};
  worker.work = {stats::WorkCounters{1, 2}, std::nullopt};
  serve_request(worker, 0, request);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view message(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 8) {
      case 0:
        check_discovery(message);
        break;
      case 1:
        check_snapshots(message);
        break;
      case 2:
        check_states(message);
        break;
      case 3:
        check_work(message);
        break;
      case 4:
        check_stacks(message);
        break;
      case 5:
        check_usage(message);
        break;
      case 7:
        check_held(message);
        break;
      default:
        check_request(message);
        break;
    }
  } catch (const WireError&) {
    // Refused: the only failure a message may cause.
  }
  return 0;
}
