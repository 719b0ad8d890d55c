// Writes the wire fuzzer's seed corpus (corpus/wire_fuzzer/): each reply a real monitor sends,
// made by serve_request (the monitors' own encoder) from a small made-up node, and each request a
// leader sends, every one behind the byte that picks its decoder in wire_fuzzer.cc.
//   make_wire_seeds DIR
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "network/monitors.h"

namespace {

using namespace parastack;
using namespace parastack::network;

class SeedWorker final : public node::NodeWorker {
 public:
  SeedWorker() {
    table_ = {{0, 4, 4101, "node-a", "node-a:4100:0", "./solver"},
              {1, 4, 4102, "node-a", "node-a:4100:0", "./solver"},
              {0, 1, 5200, "node-a", "node-a:5199:0", "./post"}};
  }
  std::vector<node::NodeRank> discover(const std::vector<std::string>&) override { return table_; }
  void adopt(const std::string&) override {}
  const std::vector<node::NodeRank>& ranks() const override { return table_; }
  std::vector<stats::RankSnapshot> snapshot(const std::vector<int>& local) override {
    std::vector<stats::RankSnapshot> out;
    for (int l : local) {
      out.push_back(l == 0 ? stats::RankSnapshot{stats::RankState::InMpi, "MPI_Allreduce", 0x9e3779b97f4a7c15}
                           : stats::RankSnapshot{stats::RankState::OutMpi, "", 0x2dde54dce4adc735});
    }
    return out;
  }
  std::vector<stats::RankState> all_states() override {
    return {stats::RankState::InMpi, stats::RankState::OutMpi, stats::RankState::Unknown};
  }
  std::vector<std::optional<stats::WorkCounters>> work_counters() override {
    return {stats::WorkCounters{6976, 1412, 5'000'000, 7'000'000, 90'000'000'000},
            stats::WorkCounters{std::uint64_t{1} << 33, 0}, std::nullopt};
  }
  std::vector<node::HeldRank> held_ranks(double) override {
    return {{1, 4242, false}, {0, 0, true}, {2, 0, false, true}};
  }
  diagnosis::PrefixTree gather_stacks(std::vector<node::RankRecord>& records) override {
    records = {{0, 4101, "node-a", "IN_MPI", "MPI_Allreduce", {}, {}, {}, {}},
               {1, 4102, "node-a", "OUT_MPI", "", {}, {}, {}, {}}};
    diagnosis::PrefixTree tree;
    const diagnosis::StackTrace waiting{
        {"_start", "solver", "", false}, {"main", "solver", "", false}, {"MPI_Allreduce", "libmpi.so.40", "", true}};
    const diagnosis::StackTrace computing{
        {"_start", "solver", "", false}, {"main", "solver", "", false}, {"relax", "solver", "", false}};
    tree.add(waiting, 0);
    tree.add(computing, 1);
    return tree;
  }
  void signal(int) override {}
  bool ranks_alive() override { return true; }
  std::uint64_t samples_taken() const override { return 1234; }

 private:
  std::vector<node::NodeRank> table_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_wire_seeds DIR\n";
    return 2;
  }
  SeedWorker worker;
  const auto reply = [&](const std::string& request) { return serve_request(worker, 3, request); };
  const std::vector<std::pair<std::string, std::string>> seeds{
      {"discovery", std::string(1, '\0') + combine_replies(Request::Discover, {reply(discover_request({})),
                                                                               reply(discover_request({"x"}))})},
      {"snapshots", std::string(1, '\1') + reply(snapshot_request({0, 1}))},
      {"states", std::string(1, '\2') + reply(plain_request(Request::AllStates))},
      {"work", std::string(1, '\3') + reply(plain_request(Request::WorkCounters))},
      {"stacks", std::string(1, '\4') + reply(plain_request(Request::GatherStacks))},
      {"usage", std::string(1, '\5') + reply(plain_request(Request::Usage))},
      {"request-discover", std::string(1, '\6') + discover_request({"node-a:4100"})},
      {"request-adopt", std::string(1, '\6') + adopt_request("node-a:4100:0")},
      {"request-snapshot", std::string(1, '\6') + snapshot_request({1, 0})},
      {"request-signal", std::string(1, '\6') + signal_request(15)},
      {"request-gather", std::string(1, '\6') + plain_request(Request::GatherStacks)},
      {"held", std::string(1, '\7') + reply(held_ranks_request(2.0))},
      {"request-held", std::string(1, '\6') + held_ranks_request(2.0)},
  };
  for (const auto& [name, bytes] : seeds) {
    std::ofstream out(std::string(argv[1]) + "/" + name, std::ios::binary);
    out << bytes;
    if (!out) {
      std::cerr << "make_wire_seeds: cannot write " << argv[1] << "/" << name << "\n";
      return 1;
    }
  }
  return 0;
}
