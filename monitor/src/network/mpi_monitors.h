// The monitors as one Open MPI program (`parastack-monitor`, one process per node): rank 0 is the
// leader and also its node's monitor; every other rank serves requests in serve().
//
// Nobody ever waits in a blocking MPI call: Open MPI's blocking calls poll at 100% of a core, which
// would be stolen from the application. An idle monitor sleeps and tests for a request with
// MPI_Improbe (kIdleSleep apart); a busy one polls with short sleeps. Reductions (rank table, stack
// trees) run up a binomial tree of monitors: each parent combines its children's replies with its
// own (combine_replies) and sends one message up, so the leader receives log2(P) messages, never
// one per rank or per monitor.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "network/monitors.h"

namespace parastack::network {

// Between two looks for a request, an idle monitor sleeps this long.
inline constexpr auto kIdleSleep = std::chrono::milliseconds(20);

// Every monitor's host name, index by monitor (collective: all monitors call it once at start).
std::vector<std::string> gather_hosts();

// The leader's side (monitor 0).
class MpiMonitors final : public Monitors {
 public:
  // timeout: how long a monitor may take to answer before its node counts as lost.
  MpiMonitors(node::NodeWorker& own, std::vector<std::string> hosts, std::chrono::duration<double> timeout);
  int count() const override { return static_cast<int>(hosts_.size()); }
  const std::string& host(int monitor) const override { return hosts_.at(static_cast<std::size_t>(monitor)); }
  using Monitors::call;
  std::vector<std::string> call(const std::vector<std::pair<int, std::string>>& requests) override;
  std::string reduce(const std::string& request) override;
  std::vector<int> finished() override;
  void release() override;

 private:
  node::NodeWorker& own_;
  std::vector<std::string> hosts_;
  std::chrono::duration<double> timeout_;
  bool released_ = false;
  bool own_notice_due_ = false;  // the leader's node's ranks adopted and not yet ended
  std::chrono::steady_clock::time_point next_own_check_;
};

// Every other monitor: answers requests until the leader releases it.
void serve(node::NodeWorker& worker);

}  // namespace parastack::network
