#include "parastack/stackbench/emulator.h"

#include "parastack/stats/random.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <thread>

namespace parastack::stackbench {
namespace {

using diagnosis::Frame;
using diagnosis::PrefixTree;
using diagnosis::StackTrace;

using stats::SplitMix;  // tiny state: seeding one generator per class costs nothing

std::uint32_t below(SplitMix& rng, std::uint32_t n) { return static_cast<std::uint32_t>(rng.below(n)); }

StackTrace generate_trace(SplitMix& rng, const Workload& workload) {
  // STATBench prepends __libc_start_main and main. We also end most traces in an MPI call with
  // two library-internal frames below it, which the default pruning folds away, as it would
  // Open MPI's progress engine in a real hang.
  StackTrace trace{{"__libc_start_main", "libc.so.6", "", false}, {"main", "app", "", false}};
  const std::uint32_t calls = 1 + below(rng, std::max(workload.depth, 1u));
  for (std::uint32_t i = 0; i < calls; ++i) {
    trace.push_back({"fn" + std::to_string(below(rng, std::max(workload.breadth, 1u))), "app", "", false});
  }
  static constexpr const char* kMpiCalls[] = {"MPI_Waitall", "MPI_Barrier", "MPI_Allreduce", "MPI_Recv"};
  if (below(rng, 4) != 0) {
    trace.push_back({kMpiCalls[below(rng, 4)], "libmpi.so.40", "", true});
    trace.push_back({"ompi_request_default_wait_all", "libmpi.so.40", "", true});
    trace.push_back({"opal_progress", "libopen-pal.so.40", "", true});
  }
  return trace;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string with_commas(std::uint64_t value) {
  std::string digits = std::to_string(value), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string bytes_text(std::uint64_t bytes) {
  char buffer[32];
  if (bytes < 10 * 1024) {
    std::snprintf(buffer, sizeof buffer, "%llu B", static_cast<unsigned long long>(bytes));
  } else if (bytes < 10 * 1024 * 1024) {
    std::snprintf(buffer, sizeof buffer, "%.1f KiB", static_cast<double>(bytes) / 1024);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.1f MiB", static_cast<double>(bytes) / (1024 * 1024));
  }
  return buffer;
}

}  // namespace

TraceGenerator::TraceGenerator(const Workload& workload) {
  by_class_.resize(std::max(workload.classes, 1u));
  for (std::size_t c = 0; c < by_class_.size(); ++c) {
    SplitMix rng(0x5eed0000ULL + c);
    for (std::uint32_t s = 0; s < workload.samples_per_task; ++s) {
      by_class_[c].push_back(generate_trace(rng, workload));
    }
  }
}

PrefixTree build_monitor_tree(const Workload& workload, const TraceGenerator& generator, std::uint32_t monitor) {
  PrefixTree tree;
  const auto first = static_cast<diagnosis::Rank>(std::uint64_t{monitor} * workload.tasks_per_monitor);
  for (std::uint32_t task = 0; task < workload.tasks_per_monitor; ++task) {
    const diagnosis::Rank rank = first + task;
    for (const auto& trace : generator.samples(rank)) tree.add(trace, rank);
  }
  return tree;
}

PrefixTree merge_messages(std::span<const std::string> messages) {
  PrefixTree merged;
  for (const auto& message : messages) {
    auto decoded = diagnosis::deserialize(message);
    if (const auto* error = std::get_if<diagnosis::DecodeError>(&decoded)) {
      throw std::runtime_error("bad message at byte " + std::to_string(error->offset) + ": " + error->message);
    }
    merged.merge(std::get<PrefixTree>(decoded));
  }
  return merged;
}

void parallel_for(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& body) {
  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(std::max<std::size_t>(count, 1))));
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < count; i = next++) body(i);
  };
  std::vector<std::jthread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
}

ThreadTransport::ThreadTransport(unsigned threads) : threads_(std::max(threads, 1u)) {}

std::vector<std::string> ThreadTransport::reduce_level(std::vector<std::vector<std::string>> groups,
                                                       const MergeStep& step) {
  std::vector<std::string> out(groups.size());
  parallel_for(groups.size(), threads_, [&](std::size_t i) {
    out[i] = step(groups[i]);
    groups[i].clear();
    groups[i].shrink_to_fit();  // a parent drops its children's messages once it has merged them
  });
  return out;
}

RunResult run(const RunConfig& config, Transport& transport) {
  RunResult result;
  result.config = config;
  const auto& workload = config.workload;
  const unsigned threads = config.threads > 0 ? config.threads : std::max(1u, std::thread::hardware_concurrency());

  // The monitors: each builds and encodes its local tree. Not part of the merge latency, as STAT
  // leaves the sampling out of its.
  const auto build_start = std::chrono::steady_clock::now();
  const TraceGenerator generator(workload);
  std::vector<std::string> messages(workload.monitors);
  parallel_for(workload.monitors, threads, [&](std::size_t m) {
    messages[m] =
        diagnosis::serialize(build_monitor_tree(workload, generator, static_cast<std::uint32_t>(m)), config.encode);
  });
  result.build_seconds = seconds_since(build_start);

  auto account = [&result](const std::vector<std::string>& sent) {
    for (const auto& message : sent) {
      result.total_bytes += message.size();
      result.largest_message = std::max<std::uint64_t>(result.largest_message, message.size());
    }
  };
  account(messages);

  const auto merge_start = std::chrono::steady_clock::now();
  const MergeStep step = [&config](std::span<const std::string> children) {
    return diagnosis::serialize(merge_messages(children), config.encode);
  };
  const std::size_t fanout = std::max<std::uint32_t>(config.fanout, 2);
  if (config.reduction == Reduction::Tree) {
    while (messages.size() > fanout) {
      std::vector<std::vector<std::string>> groups((messages.size() + fanout - 1) / fanout);
      for (std::size_t i = 0; i < messages.size(); ++i) groups[i / fanout].push_back(std::move(messages[i]));
      messages = transport.reduce_level(std::move(groups), step);
      account(messages);
      ++result.levels;
    }
  }
  for (const auto& message : messages) result.root_bytes += message.size();
  result.tree = merge_messages(messages);
  ++result.levels;
  result.merge_seconds = seconds_since(merge_start);
  result.tree_nodes = result.tree.node_count();
  result.classes = result.tree.equivalence_classes().size();
  return result;
}

RunResult run(const RunConfig& config) {
  ThreadTransport transport(config.threads > 0 ? config.threads : std::max(1u, std::thread::hardware_concurrency()));
  return run(config, transport);
}

std::string describe(const RunConfig& config) {
  std::string text = config.reduction == Reduction::Flat ? "flat" : "tree k=" + std::to_string(config.fanout);
  if (config.encode.encoding == diagnosis::RankEncoding::RangeString) {
    text += ", range strings";
  } else if (config.encode.full_width_ranks > 0) {
    text += ", full-job bit vectors";
  } else {
    text += ", bit vectors";
  }
  return text;
}

std::string format_table(std::span<const RunResult> results) {
  std::string out =
      "| ranks | monitors x tasks | reduction, encoding | levels | nodes | classes | build s | "
      "merge s | root receives | largest message | total bytes |\n"
      "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  char line[512];
  for (const auto& r : results) {
    const auto& w = r.config.workload;
    std::snprintf(line, sizeof line, "| %s | %s x %s | %s | %u | %zu | %zu | %.3f | %.3f | %s | %s | %s |\n",
                  with_commas(w.ranks()).c_str(), with_commas(w.monitors).c_str(),
                  with_commas(w.tasks_per_monitor).c_str(), describe(r.config).c_str(), r.levels, r.tree_nodes,
                  r.classes, r.build_seconds, r.merge_seconds, bytes_text(r.root_bytes).c_str(),
                  bytes_text(r.largest_message).c_str(), bytes_text(r.total_bytes).c_str());
    out += line;
  }
  return out;
}

}  // namespace parastack::stackbench
