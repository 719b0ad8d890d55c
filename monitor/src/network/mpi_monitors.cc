#include "network/mpi_monitors.h"

#include <mpi.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <thread>

#include "network/wire.h"

namespace parastack::network {
namespace {

using Clock = std::chrono::steady_clock;

enum Tag : int { kRequestTag = 7101, kReplyTag = 7102, kReduceTag = 7103, kNoticeTag = 7104 };
// A request's first byte says how to answer it.
enum class Route : std::uint8_t { Direct = 0, Reduce = 1 };
// A reply's first byte: the answer, or the monitor's error in words.
enum class Status : std::uint8_t { Ok = 0, Failed = 1 };

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

// Polls an MPI condition with sleeps growing from 20 us to `longest`: quick answers stay quick, a
// long wait costs almost no CPU. False if the deadline passes first.
template <class Ready>
bool poll_until(Ready ready, std::optional<Clock::time_point> deadline, std::chrono::microseconds longest) {
  std::chrono::microseconds pause(20);
  while (!ready()) {
    if (deadline && Clock::now() > *deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, longest);
  }
  return true;
}

constexpr std::chrono::microseconds kBusyPause(2000);

// A message from `source` (or any) with `tag`, once one has arrived; nullopt at the deadline.
std::optional<std::string> receive(int source, int tag, std::optional<Clock::time_point> deadline, int* from = nullptr,
                                   std::chrono::microseconds longest = kBusyPause) {
  MPI_Message message;
  MPI_Status status;
  int found = 0;
  const bool arrived = poll_until(
      [&] {
        MPI_Improbe(source, tag, MPI_COMM_WORLD, &found, &message, &status);
        return found != 0;
      },
      deadline, longest);
  if (!arrived) return std::nullopt;
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  std::string bytes(static_cast<std::size_t>(count), '\0');
  MPI_Mrecv(bytes.data(), count, MPI_BYTE, &message, &status);
  if (from) *from = status.MPI_SOURCE;
  return bytes;
}

// Starts sending; the caller keeps `bytes` alive until the request completes.
MPI_Request start_send(const std::string& bytes, int destination, int tag) {
  MPI_Request request;
  MPI_Isend(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, destination, tag, MPI_COMM_WORLD, &request);
  return request;
}

bool finish_sends(std::vector<MPI_Request>& requests, std::optional<Clock::time_point> deadline) {
  return poll_until(
      [&] {
        int done = 0;
        MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
        return done != 0;
      },
      deadline, kBusyPause);
}

void send(const std::string& bytes, int destination, int tag) {
  std::vector<MPI_Request> request{start_send(bytes, destination, tag)};
  finish_sends(request, std::nullopt);
}

// The binomial tree over monitors, rooted at the leader.
int lowest_bit(int r) { return r & -r; }
int parent_of(int r) { return r - lowest_bit(r); }
std::vector<int> children_of(int r, int size) {
  std::vector<int> children;
  const int limit = r == 0 ? size : lowest_bit(r);
  for (int step = 1; step < limit && r + step < size; step <<= 1) children.push_back(r + step);
  return children;
}

std::string answer(Status status, const std::string& payload) {
  return std::string(1, static_cast<char>(status)) + payload;
}

// Runs a request here, as an Ok or Failed reply.
std::string serve_safely(node::NodeWorker& worker, int self, std::string_view request) {
  try {
    return answer(Status::Ok, serve_request(worker, self, request));
  } catch (const std::exception& e) {
    return answer(Status::Failed, std::string("monitor ") + std::to_string(self) + ": " + e.what());
  }
}

// One monitor's part in a reduction: pass the request down, answer it here, combine the children's
// answers with its own. A child's failure fails the whole answer (its words travel up).
std::optional<std::string> reduce_here(node::NodeWorker& worker, int self, const std::string& request,
                                       std::optional<Clock::time_point> deadline, int* silent_child) {
  const auto children = children_of(self, world_size());
  const std::string envelope = std::string(1, static_cast<char>(Route::Reduce)) + request;
  std::vector<MPI_Request> sends;
  for (int child : children) sends.push_back(start_send(envelope, child, kRequestTag));
  std::vector<std::string> parts{serve_safely(worker, self, request)};
  for (int child : children) {
    auto part = receive(child, kReduceTag, deadline);
    if (!part) {
      if (silent_child) *silent_child = child;
      return std::nullopt;  // the leader ends monitoring: pending sends die with the monitors
    }
    parts.push_back(std::move(*part));
  }
  finish_sends(sends, deadline);
  for (const auto& part : parts) {
    if (part.empty() || static_cast<Status>(part[0]) != Status::Ok)
      return part.empty() ? answer(Status::Failed, "empty answer") : part;
  }
  std::vector<std::string> payloads;
  for (auto& part : parts) payloads.push_back(part.substr(1));
  try {
    const auto kind = request.empty() ? Request::Exit : static_cast<Request>(request[0]);
    return answer(Status::Ok, combine_replies(kind, std::move(payloads)));
  } catch (const std::exception& e) {
    return answer(Status::Failed, std::string("monitor ") + std::to_string(self) + ": " + e.what());
  }
}

std::string payload_or_throw(const std::string& reply) {
  if (reply.empty()) throw std::runtime_error("empty answer from a monitor");
  if (static_cast<Status>(reply[0]) != Status::Ok) throw std::runtime_error(reply.substr(1));
  return reply.substr(1);
}

}  // namespace

std::vector<std::string> gather_hosts() {
  constexpr int kWidth = 256;
  char mine[kWidth] = {};
  ::gethostname(mine, kWidth - 1);
  std::vector<char> all(static_cast<std::size_t>(kWidth * world_size()));
  MPI_Allgather(mine, kWidth, MPI_CHAR, all.data(), kWidth, MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> hosts;
  for (int m = 0; m < world_size(); ++m) hosts.emplace_back(all.data() + m * kWidth);
  return hosts;
}

MpiMonitors::MpiMonitors(node::NodeWorker& own, std::vector<std::string> hosts, std::chrono::duration<double> timeout)
    : own_(own), hosts_(std::move(hosts)), timeout_(timeout) {}

std::vector<std::string> MpiMonitors::call(const std::vector<std::pair<int, std::string>>& requests) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout_);
  std::vector<std::string> envelopes;
  envelopes.reserve(requests.size());
  std::vector<MPI_Request> sends;
  for (const auto& [monitor, request] : requests) {
    envelopes.push_back(std::string(1, static_cast<char>(Route::Direct)) + request);
    if (monitor != 0) sends.push_back(start_send(envelopes.back(), monitor, kRequestTag));
  }
  std::vector<std::string> replies(requests.size());
  // Our own node first, while the others work on theirs.
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].first == 0) replies[i] = serve_safely(own_, 0, requests[i].second);
  }
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const int monitor = requests[i].first;
    if (monitor == 0) continue;
    auto reply = receive(monitor, kReplyTag, deadline);
    if (!reply) {
      throw MonitorLost(monitor, "monitor " + std::to_string(monitor) + " on " + host(monitor) +
                                     " did not answer within " + std::to_string(static_cast<int>(timeout_.count())) +
                                     " s");
    }
    replies[i] = std::move(*reply);
  }
  if (!finish_sends(sends, deadline)) throw MonitorLost(requests.front().first, "a monitor does not take requests");
  for (auto& reply : replies) reply = payload_or_throw(reply);
  for (const auto& [monitor, request] : requests) {
    if (monitor == 0 && !request.empty() && static_cast<Request>(request[0]) == Request::Adopt) {
      own_notice_due_ = !own_.ranks().empty();
    }
  }
  return replies;
}

std::string MpiMonitors::reduce(const std::string& request) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout_);
  int silent = -1;
  auto result = reduce_here(own_, 0, request, deadline, &silent);
  if (!result) {
    throw MonitorLost(silent, "monitor " + std::to_string(silent) + " on " + host(silent) +
                                  " (or one below it in the tree of monitors) did not answer within " +
                                  std::to_string(static_cast<int>(timeout_.count())) + " s");
  }
  return payload_or_throw(*result);
}

std::vector<int> MpiMonitors::finished() {
  std::vector<int> monitors;
  // The leader's own node, looked at once a second like every other monitor's.
  if (own_notice_due_ && Clock::now() >= next_own_check_) {
    next_own_check_ = Clock::now() + std::chrono::seconds(1);
    if (!own_.ranks_alive()) {
      own_notice_due_ = false;
      monitors.push_back(0);
    }
  }
  int from = -1;
  while (auto notice = receive(MPI_ANY_SOURCE, kNoticeTag, Clock::now(), &from)) monitors.push_back(from);
  return monitors;
}

void MpiMonitors::release() {
  if (released_) return;
  released_ = true;
  std::vector<int> others;
  for (int m = 1; m < count(); ++m) others.push_back(m);
  try {
    call(others, plain_request(Request::Exit));
  } catch (const std::exception& e) {
    spdlog::warn("not every monitor acknowledged the end of monitoring: {}", e.what());
  }
}

void serve(node::NodeWorker& worker) {
  const int self = world_rank();
  bool notice_due = false;  // ranks adopted and not yet said to have ended
  auto next_check = Clock::now();
  while (true) {
    int from = -1;
    // Idle: one non-blocking probe, then sleep. Never a blocking receive (it would spin a core).
    auto envelope = receive(MPI_ANY_SOURCE, kRequestTag, Clock::now(), &from);
    if (!envelope) {
      if (notice_due && Clock::now() >= next_check) {
        next_check = Clock::now() + std::chrono::seconds(1);
        if (!worker.ranks_alive()) {
          notice_due = false;
          send(std::string(), 0, kNoticeTag);
        }
      }
      std::this_thread::sleep_for(kIdleSleep);
      continue;
    }
    if (envelope->empty()) continue;
    const auto route = static_cast<Route>((*envelope)[0]);
    const std::string request = envelope->substr(1);
    const auto kind = request.empty() ? Request::Exit : static_cast<Request>(request[0]);
    if (route == Route::Reduce) {
      // Children that never answer leave this monitor waiting; the leader gives up on the whole
      // subtree at its own deadline and ends monitoring, which ends this process too.
      auto result = reduce_here(worker, self, request, std::nullopt, nullptr);
      send(*result, parent_of(self), kReduceTag);
    } else {
      send(serve_safely(worker, self, request), from, kReplyTag);
    }
    if (kind == Request::Adopt) notice_due = !worker.ranks().empty();
    if (kind == Request::Exit) return;
  }
}

}  // namespace parastack::network
