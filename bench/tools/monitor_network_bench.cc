// parastack-monitor-bench: the monitor network's benchmark (bench/monitor-network.sh), an Open MPI
// program like parastack-monitor whose monitors hold emulated ranks (emulated_node_worker.h). The
// leader measures through the real requests and reductions: the time to gather the rank table, its
// work per sample, the time to merge every rank's stack tree, and the CPU idle monitors use.
//   mpirun -np MONITORS parastack-monitor-bench --emulate-ranks RANKS [--idle-seconds S]
#include <mpi.h>
#include <time.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <set>

#include "cli/commands.h"
#include "emulated_node_worker.h"
#include "network/cluster_probe.h"
#include "network/mpi_monitors.h"

namespace parastack::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct BenchOptions {
  stats::WatchdogConfig watchdog;
  std::uint64_t emulate_ranks = 0;
  double idle_seconds = 60;
  int bench_samples = 200;
};

double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The benchmark of bench/monitor-network.sh, on emulated ranks, through the real requests.
int run_benchmark(network::MpiMonitors& monitors, const BenchOptions& options) {
  const auto elapsed = [](Clock::time_point since) {
    return std::chrono::duration<double>(Clock::now() - since).count();
  };
  std::printf("monitors: %d, emulated ranks: %llu (%llu per monitor)\n", monitors.count(),
              static_cast<unsigned long long>(options.emulate_ranks),
              static_cast<unsigned long long>(options.emulate_ranks / static_cast<std::uint64_t>(monitors.count())));

  // 1. The rank table, gathered up the tree of monitors.
  std::vector<double> table_times;
  std::vector<network::TableEntry> table;
  std::size_t table_bytes = 0;
  for (int round = 0; round < 3; ++round) {
    const auto start = Clock::now();
    const auto reply = monitors.reduce(network::discover_request({}));
    table = network::decode_discovery(reply);
    table_times.push_back(elapsed(start));
    table_bytes = reply.size();
  }
  std::vector<int> everyone(static_cast<std::size_t>(monitors.count()));
  std::iota(everyone.begin(), everyone.end(), 0);
  monitors.call(everyone, network::adopt_request("emulated"));
  network::ClusterProbe probe(monitors, table, [] { return true; });

  // 2. The leader's work per sample: a snapshot of C random ranks (wherever they live) and the
  //    model's step, as the watchdog loop does it.
  stats::Watchdog watchdog(options.watchdog, static_cast<int>(table.size()), 7);
  stats::HangModel model(watchdog.model().config());
  std::vector<double> walls, cpus;
  for (int s = 0; s < options.bench_samples; ++s) {
    const auto& set = watchdog.sets()[static_cast<std::size_t>(s) % watchdog.sets().size()];
    const auto start = Clock::now();
    const double cpu = thread_cpu_seconds();
    const auto snapshots = probe.snapshot(set);
    stats::Observation o{probe.now(), s % static_cast<int>(watchdog.sets().size()), 0, 0};
    for (const auto& x : snapshots) {
      o.n_out += x.state == stats::RankState::OutMpi ? 1 : 0;
      o.n += x.state != stats::RankState::Unknown ? 1 : 0;
    }
    model.observe(o);
    cpus.push_back(thread_cpu_seconds() - cpu);
    walls.push_back(elapsed(start));
  }
  std::set<int> touched;
  for (const auto& set : watchdog.sets()) {
    for (int r : set) touched.insert(probe.table()[static_cast<std::size_t>(r)].monitor);
  }

  // 3. Every rank's stacks, merged up the tree of monitors.
  std::vector<double> merge_times;
  std::size_t tree_nodes = 0, classes = 0, tree_bytes = 0;
  for (int round = 0; round < 3; ++round) {
    const auto start = Clock::now();
    const auto reply = monitors.reduce(network::plain_request(network::Request::GatherStacks));
    const auto stacks = network::decode_stacks(reply);
    merge_times.push_back(elapsed(start));
    tree_nodes = stacks.tree.node_count();
    classes = stacks.tree.equivalence_classes().size();
    tree_bytes = reply.size();
  }

  // 4. Idle monitors over idle_seconds: the leader waits as it waits between samples.
  const auto usage = [&] {
    std::vector<network::Usage> all;
    for (const auto& reply : monitors.call(everyone, network::plain_request(network::Request::Usage))) {
      all.push_back(network::decode_usage(reply));
    }
    return all;
  };
  const auto before = usage();
  probe.wait_until(probe.now() + options.idle_seconds);
  const auto after = usage();
  std::vector<double> idle_percent;
  for (std::size_t m = 1; m < before.size(); ++m) {
    idle_percent.push_back(100 * (after[m].cpu_seconds - before[m].cpu_seconds) /
                           (after[m].wall_seconds - before[m].wall_seconds));
  }
  const double leader_percent =
      100 * (after[0].cpu_seconds - before[0].cpu_seconds) / (after[0].wall_seconds - before[0].wall_seconds);

  std::printf(
      "| emulated ranks | monitors | rank table: gather s (median of 3) | table bytes | leader per sample: wall ms "
      "(median / p95) | leader CPU ms per sample | monitors asked per set | stack merge s (median of 3) | merged tree: "
      "nodes / classes / bytes |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  auto sorted_walls = walls;
  std::sort(sorted_walls.begin(), sorted_walls.end());
  std::printf("| %llu | %d | %.4f | %zu | %.3f / %.3f | %.3f | %zu of %d | %.4f | %zu / %zu / %zu |\n",
              static_cast<unsigned long long>(table.size()), monitors.count(), median(table_times), table_bytes,
              1e3 * median(walls), 1e3 * sorted_walls[sorted_walls.size() * 95 / 100], 1e3 * median(cpus),
              touched.size(), monitors.count(), median(merge_times), tree_nodes, classes, tree_bytes);
  if (!idle_percent.empty()) {
    std::printf(
        "idle over %.0f s: monitors' CPU %% of a core: max %.3f, mean %.3f; leader %.3f\n", options.idle_seconds,
        *std::max_element(idle_percent.begin(), idle_percent.end()),
        std::accumulate(idle_percent.begin(), idle_percent.end(), 0.0) / static_cast<double>(idle_percent.size()),
        leader_percent);
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace
}  // namespace parastack::bench

// NOLINTNEXTLINE(bugprone-exception-escape): a bench tool; terminate names what it could not handle.
int main(int argc, char** argv) {
  using namespace parastack;
  bench::BenchOptions options;
  CLI::App app{
      "parastack-monitor-bench: the monitor network's benchmark on emulated ranks (one MPI process per monitor)"};
  cli::add_model_options(app, options.watchdog.model);
  app.add_option("--ranks", options.watchdog.sampled_ranks, "C: ranks sampled per set (two disjoint sets)")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  app.add_option("--emulate-ranks", options.emulate_ranks, "Emulated ranks in all, spread over the monitors")
      ->required()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 32));
  app.add_option("--idle-seconds", options.idle_seconds, "How long to measure idle monitors")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  app.add_option("--bench-samples", options.bench_samples, "Samples to time")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  // Parse before MPI starts: a usage error must not need an MPI job to be reported.
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? cli::kExitOk : cli::kExitUsage;
  }
  if (auto error = stats::config_error(options.watchdog)) {
    std::cerr << "parastack-monitor-bench: " << *error << "\n";
    return cli::kExitUsage;
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int self = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &self);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const auto per_monitor = static_cast<std::uint32_t>(options.emulate_ranks / static_cast<std::uint64_t>(size));
  bench::EmulatedNodeWorker worker(self, size, per_monitor, 1);
  const auto hosts = network::gather_hosts();
  int status = 0;
  if (self != 0) {
    network::serve(worker);
  } else {
    network::MpiMonitors monitors(worker, hosts, std::chrono::seconds(60));
    status = run_benchmark(monitors, options);
    monitors.release();
  }
  MPI_Finalize();
  return status;
}
