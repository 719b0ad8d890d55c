// parastack config: the site configuration file with every setting commented out at its default,
// made from the options themselves, so that it never drifts from them. The build installs its
// output as etc/parastack/parastack.conf; an admin starts from it.
#include <iostream>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "cli/site_config.h"

namespace parastack::cli {
namespace {

// `text` as "# " comment lines of at most 80 columns.
std::string comment(const std::string& text) {
  std::istringstream words(text);
  std::string out, line;
  for (std::string word; words >> word;) {
    if (!line.empty() && line.size() + 1 + word.size() > 78) {
      out += "# " + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) out += "# " + line + "\n";
  return out;
}

struct SchedulerSetting {
  const char* key;
  const char* example;
  const char* help;
};

// kSchedulerSettings, described (pbs_parastack reads them; the SPANK plugin takes its own from
// plugstack.conf, parastack-spank(8)).
constexpr SchedulerSetting kSchedulerHelp[] = {
    {"monitor", PARASTACK_MONITOR_PATH, "The monitor program jobs start (default: the one beside pbs_parastack)."},
    {"mpirun", "mpirun", "The mpirun that starts one monitor per node of a job (default: mpirun on the job's PATH)."},
    {"mail", "yes", "Mail the report of a hang to the job's owner (-M, else the user): yes or no."},
    {"mailer", "/usr/sbin/sendmail", "A sendmail-compatible program, an absolute path, run as the job's user."},
    {"actions", "kill,report,stop", "The actions jobs may choose on a hang (default: all of them)."},
};

}  // namespace

std::string site_config_template() {
  CLI::App app;
  add_run_command(app);
  const CLI::App* run = app.get_subcommand("run");
  std::string out = comment(std::string(kSiteConfig) +
                            ": parastack's site settings (parastack.conf(5)). One `key = value` per line; "
                            "`#` starts a comment. The keys are the long options of `parastack run` (and of "
                            "`sbatch --parastack=...` and pbs_parastack); a user's own options override them. "
                            "An unknown key or a bad value is an error naming the line. Every setting is shown "
                            "commented out at its default.");
  for (const CLI::Option* option : run->get_options()) {
    const auto& names = option->get_lnames();
    if (names.empty() || names.front() == "help" || names.front() == "config") continue;
    out += "\n" + comment(option->get_description());
    // Each line must stand as it is once uncommented: a flag's "no" is false (it has no default
    // string, and `mpi-progress = ` could not be read back).
    const std::string value = option->get_expected_max() == 0 && option->get_default_str().empty()
                                  ? std::string("false")
                                  : option->get_default_str();
    out += "# " + names.front() + " = " + value + "\n";
  }
  // The batch jobs' monitors' own (parastack run has one node, no other monitors to wait for).
  CLI::App theirs;
  double monitor_timeout = 60;
  const CLI::Option* timeout = add_monitor_timeout_option(theirs, monitor_timeout);
  out += "\n" + comment(timeout->get_description() + " (batch jobs; parastack run checks it and skips it)");
  out += "# monitor-timeout = " + timeout->get_default_str() + "\n";
  out += "\n" + comment("Settings of the scheduler integrations (pbs_parastack); parastack run skips them.");
  for (const auto& s : kSchedulerHelp) out += "\n" + comment(s.help) + "# " + s.key + " = " + s.example + "\n";
  return out;
}

std::function<int()> add_config_command(CLI::App& app) {
  app.add_subcommand("config",
                     "Print the site configuration file (parastack.conf) with every setting commented out "
                     "at its default: parastack config > " +
                         std::string(kSiteConfig));
  return [] {
    std::cout << site_config_template();
    return kExitOk;
  };
}

}  // namespace parastack::cli
