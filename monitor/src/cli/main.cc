#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"

namespace {

int dispatch(int argc, char** argv) {
  using namespace parastack::cli;
  CLI::App app{"parastack: statistical hang detection for MPI jobs (ParaStack, SC17)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "parastack " PARASTACK_VERSION);
  const auto replay = add_replay_command(app);
  const auto simulate = add_simulate_command(app);
  const auto ranks = add_ranks_command(app);
  const auto stack = add_stack_command(app);
  const auto run = add_run_command(app);
  const auto stacks = add_stacks_command(app);
  const auto config = add_config_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int status = app.exit(e);
    return status == 0 ? kExitOk : kExitUsage;
  }
  if (app.got_subcommand("replay")) return replay();
  if (app.got_subcommand("simulate")) return simulate();
  if (app.got_subcommand("ranks")) return ranks();
  if (app.got_subcommand("stack")) return stack();
  if (app.got_subcommand("run")) return run();
  if (app.got_subcommand("stacks")) return stacks();
  if (app.got_subcommand("config")) return config();
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return dispatch(argc, argv);
  } catch (const std::exception& e) {
    // What a command could not handle itself; its RAII types have detached and cleaned up.
    std::cerr << "parastack: " << e.what() << "\n";
    return parastack::cli::kExitUsage;
  }
}
