#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"

int main(int argc, char** argv) {
  using namespace parastack::cli;
  CLI::App app{"parastack: statistical hang detection for MPI jobs (ParaStack, SC17)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "parastack 0.1.0");
  const auto replay = add_replay_command(app);
  const auto simulate = add_simulate_command(app);
  const auto ranks = add_ranks_command(app);
  const auto stack = add_stack_command(app);
  const auto run = add_run_command(app);
  const auto stacks = add_stacks_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int status = app.exit(e);
    return status == 0 ? kExitOk : kExitUsage;
  }
  try {
    if (app.got_subcommand("replay")) return replay();
    if (app.got_subcommand("simulate")) return simulate();
    if (app.got_subcommand("ranks")) return ranks();
    if (app.got_subcommand("stack")) return stack();
    if (app.got_subcommand("run")) return run();
    if (app.got_subcommand("stacks")) return stacks();
  } catch (const std::exception& e) {
    std::cerr << "parastack: " << e.what() << "\n";
    return kExitUsage;
  }
  return kExitUsage;
}
