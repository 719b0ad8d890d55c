// parastack stackbench: the STATBench emulator. Emulated monitors (threads) generate synthetic
// stack traces, build their prefix trees with the diagnosis library and merge them flat or through
// a k-ary tree, with rank sets sent as bit vectors or as range strings. Without --monitors/--tasks
// it runs the standard table (docs/diagnosis.md), including 131,072 and 1,048,576 ranks.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "parastack/diagnosis/render.h"
#include "parastack/stackbench/emulator.h"

namespace parastack::bench {
namespace {

using stackbench::Reduction;
using stackbench::RunConfig;

struct StackbenchOptions {
  stackbench::Workload workload;
  std::string reduction = "both";
  std::string encoding = "bitvector";
  std::uint32_t fanout = 32;
  unsigned threads = 0;
  std::string print;  // text, dot or json: the last run's merged tree
  bool custom = false;
};

std::vector<diagnosis::EncodeOptions> encodings_of(const std::string& name, std::uint64_t ranks) {
  const diagnosis::EncodeOptions bits{}, strings{diagnosis::RankEncoding::RangeString, 0},
      full{diagnosis::RankEncoding::BitVector, static_cast<diagnosis::Rank>(ranks)};
  if (name == "bitvector") return {bits};
  if (name == "ranges") return {strings};
  if (name == "full") return {full};
  return {bits, strings};  // both
}

// The standard table: STAT's history at a small scale, then the two goal scales.
std::vector<RunConfig> standard_suite(unsigned threads) {
  std::vector<RunConfig> configs;
  auto add = [&](std::uint32_t monitors, std::uint32_t tasks, Reduction reduction, std::uint32_t fanout,
                 diagnosis::EncodeOptions encode) {
    RunConfig config;
    config.workload.monitors = monitors;
    config.workload.tasks_per_monitor = tasks;
    config.reduction = reduction;
    config.fanout = fanout;
    config.encode = encode;
    config.threads = threads;
    configs.push_back(config);
  };
  const diagnosis::EncodeOptions bits{}, strings{diagnosis::RankEncoding::RangeString, 0};
  add(64, 128, Reduction::Flat, 32, {diagnosis::RankEncoding::BitVector, 8192});
  add(64, 128, Reduction::Flat, 32, strings);
  add(64, 128, Reduction::Flat, 32, bits);
  for (const auto& encode : {strings, bits}) {
    add(1024, 128, Reduction::Flat, 32, encode);
    add(1024, 128, Reduction::Tree, 32, encode);
  }
  for (const auto& encode : {strings, bits}) {
    add(4096, 256, Reduction::Flat, 16, encode);
    add(4096, 256, Reduction::Tree, 16, encode);
  }
  add(1024, 1024, Reduction::Flat, 32, bits);
  add(1024, 1024, Reduction::Tree, 32, bits);
  return configs;
}

int run_stackbench(const StackbenchOptions& options) {
  std::vector<RunConfig> configs;
  if (options.custom) {
    for (const auto reduction : {Reduction::Flat, Reduction::Tree}) {
      if (options.reduction != "both" && (options.reduction == "flat") != (reduction == Reduction::Flat)) continue;
      for (const auto& encode : encodings_of(options.encoding, options.workload.ranks())) {
        RunConfig config;
        config.workload = options.workload;
        config.reduction = reduction;
        config.fanout = options.fanout;
        config.encode = encode;
        config.threads = options.threads;
        configs.push_back(config);
      }
    }
  } else {
    configs = standard_suite(options.threads);
  }
  const auto& w = configs.front().workload;
  std::printf("STATBench emulation: depth %u, breadth %u, %u classes, %u samples per task, %u threads\n\n", w.depth,
              w.breadth, w.classes, w.samples_per_task,
              options.threads > 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency()));
  std::printf("%s", stackbench::format_table({}).c_str());
  std::fflush(stdout);
  std::vector<stackbench::RunResult> results;
  for (const auto& config : configs) {
    auto result = stackbench::run(config);
    // Print each row as it finishes: the large rows take a while.
    const auto table = stackbench::format_table(std::span(&result, 1));
    std::printf("%s", table.substr(table.find('\n', table.find('\n') + 1) + 1).c_str());
    std::fflush(stdout);
    results.push_back(std::move(result));
  }
  if (!options.custom) {
    // The goals of the issue, for the bit-vector rows (what the monitor network will send).
    std::printf("\n");
    for (const auto& [ranks, goal] : {std::pair<std::uint64_t, double>{131072, 1.0}, {1048576, 10.0}}) {
      double best = -1, worst = -1;
      for (const auto& r : results) {
        if (r.config.workload.ranks() != ranks || r.config.encode.encoding != diagnosis::RankEncoding::BitVector)
          continue;
        best = best < 0 ? r.merge_seconds : std::min(best, r.merge_seconds);
        worst = std::max(worst, r.merge_seconds);
      }
      std::printf("goal: %llu ranks merged in < %.0f s with bit vectors: %.3f-%.3f s, %s\n",
                  static_cast<unsigned long long>(ranks), goal, best, worst, worst < goal ? "met" : "MISSED");
    }
  }
  if (!options.print.empty() && !results.empty()) {
    const auto& tree = results.back().tree;
    diagnosis::RenderOptions render;
    render.title = stackbench::describe(results.back().config);
    std::printf("\n%s", options.print == "dot"    ? diagnosis::to_dot(tree, render).c_str()
                        : options.print == "json" ? (diagnosis::to_json(tree) + "\n").c_str()
                                                  : diagnosis::to_text(tree, render).c_str());
  }
  return cli::kExitOk;
}

}  // namespace

std::function<int()> add_stackbench_command(CLI::App& app) {
  auto options = std::make_shared<StackbenchOptions>();
  auto* command =
      app.add_subcommand("stackbench",
                         "Benchmark: STATBench-style emulation of the stack-trace merge (call-graph prefix trees) at "
                         "scale, flat vs tree reduction, bit vectors vs range strings. Without --monitors/--tasks, "
                         "the standard table up to 1,048,576 ranks.");
  auto& w = options->workload;
  auto* monitors = command->add_option("--monitors", w.monitors, "Emulated monitors")->check(CLI::Range(1, 1 << 20));
  auto* tasks = command->add_option("--tasks", w.tasks_per_monitor, "Ranks per monitor")->check(CLI::Range(1, 1 << 20));
  command->add_option("--depth", w.depth, "Most calls below main")->check(CLI::Range(1, 1000))->capture_default_str();
  command->add_option("--breadth", w.breadth, "Functions to choose from per call")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  command->add_option("--classes", w.classes, "Equivalence classes (seed = rank % classes)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  command->add_option("--samples", w.samples_per_task, "Traces per rank")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  command->add_option("--fanout", options->fanout, "Children per parent in the tree reduction")
      ->check(CLI::Range(2, 1 << 20))
      ->capture_default_str();
  command->add_option("--reduction", options->reduction, "flat, tree or both")
      ->check(CLI::IsMember({"flat", "tree", "both"}))
      ->capture_default_str();
  command
      ->add_option("--encoding", options->encoding,
                   "Rank sets as bitvector, ranges, full (full-job bit vectors) or both")
      ->check(CLI::IsMember({"bitvector", "ranges", "full", "both"}))
      ->capture_default_str();
  command->add_option("--threads", options->threads, "Threads (0: one per core)")->capture_default_str();
  command->add_option("--print", options->print, "Also print the last run's merged tree: text, dot or json")
      ->check(CLI::IsMember({"text", "dot", "json"}));
  return [options, monitors, tasks] {
    options->custom = monitors->count() > 0 || tasks->count() > 0;
    return run_stackbench(*options);
  };
}

}  // namespace parastack::bench
