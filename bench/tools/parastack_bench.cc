// parastack-bench: the benchmarks of the sampler and of the stack-tree merge, a tool of its own
// (bench/sampler-overhead.sh, bench/stackbench.sh), not part of the product.
#include <CLI/CLI.hpp>
#include <functional>
#include <iostream>

#include "cli/commands.h"

namespace parastack::bench {
std::function<int()> add_sample_bench_command(CLI::App& app);
std::function<int()> add_stackbench_command(CLI::App& app);
}  // namespace parastack::bench

// NOLINTNEXTLINE(bugprone-exception-escape): a bench tool; terminate names what it could not handle.
int main(int argc, char** argv) {
  using namespace parastack;
  CLI::App app{"parastack-bench: benchmarks of parastack's sampler and stack-tree merge"};
  app.require_subcommand(1);
  const auto sample_bench = bench::add_sample_bench_command(app);
  const auto stackbench = bench::add_stackbench_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? cli::kExitOk : cli::kExitUsage;
  }
  try {
    if (app.got_subcommand("sample-bench")) return sample_bench();
    if (app.got_subcommand("stackbench")) return stackbench();
  } catch (const std::exception& e) {
    std::cerr << "parastack-bench: " << e.what() << "\n";
    return cli::kExitUsage;
  }
  return cli::kExitUsage;
}
