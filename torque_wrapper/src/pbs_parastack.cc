// pbs_parastack: qsub, with the job watched by parastack.
//
//   pbs_parastack [qsub options] [script] [-- parastack options]
//
// Submits through the real qsub on PATH a job script of its own (job_script.h): the user's #PBS
// header, then `pbs_parastack --in-job` (in_job.cc), which starts one parastack-monitor per node
// and becomes the user's script. The user's file is read, never written; the generated script
// lives in a private mkdtemp directory only until qsub has read it. qsub's output and exit status
// are pbs_parastack's, so `JOB=$(pbs_parastack job.sh)` works as with qsub. Anything wrong is one
// line and exit status 2, before anything is submitted.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>

#include "cli/commands.h"
#include "cli/job_options.h"
#include "cli/site_config.h"
#include "in_job.h"
#include "job_script.h"
#include "os/run_program.h"
#include "qsub_command_line.h"

#ifndef PARASTACK_MONITOR_PATH
#define PARASTACK_MONITOR_PATH "/usr/local/bin/parastack-monitor"
#endif

namespace parastack::pbs {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr int kExitUsage = cli::kExitUsage;

constexpr const char* kUsage =
    "usage: pbs_parastack [qsub options] [script] [-- parastack options]\n"
    "Submits the job with qsub, watched by parastack for hangs: one monitor per node of the job\n"
    "finds a hang statistically, writes a report next to the job's output (parastack-JOBID.json),\n"
    "mails it to the -M address (else to you) and deletes the job (qdel).\n"
    "qsub options: as qsub takes them, #PBS directives in the script included (-I is refused).\n"
    "parastack options: --NAME=VALUE or --NAME VALUE, as `parastack run` and `sbatch --parastack`\n"
    "take them, e.g. -- --action=report --alpha=0.001; `pbs_parastack -- --help` lists them.\n"
    "Site settings: " PARASTACK_SITE_CONFIG " (PARASTACK_CONFIG names another file).\n";

// The site's settings for pbs_parastack, from the configuration file `parastack run` reads.
struct Site {
  std::string monitor, mpirun = "mpirun", mailer, actions;
  bool mail = true;
  std::string defaults;  // job options, as NAME=VALUE,...
};

std::string self_path() {
  std::error_code error;
  const auto path = fs::read_symlink("/proc/self/exe", error);
  return error ? "pbs_parastack" : path.string();
}

// parastack-monitor: the site's, else the one installed beside this program, else the built-in path.
std::string default_monitor() {
  const auto beside = fs::path(self_path()).parent_path() / "parastack-monitor";
  return ::access(beside.c_str(), X_OK) == 0 ? beside.string() : PARASTACK_MONITOR_PATH;
}

std::variant<Site, std::string> read_site() {
  Site site;
  site.monitor = default_monitor();
  std::string path = cli::kSiteConfig;
  if (const char* chosen = std::getenv("PARASTACK_CONFIG"); chosen && *chosen) {
    path = chosen;
  } else if (!fs::exists(path)) {
    return site;
  }
  auto read = cli::read_site_config(path);
  if (auto* error = std::get_if<std::string>(&read)) return *error;
  // Keys of `parastack run` that are not the watch's own (startup-timeout...) are not pbs_parastack's.
  CLI::App run_app;
  const auto run_command = cli::add_run_command(run_app);  // holds the options a check writes into
  CLI::App* run = run_app.get_subcommand("run");
  run_app.parse(std::vector<std::string>{"run"});
  std::vector<cli::Setting> checked_here;
  for (const auto& s : std::get<std::vector<cli::Setting>>(read)) {
    const std::string where = path + " line " + std::to_string(s.line) + ": ";
    // log-file is `parastack run`'s alone here: a site's log for its users' own runs is no file for
    // every batch job's monitors to append to (a job asks for one itself: -- --log-file=PATH).
    const bool job_option = s.key != "log-file" && std::find(cli::kJobOptions.begin(), cli::kJobOptions.end(), s.key) !=
                                                       cli::kJobOptions.end();
    if (s.key == "monitor" || s.key == "mpirun" || s.key == "mailer") {
      if (s.value.empty() || s.value[0] != '/') {
        if (s.key != "mpirun" || s.value.empty()) return where + s.key + " must be an absolute path";
      }
      (s.key == "monitor" ? site.monitor : s.key == "mpirun" ? site.mpirun : site.mailer) = s.value;
    } else if (s.key == "mail") {
      if (s.value != "yes" && s.value != "no") return where + "mail = yes or mail = no";
      site.mail = s.value == "yes";
    } else if (s.key == "actions") {
      if (s.value.empty() || s.value[0] == '-') return where + "actions = a list of actions, e.g. kill,report";
      site.actions = s.value;
    } else if (job_option) {
      if (s.value.find(',') != std::string::npos) return where + s.key + ": a value with ',' cannot be passed on";
      // An empty value is the default, as for parastack run (`seed = ` was passed on as `seed=`,
      // which the monitors refused for every job).
      if (s.value.empty()) continue;
      site.defaults += (site.defaults.empty() ? "" : ",") + s.key + "=" + s.value;
      if (run->get_option_no_throw("--" + s.key) || s.key == "monitor-timeout") checked_here.push_back(s);
    } else if (!run->get_option_no_throw("--" + s.key)) {
      return where + "unknown setting '" + s.key + "'";
    }
  }
  // The values, by the options parastack run shares with the monitors: a bad one is named with its
  // file and line here, not left to parastack-monitor --check-options, which knows no file.
  if (auto error = cli::apply_site_config(*run, path, checked_here)) return *error;
  return site;
}

// The parastack options after "--" as one NAME=VALUE list (what --job-options takes) in `list`;
// what is wrong with them, or nothing.
std::optional<std::string> job_option_list(const std::vector<std::string>& args, std::string& list, bool& help) {
  std::map<std::string, std::string> given;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      help = true;
      continue;
    }
    if (!arg.starts_with("--") || arg.size() == 2) {
      return ("'" + arg + "': parastack options are --NAME=VALUE (pbs_parastack -- --help lists them)");
    }
    const auto equals = arg.find('=');
    const std::string name = arg.substr(2, equals == std::string::npos ? std::string::npos : equals - 2);
    if (std::find(cli::kJobOptions.begin(), cli::kJobOptions.end(), name) == cli::kJobOptions.end()) {
      return ("--" + name + " is not a parastack option a job may set (pbs_parastack -- --help lists them)");
    }
    std::string value;
    if (equals != std::string::npos) {
      value = arg.substr(equals + 1);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    }
    if (value.empty()) return ("--" + name + " needs a value");
    if (value.find(',') != std::string::npos) return ("--" + name + " " + value + ": a value cannot hold ','");
    if (const auto was = given.find(name); was != given.end() && was->second != value) {
      return ("conflicting options: --" + name + "=" + was->second + " and --" + name + "=" + value);
    }
    given[name] = value;
    list += (list.empty() ? "" : ",") + name + "=" + value;
  }
  return std::nullopt;
}

// Runs a program with our stdin, stdout and stderr; its exit status (-1: could not be run).
int run_attached(const std::vector<std::string>& argv) {
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::cerr << "pbs_parastack: cannot run " << argv[0] << ": " << std::strerror(errno) << "\n";
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string random_hex() {
  std::random_device device;
  std::ostringstream hex;
  hex << std::hex << device() << device() << device();
  return hex.str();
}

int fail(const std::string& message) {
  std::cerr << "pbs_parastack: " << message << "\n";
  return kExitUsage;
}

int submit(const std::vector<std::string>& args) {
  auto parsed = parse_command_line(args);
  if (auto* error = std::get_if<std::string>(&parsed)) return fail(*error);
  QsubCommandLine line = std::get<QsubCommandLine>(parsed);
  if (line.help) {
    std::cout << kUsage;
    return 0;
  }
  if (line.version) {
    std::cout << "pbs_parastack " PARASTACK_VERSION "\n";
    return 0;
  }
  bool list_options = false;
  std::string job_options;
  if (auto error = job_option_list(line.parastack_args, job_options, list_options)) return fail(*error);
  auto site_read = read_site();
  if (auto* error = std::get_if<std::string>(&site_read)) return fail(*error);
  const Site site = std::get<Site>(site_read);
  if (list_options) return run_attached({site.monitor, "--list-options"}) == 0 ? 0 : kExitUsage;

  if (line.interactive) {
    return fail(
        "-I: an interactive job cannot be watched by pbs_parastack; inside it, run your program as "
        "`parastack run -- mpirun ...`");
  }
  if (!os::on_path("qsub")) return fail("no qsub on PATH: pbs_parastack submits through qsub (Torque, PBS)");

  // The script: read once, as qsub would (a file, or stdin), never written.
  std::string text;
  if (line.script) {
    std::ifstream in(*line.script, std::ios::binary);
    if (!in || fs::is_directory(*line.script)) {
      return fail("cannot read the script " + *line.script + ": " + std::strerror(errno ? errno : EISDIR));
    }
    std::stringstream all;
    all << in.rdbuf();
    text = all.str();
  } else {
    std::stringstream all;
    all << std::cin.rdbuf();
    text = all.str();
  }
  const std::string shown = line.script.value_or("the script on stdin");
  if (text.find('\0') != std::string::npos) return fail(shown + " is not a text script (it holds a NUL byte)");
  const ScriptParts parts = split_script(text, line.directive_prefix);
  if (auto error = apply_directives(parts.directives, line)) return fail(shown + ": " + *error);
  if (line.interactive) return fail(shown + " asks for -I: an interactive job cannot be watched by pbs_parastack");
  if (line.shell && !runs_the_wrapper(*line.shell)) {
    return fail("-S " + *line.shell + ": pbs_parastack's job script must be run by a shell (sh, bash, csh...); name " +
                "the interpreter in the script's #! line instead");
  }

  // The monitors' options, judged now by parastack-monitor itself: a typo is refused here.
  std::vector<std::string> monitor{site.monitor, "--log-level", "error", "--hang-exit-status", "0"};
  if (site.mail) {
    monitor.push_back("--mail");
    if (!site.mailer.empty()) monitor.insert(monitor.end(), {"--mailer", site.mailer});
    if (!line.mail_users.empty()) monitor.insert(monitor.end(), {"--mail-to", line.mail_users});
  }
  if (!site.actions.empty()) monitor.insert(monitor.end(), {"--allowed-actions", site.actions});
  if (!site.defaults.empty()) monitor.insert(monitor.end(), {"--job-options", site.defaults});
  if (!job_options.empty()) monitor.insert(monitor.end(), {"--job-options", job_options});
  std::vector<std::string> check = monitor;
  check.push_back("--check-options");
  if (const int status = run_attached(check); status != 0) {
    return fail(status == 127 ? "parastack-monitor (" + site.monitor + ") cannot be run; is parastack installed?"
                              : "parastack options refused (pbs_parastack -- --help lists them)");
  }

  const std::string marker = end_marker(text, random_hex());
  std::vector<std::string> runner{self_path(), "--in-job", "--end-marker", marker};
  if (line.shell) {
    runner.insert(runner.end(), {"--shell", *line.shell});
  } else if (!parts.has_interpreter) {
    runner.push_back("--login-shell");  // Torque's rule for a script without #!
  }
  for (const auto& a : line.script_args) runner.insert(runner.end(), {"--arg", a});
  runner.insert(runner.end(), {"--mpirun", site.mpirun, "--"});
  runner.insert(runner.end(), monitor.begin(), monitor.end());
  for (const auto& word : runner) {
    if (!quote(word)) return fail("'" + word + "' cannot be passed to the job (a newline or '!' in it)");
  }

  // The generated script, under the user's script's own name (qsub names the job and its output
  // files after it), in a directory nobody else can enter, removed once qsub has read it.
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/pbs_parastack-XXXXXX";
  if (!::mkdtemp(pattern.data()))
    return fail("cannot create a private directory in " + pattern + ": " + std::strerror(errno));
  const fs::path dir = pattern;
  const fs::path generated = dir / (line.script ? fs::path(*line.script).filename() : fs::path("STDIN"));
  int status = kExitUsage;
  {
    std::ofstream out(generated, std::ios::binary);
    out << wrapper_script(parts, line.script ? fs::absolute(*line.script).string() : "(stdin)", runner, text, marker);
    out.close();
    if (!out) {
      std::cerr << "pbs_parastack: cannot write " << generated << "\n";
    } else {
      ::chmod(generated.c_str(), 0700);
      std::vector<std::string> qsub{"qsub"};
      qsub.insert(qsub.end(), line.qsub_args.begin(), line.qsub_args.end());
      qsub.push_back(generated.string());
      status = run_attached(qsub);
    }
  }
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  return status;
}

}  // namespace
}  // namespace parastack::pbs

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (!args.empty() && args[0] == "--in-job") return parastack::pbs::run_in_job({args.begin() + 1, args.end()});
    return parastack::pbs::submit(args);
  } catch (const std::exception& e) {
    std::cerr << "pbs_parastack: " << e.what() << "\n";
    return parastack::cli::kExitUsage;
  }
}
