// parastack sample-bench: what a sample costs the target and the monitor, for the bare stop, the
// fast path and the naive path side by side, in interleaved rounds on the same ranks (the machine
// is noisy: compare minima and medians of one run, never across runs). With --loop it instead
// samples every rank at a fixed period until the job ends, to measure the application's slowdown
// against an unsampled twin (bench/sampler-overhead.sh).
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <thread>

#include "cli/commands.h"
#include "sampler/rank_discovery.h"
#include "sampler/stack_sampler.h"

namespace parastack::bench {
namespace {

struct BenchOptions {
  int launcher = 0;
  int rounds = 200;
  double loop_seconds = 0;
};

double percentile_us(std::vector<double> values, double fraction) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[static_cast<std::size_t>(fraction * static_cast<double>(values.size() - 1))];
}

std::vector<sampler::DiscoveredRank> ranks_of(int launcher) {
  return sampler::discover_ranks({sampler::JobSelector::Kind::Launcher, os::Pid{launcher}, {}}).ranks;
}

int run_loop(const BenchOptions& options) {
  sampler::StackSampler stack_sampler;
  const auto period = std::chrono::duration<double>(options.loop_seconds);
  std::size_t samples = 0, in_mpi = 0;
  auto next = std::chrono::steady_clock::now();
  while (::kill(options.launcher, 0) == 0) {
    for (const auto& rank : ranks_of(options.launcher)) {
      const auto s = stack_sampler.sample(rank.pid);
      ++samples;
      in_mpi += s.state == stats::RankState::InMpi ? 1 : 0;
    }
    next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(period);
    std::this_thread::sleep_until(next);
  }
  std::printf("sampled %zu times (%zu IN_MPI) every %.3f s until the job ended\n", samples, in_mpi,
              options.loop_seconds);
  return cli::kExitOk;
}

int run_bench(const BenchOptions& options) {
  const auto ranks = ranks_of(options.launcher);
  if (ranks.empty()) {
    std::cerr << "parastack sample-bench: no ranks under pid " << options.launcher << "\n";
    return cli::kExitNoRanks;
  }
  if (options.loop_seconds > 0) return run_loop(options);
  const std::vector<std::pair<const char*, sampler::SamplePath>> paths{
      {"bare stop+getregs", sampler::SamplePath::Bare},
      {"fast (copy, unwind after)", sampler::SamplePath::Fast},
      {"naive (unwind via ptrace)", sampler::SamplePath::Naive}};
  sampler::StackSampler stack_sampler;
  std::map<std::string, std::vector<double>> stop_us, cpu_us;
  std::map<std::string, int> failures;
  for (int round = 0; round < options.rounds; ++round) {
    for (std::size_t p = 0; p < paths.size(); ++p) {
      const auto& [name, path] = paths[(p + static_cast<std::size_t>(round)) % paths.size()];
      for (const auto& rank : ranks) {
        sampler::SampleOptions sample_options;
        sample_options.path = path;
        const auto s = stack_sampler.sample(rank.pid, sample_options);
        if (s.failure) {
          ++failures[name];
          continue;
        }
        stop_us[name].push_back(static_cast<double>(s.stopped.count()) / 1000);
        cpu_us[name].push_back(static_cast<double>(s.monitor_cpu.count()) / 1000);
      }
    }
  }
  std::printf("%zu ranks, %d interleaved rounds\n\n", ranks.size(), options.rounds);
  std::printf(
      "| path | samples | failed | stop min us | stop p50 us | stop p99 us | monitor CPU p50 us | monitor CPU p99 us "
      "|\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& [name, path] : paths) {
    const auto& stops = stop_us[name];
    std::printf("| %s | %zu | %d | %.1f | %.1f | %.1f | %.1f | %.1f |\n", name, stops.size(), failures[name],
                percentile_us(stops, 0), percentile_us(stops, 0.5), percentile_us(stops, 0.99),
                percentile_us(cpu_us[name], 0.5), percentile_us(cpu_us[name], 0.99));
  }
  const auto& bare = stop_us[paths[0].first];
  const auto& fast = stop_us[paths[1].first];
  if (!bare.empty() && !fast.empty()) {
    std::printf("\nfast / bare stop time: %.2fx at the minimum, %.2fx at the median\n",
                percentile_us(fast, 0) / percentile_us(bare, 0), percentile_us(fast, 0.5) / percentile_us(bare, 0.5));
  }
  return cli::kExitOk;
}

}  // namespace

std::function<int()> add_sample_bench_command(CLI::App& app) {
  auto options = std::make_shared<BenchOptions>();
  auto* command =
      app.add_subcommand("sample-bench",
                         "Benchmark: the target's stop time and the monitor's CPU per sample for the bare stop, the "
                         "fast path and the naive libunwind-ptrace path, on the ranks under a launcher.");
  command->add_option("--pid", options->launcher, "The launcher's pid")->required()->check(CLI::PositiveNumber);
  command->add_option("--rounds", options->rounds, "Interleaved rounds")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  command
      ->add_option("--loop", options->loop_seconds,
                   "Instead: sample every rank every this many seconds until the job ends")
      ->check(CLI::PositiveNumber);
  return [options] { return run_bench(*options); };
}

}  // namespace parastack::bench
