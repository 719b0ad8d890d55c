#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace {

// CLI11's words for an argument it could not place are about the wrong argument: after an unknown
// option (`run --alpah 0.01 -- mpirun -np 4 ./app`) it lists the command's words as unexpected,
// backwards, and never names --alpah; `runn` is "A subcommand is required". Said here in words
// that name what is wrong, or nothing (CLI11's own message then stands).
std::string what_went_wrong(const CLI::App& app, const std::vector<std::string>& args, const CLI::ParseError& e) {
  if (args.empty()) return "";
  const CLI::App* command = nullptr;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->check_name(args.front())) command = sub;
  }
  if (!command) {
    if (args.front().starts_with('-')) return "";
    return "unknown command '" + args.front() + "' (parastack --help lists them)";
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e) == nullptr) return "";
  const auto separator = std::find(args.begin(), args.end(), "--");
  const bool run = command->get_name() == "run";
  const std::string after_separator =
      "the command to watch goes after '--': parastack run [options] -- mpirun -np N ./app";
  if (run && separator == args.end() && args.size() > 1 && !args[1].starts_with('-')) return after_separator;
  for (auto it = args.begin() + 1; it != separator; ++it) {
    if (!it->starts_with('-') || *it == "-") continue;
    const std::string name = it->substr(0, it->find('='));
    if (!command->get_option_no_throw(name)) {
      return "unknown option '" + name + "' (parastack " + args.front() + " --help lists them)" +
             (run && separator == args.end() ? "; " + after_separator : "");
    }
  }
  if (run && separator == args.end()) return after_separator;
  return "";
}

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
    if (const std::string words = what_went_wrong(app, {argv + 1, argv + argc}, e); !words.empty()) {
      std::cerr << "parastack: " << words << "\n";
      return kExitUsage;
    }
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
