// The leader's handle on the monitors: one per node, the leader's own node included. A request is
// a byte string (a Request code, then its arguments); every monitor answers it with its NodeWorker
// through serve_request(), whatever carries the bytes. SoloMonitors is one monitor in this
// process (`parastack run`); MpiMonitors (mpi_monitors.h) is the same requests over Open MPI.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "node/node_worker.h"
#include "parastack/diagnosis/prefix_tree.h"
#include "parastack/stats/verification.h"

namespace parastack::network {

enum class Request : std::uint8_t {
  Discover = 1,  // reduced: every monitor's ranks of programs not adopted yet
  Adopt,         // string instance
  Snapshot,      // u32 n, n x i32 local index -> n snapshots
  AllStates,     // -> one state per rank of the monitor
  WorkCounters,  // -> one optional stats::WorkCounters per rank of the monitor (I/O, memory, CPU, age)
  GatherStacks,  // reduced: merged prefix tree and every rank's record
  Signal,        // i32 signal, to every rank of the monitor
  Usage,         // -> the monitor's CPU seconds, wall seconds alive, samples taken
  Exit,          // the monitor leaves its loop
  HeldRanks,     // (window s) -> the monitor's ranks held now or in the window: local index and tracer pid
};

// A monitor did not answer in time, or died: its node is no longer watched.
struct MonitorLost : std::runtime_error {
  MonitorLost(int monitor_index, const std::string& what) : std::runtime_error(what), monitor(monitor_index) {}
  int monitor;
};

// Runs one request on this monitor; the reply. `self` is this monitor's index.
std::string serve_request(node::NodeWorker& worker, int self, std::string_view request);
// Combines the replies of a reduced request (own first, then children's) into one reply: rank tables
// are concatenated, prefix trees merged (STAT's filter), records concatenated.
std::string combine_replies(Request request, std::vector<std::string> replies);

class Monitors {
 public:
  virtual ~Monitors() = default;
  virtual int count() const = 0;
  virtual const std::string& host(int monitor) const = 0;
  // Each (monitor, request) runs on its monitor, all at once; the replies, in the same order.
  // Throws MonitorLost.
  virtual std::vector<std::string> call(const std::vector<std::pair<int, std::string>>& requests) = 0;
  std::vector<std::string> call(const std::vector<int>& monitors, const std::string& request) {
    std::vector<std::pair<int, std::string>> requests;
    for (int m : monitors) requests.emplace_back(m, request);
    return call(requests);
  }
  // Every monitor runs the request; replies are combined up a tree of monitors, never one message
  // per rank or per monitor to the leader. Throws MonitorLost.
  virtual std::string reduce(const std::string& request) = 0;
  // Monitors that said, unasked, that their ranks have all ended (each said once per adoption).
  virtual std::vector<int> finished() = 0;
  // Tells every monitor to leave (before the leader returns).
  virtual void release() = 0;
};

// One monitor, in this process: `parastack run`.
class SoloMonitors final : public Monitors {
 public:
  SoloMonitors(node::NodeWorker& worker, std::string host);
  int count() const override { return 1; }
  const std::string& host(int) const override { return host_; }
  using Monitors::call;
  std::vector<std::string> call(const std::vector<std::pair<int, std::string>>& requests) override;
  std::string reduce(const std::string& request) override;
  std::vector<int> finished() override;
  void release() override {}

 private:
  node::NodeWorker& worker_;
  std::string host_;
  bool said_finished_ = false;
  double next_check_ = 0;
};

// ---- requests and replies ----
std::string adopt_request(const std::string& instance);
std::string snapshot_request(const std::vector<int>& local);
std::string signal_request(int signal);
std::string held_ranks_request(double within_seconds);
inline std::string plain_request(Request r) { return std::string(1, static_cast<char>(r)); }
// Discover, with the Open MPI launches to look for on nodes that cannot see the launcher.
std::string discover_request(const std::vector<std::string>& launches);

struct TableEntry {
  int monitor = 0;
  node::NodeRank rank;
};
std::vector<TableEntry> decode_discovery(std::string_view reply);
std::vector<stats::RankSnapshot> decode_snapshots(std::string_view reply);
std::vector<stats::RankState> decode_states(std::string_view reply);
std::vector<std::optional<stats::WorkCounters>> decode_work_counters(std::string_view reply);
std::vector<node::HeldRank> decode_held(std::string_view reply);
struct GatheredStacks {
  diagnosis::PrefixTree tree;
  std::vector<node::RankRecord> records;
};
GatheredStacks decode_stacks(std::string_view reply);
struct Usage {
  double cpu_seconds = 0, wall_seconds = 0;
  std::uint64_t samples = 0;
};
Usage decode_usage(std::string_view reply);

}  // namespace parastack::network
