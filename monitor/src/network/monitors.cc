#include "network/monitors.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <variant>

#include "network/wire.h"
#include "parastack/diagnosis/serialize.h"

namespace parastack::network {
namespace {

using Clock = std::chrono::steady_clock;
const Clock::time_point kProcessStart = Clock::now();

double seconds_since_start() { return std::chrono::duration<double>(Clock::now() - kProcessStart).count(); }

double process_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void write_state(WireWriter& w, stats::RankState s) { w.u8(static_cast<std::uint8_t>(s)); }

stats::RankState read_state(WireReader& in) {
  const auto v = in.u8();
  if (v > static_cast<std::uint8_t>(stats::RankState::Unknown)) throw WireError("bad rank state");
  return static_cast<stats::RankState>(v);
}

// One wait operation and one rank's progress facts (the progress library's page, converted).
void encode_operation(WireWriter& w, const diagnosis::WaitOperation& op) {
  w.u8(static_cast<std::uint8_t>(op.kind)).i32(op.peer).i32(op.tag).u64(op.comm).u64(op.sequence);
}

diagnosis::WaitOperation decode_operation(WireReader& in) {
  diagnosis::WaitOperation op;
  const auto kind = in.u8();
  if (kind > static_cast<std::uint8_t>(diagnosis::WaitOperation::Kind::Collective))
    throw WireError("bad wait operation");
  op.kind = static_cast<diagnosis::WaitOperation::Kind>(kind);
  op.peer = in.i32();
  op.tag = in.i32();
  op.comm = in.u64();
  op.sequence = in.u64();
  return op;
}

void encode_progress(WireWriter& w, const diagnosis::RankProgress& p) {
  w.u32(p.rank).u8(static_cast<std::uint8_t>(p.activity)).str(p.call);
  encode_operation(w, p.operation);
  w.i32(p.send_peer).u8(p.wait_any ? 1 : 0).u64(p.wait_total).u32(static_cast<std::uint32_t>(p.waits.size()));
  for (const auto& op : p.waits) encode_operation(w, op);
  w.u32(static_cast<std::uint32_t>(p.comms.size()));
  for (const auto& c : p.comms) w.u64(c.id).i32(c.size).i32(c.rank).u64(c.collectives);
  w.u64(p.completed).u64(p.polls).u64(p.entries);
}

diagnosis::RankProgress decode_progress(WireReader& in) {
  diagnosis::RankProgress p;
  p.rank = in.u32();
  const auto activity = in.u8();
  if (activity > static_cast<std::uint8_t>(diagnosis::RankProgress::Activity::Other)) throw WireError("bad activity");
  p.activity = static_cast<diagnosis::RankProgress::Activity>(activity);
  p.call = in.str();
  p.operation = decode_operation(in);
  p.send_peer = in.i32();
  p.wait_any = in.u8() != 0;
  p.wait_total = in.u64();
  const auto waits = in.count(1 + 4 + 4 + 8 + 8);
  for (std::uint32_t i = 0; i < waits; ++i) p.waits.push_back(decode_operation(in));
  const auto comms = in.count(8 + 4 + 4 + 8);
  for (std::uint32_t i = 0; i < comms; ++i) {
    diagnosis::CommProgress c;
    c.id = in.u64();
    c.size = in.i32();
    c.rank = in.i32();
    c.collectives = in.u64();
    p.comms.push_back(c);
  }
  p.completed = in.u64();
  p.polls = in.u64();
  p.entries = in.u64();
  return p;
}

// A stacks reply: the encoded tree, then the records.
std::string encode_stacks(const diagnosis::PrefixTree& tree, const std::vector<node::RankRecord>& records) {
  WireWriter w;
  w.str(diagnosis::serialize(tree)).u32(static_cast<std::uint32_t>(records.size()));
  for (const auto& r : records) {
    w.i32(r.rank).i32(r.pid).str(r.host).str(r.state).str(r.mpi_function);
    w.u32(static_cast<std::uint32_t>(r.path.size()));
    for (std::size_t i = 0; i < r.path.size(); ++i) w.str(r.path[i]).u64(i < r.call_sites.size() ? r.call_sites[i] : 0);
    w.str(r.progress_problem).u8(r.progress ? 1 : 0);
    if (r.progress) encode_progress(w, *r.progress);
  }
  return std::move(w).bytes();
}

}  // namespace

// Long on purpose: one case per request, each reading its arguments and writing its reply.
std::string serve_request(node::NodeWorker& worker, int self, std::string_view request) {
  WireReader in(request);
  const auto kind = static_cast<Request>(in.u8());
  // Requests without arguments: nothing may follow the code.
  if (kind == Request::AllStates || kind == Request::WorkCounters || kind == Request::GatherStacks ||
      kind == Request::Exit) {
    in.finish();
  }
  WireWriter out;
  switch (kind) {
    case Request::Discover: {
      // One block per monitor: its host once, a table of the (instance, command) pairs, then
      // 14 bytes per rank: a million-rank table is 14 MB, not a string per rank.
      std::vector<std::string> launches(in.count(sizeof(std::uint32_t)));
      for (auto& l : launches) l = in.str();
      in.finish();
      const auto ranks = worker.discover(launches);
      std::vector<std::pair<std::string, std::string>> programs;
      std::vector<std::uint16_t> program_of;
      for (const auto& r : ranks) {
        const std::pair<std::string, std::string> key{r.instance, r.command};
        auto it = std::find(programs.begin(), programs.end(), key);
        if (it == programs.end()) it = programs.insert(programs.end(), key);
        program_of.push_back(static_cast<std::uint16_t>(it - programs.begin()));
      }
      out.u32(1).i32(self).str(ranks.empty() ? std::string() : ranks.front().host);
      out.u32(static_cast<std::uint32_t>(programs.size()));
      for (const auto& [instance, command] : programs) out.str(instance).str(command);
      out.u32(static_cast<std::uint32_t>(ranks.size()));
      for (std::size_t i = 0; i < ranks.size(); ++i) {
        out.i32(ranks[i].rank).i32(ranks[i].world_size).i32(ranks[i].pid).u16(program_of[i]);
      }
      break;
    }
    case Request::Adopt: {
      const std::string instance = in.str();
      in.finish();
      worker.adopt(instance);
      out.u32(static_cast<std::uint32_t>(worker.ranks().size()));
      break;
    }
    case Request::Snapshot: {
      std::vector<int> local(in.count(sizeof(std::int32_t)));
      for (auto& l : local) {
        l = in.i32();
        if (l < 0 || static_cast<std::size_t>(l) >= worker.ranks().size()) throw WireError("no such rank here");
      }
      in.finish();
      const auto snapshots = worker.snapshot(local);
      out.u32(static_cast<std::uint32_t>(snapshots.size()));
      for (const auto& s : snapshots) {
        write_state(out, s.state);
        out.str(s.mpi_function).u64(s.path);
        for (const std::uint64_t e : s.enclosing) out.u64(e);
        out.u64(s.mpi_thread_path);
        out.u8(static_cast<std::uint8_t>((s.mpi_completed ? 1 : 0) | (s.mpi_polled ? 2 : 0) |
                                         (s.at_work_outside ? 4 : 0)));
        out.u64(s.mpi_completed.value_or(0));
      }
      break;
    }
    case Request::AllStates: {
      const auto states = worker.all_states();
      out.u32(static_cast<std::uint32_t>(states.size()));
      for (auto s : states) write_state(out, s);
      break;
    }
    case Request::WorkCounters: {
      const auto counters = worker.work_counters();
      out.u32(static_cast<std::uint32_t>(counters.size()));
      for (const auto& c : counters) {
        const stats::WorkCounters w = c.value_or(stats::WorkCounters{});
        out.u8(c ? 1 : 0).u64(w.io_bytes).u64(w.resident_bytes).u64(w.cpu_ns).u64(w.run_delay_ns).u64(w.age_ns);
      }
      break;
    }
    case Request::HeldRanks: {
      const double within_seconds = in.f64();
      in.finish();
      const auto held = worker.held_ranks(within_seconds);
      out.u32(static_cast<std::uint32_t>(held.size()));
      for (const auto& h : held) {
        out.i32(h.local).i32(h.tracer).u8(static_cast<std::uint8_t>((h.stopped ? 1 : 0) | (h.in_kernel ? 2 : 0)));
      }
      break;
    }
    case Request::GatherStacks: {
      std::vector<node::RankRecord> records;
      const auto tree = worker.gather_stacks(records);
      return encode_stacks(tree, records);
    }
    case Request::Signal: {
      const int signal = in.i32();
      in.finish();
      worker.signal(signal);
      break;
    }
    case Request::Usage:
      in.finish();
      out.f64(process_cpu_seconds()).f64(seconds_since_start()).u64(worker.samples_taken());
      break;
    case Request::Exit:
      break;
    default:
      throw WireError("unknown request " + std::to_string(static_cast<int>(kind)));
  }
  return std::move(out).bytes();
}

std::string combine_replies(Request request, std::vector<std::string> replies) {
  if (replies.size() == 1) return std::move(replies.front());
  if (request == Request::Discover) {
    std::uint32_t total = 0;
    std::string body;
    for (const auto& reply : replies) {
      WireReader in(reply);
      total += in.u32();
      body.append(reply, sizeof(std::uint32_t));
    }
    WireWriter w;
    w.u32(total);
    return std::move(w).bytes() + body;
  }
  if (request == Request::GatherStacks) {
    GatheredStacks merged;
    for (const auto& reply : replies) {
      auto part = decode_stacks(reply);
      merged.tree.merge(part.tree);
      for (auto& r : part.records) merged.records.push_back(std::move(r));
    }
    return encode_stacks(merged.tree, merged.records);
  }
  return std::move(replies.front());  // acknowledgements: nothing to combine
}

// ---- requests and replies ----

std::string discover_request(const std::vector<std::string>& launches) {
  WireWriter w;
  w.u8(static_cast<std::uint8_t>(Request::Discover)).u32(static_cast<std::uint32_t>(launches.size()));
  for (const auto& l : launches) w.str(l);
  return std::move(w).bytes();
}

std::string adopt_request(const std::string& instance) {
  WireWriter w;
  w.u8(static_cast<std::uint8_t>(Request::Adopt)).str(instance);
  return std::move(w).bytes();
}

std::string snapshot_request(const std::vector<int>& local) {
  WireWriter w;
  w.u8(static_cast<std::uint8_t>(Request::Snapshot)).u32(static_cast<std::uint32_t>(local.size()));
  for (int l : local) w.i32(l);
  return std::move(w).bytes();
}

std::string held_ranks_request(double within_seconds) {
  WireWriter w;
  w.u8(static_cast<std::uint8_t>(Request::HeldRanks)).f64(within_seconds);
  return std::move(w).bytes();
}

std::string signal_request(int signal) {
  WireWriter w;
  w.u8(static_cast<std::uint8_t>(Request::Signal)).i32(signal);
  return std::move(w).bytes();
}

std::vector<TableEntry> decode_discovery(std::string_view reply) {
  WireReader in(reply);
  std::vector<TableEntry> entries;
  for (std::uint32_t blocks = in.u32(); blocks > 0; --blocks) {
    const int monitor = in.i32();
    const std::string host = in.str();
    std::vector<std::pair<std::string, std::string>> programs(in.count(2 * 4));
    for (auto& [instance, command] : programs) {
      instance = in.str();
      command = in.str();
    }
    // 14 bytes per rank: rank, world size, pid, program.
    for (std::uint32_t n = in.count(14); n > 0; --n) {
      TableEntry e;
      e.monitor = monitor;
      e.rank.rank = in.i32();
      e.rank.world_size = in.i32();
      e.rank.pid = in.i32();
      const auto program = in.u16();
      if (program >= programs.size()) throw WireError("bad program index in a rank table");
      e.rank.host = host;
      e.rank.instance = programs[program].first;
      e.rank.command = programs[program].second;
      entries.push_back(std::move(e));
    }
  }
  in.finish();
  return entries;
}

std::vector<stats::RankSnapshot> decode_snapshots(std::string_view reply) {
  WireReader in(reply);
  std::vector<stats::RankSnapshot> snapshots(in.count(1 + 4 + 8 + 8 * stats::kEnclosingPlaces + 8 + 1 + 8));
  for (auto& s : snapshots) {
    s.state = read_state(in);
    s.mpi_function = in.str();
    s.path = in.u64();
    for (auto& e : s.enclosing) e = in.u64();
    s.mpi_thread_path = in.u64();
    // Bit 0: a count follows; bit 1: it polled in vain; bit 2: at work outside MPI on another
    // thread. Without a count its bytes are 0.
    const auto flags = in.u8();
    const auto completed = in.u64();
    if (flags > 7 || (!(flags & 1) && completed != 0)) throw WireError("bad progress count in a snapshot");
    if (flags & 1) s.mpi_completed = completed;
    s.mpi_polled = (flags & 2) != 0;
    s.at_work_outside = (flags & 4) != 0;
  }
  in.finish();
  return snapshots;
}

std::vector<stats::RankState> decode_states(std::string_view reply) {
  WireReader in(reply);
  std::vector<stats::RankState> states(in.count(1));
  for (auto& s : states) s = read_state(in);
  in.finish();
  return states;
}

std::vector<std::optional<stats::WorkCounters>> decode_work_counters(std::string_view reply) {
  WireReader in(reply);
  std::vector<std::optional<stats::WorkCounters>> counters(in.count(1 + 5 * 8));
  for (auto& c : counters) {
    const bool known = in.u8() != 0;
    stats::WorkCounters w;
    w.io_bytes = in.u64();
    w.resident_bytes = in.u64();
    w.cpu_ns = in.u64();
    w.run_delay_ns = in.u64();
    w.age_ns = in.u64();
    if (known) c = w;
  }
  in.finish();
  return counters;
}

std::vector<node::HeldRank> decode_held(std::string_view reply) {
  WireReader in(reply);
  std::vector<node::HeldRank> held(in.count(4 + 4 + 1));
  for (auto& h : held) {
    h.local = in.i32();
    h.tracer = in.i32();
    // Bit 0: stopped by a signal; bit 1: waiting in the kernel.
    const auto flags = in.u8();
    if (flags > 3) throw WireError("bad flags of a held rank");
    h.stopped = (flags & 1) != 0;
    h.in_kernel = (flags & 2) != 0;
  }
  in.finish();
  return held;
}

GatheredStacks decode_stacks(std::string_view reply) {
  WireReader in(reply);
  GatheredStacks result;
  auto decoded = diagnosis::deserialize(in.str());
  if (const auto* error = std::get_if<diagnosis::DecodeError>(&decoded)) {
    throw WireError("bad stack tree from a monitor: " + error->message);
  }
  result.tree = std::move(std::get<diagnosis::PrefixTree>(decoded));
  result.records.resize(in.count(4 + 4 + 3 * 4 + 4 + 4 + 1));
  for (auto& r : result.records) {
    r.rank = in.i32();
    r.pid = in.i32();
    r.host = in.str();
    r.state = in.str();
    r.mpi_function = in.str();
    const auto frames = in.count(4 + 8);
    for (std::uint32_t i = 0; i < frames; ++i) {
      r.path.push_back(in.str());
      r.call_sites.push_back(in.u64());
    }
    r.progress_problem = in.str();
    if (in.u8() != 0) r.progress = decode_progress(in);
  }
  in.finish();
  return result;
}

Usage decode_usage(std::string_view reply) {
  WireReader in(reply);
  Usage u;
  u.cpu_seconds = in.f64();
  u.wall_seconds = in.f64();
  u.samples = in.u64();
  in.finish();
  return u;
}

// ---- one monitor ----

SoloMonitors::SoloMonitors(node::NodeWorker& worker, std::string host) : worker_(worker), host_(std::move(host)) {}

std::vector<std::string> SoloMonitors::call(const std::vector<std::pair<int, std::string>>& requests) {
  std::vector<std::string> replies;
  for (const auto& [monitor, request] : requests) {
    replies.push_back(serve_request(worker_, 0, request));
    if (!request.empty() && static_cast<Request>(request[0]) == Request::Adopt) said_finished_ = false;
  }
  return replies;
}

std::string SoloMonitors::reduce(const std::string& request) { return call({0}, request).front(); }

std::vector<int> SoloMonitors::finished() {
  // Looked at once a second: a /proc read per rank, no more.
  const double now = seconds_since_start();
  if (said_finished_ || now < next_check_) return {};
  next_check_ = now + 1;
  if (worker_.ranks_alive()) return {};
  said_finished_ = true;
  return {0};
}

}  // namespace parastack::network
