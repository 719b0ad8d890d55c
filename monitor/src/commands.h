// Subcommands of the parastack program. Each registers its options on the CLI and runs after
// parsing; run() returns the process exit status.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "parastack/stats/hang_model.h"

namespace parastack::cli {

// Documented exit statuses (docs/user-guide.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 2;  // bad options or unreadable/invalid input
inline constexpr int kExitHang = 3;   // a hang was confirmed
inline constexpr int kExitNoRanks = 4; // no MPI rank was found

// Model options shared by every command that runs the model (--alpha, --budget, ...).
void add_model_options(CLI::App& command, stats::ModelConfig& config);

std::function<int()> add_replay_command(CLI::App& app);
std::function<int()> add_simulate_command(CLI::App& app);
std::function<int()> add_ranks_command(CLI::App& app);
std::function<int()> add_stack_command(CLI::App& app);
std::function<int()> add_sample_bench_command(CLI::App& app);
std::function<int()> add_stackbench_command(CLI::App& app);

}  // namespace parastack::cli
