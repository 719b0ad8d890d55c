#include "support/slurm_cluster.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/mpi_job.h"

namespace parastack::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const std::string kClusterScript = PARASTACK_SOURCE_DIR "/tests/slurm/cluster.sh";

std::string field(const std::string& record, const std::string& name) {
  std::istringstream words(record);
  for (std::string word; words >> word;) {
    if (word.rfind(name + "=", 0) == 0) return word.substr(name.size() + 1);
  }
  return {};
}

}  // namespace

std::optional<std::string> SlurmCluster::unavailable() {
  if (::geteuid() != 0) return "a test cluster needs root";
  for (const char* tool : {"/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/sbatch", "/usr/sbin/munged"}) {
    if (::access(tool, X_OK) != 0)
      return std::string(tool) + " is not installed (packaging/bootstrap.sh test installs it)";
  }
  return std::nullopt;
}

SlurmCluster::SlurmCluster(int nodes, const std::vector<std::string>& binaries) {
  char pattern[] = "/tmp/parastack-slurm-XXXXXX";
  if (!::mkdtemp(pattern)) throw std::runtime_error("mkdtemp failed");
  const fs::path scratch = pattern;
  dir_ = scratch / "cluster";
  // From here on whatever goes wrong takes the cluster down: a constructor that throws runs no
  // destructor, and cluster.sh's own cleanup does not run if it is killed for taking too long.
  try {
    // Slurm's daemons and the job's user must reach the cluster's directory.
    fs::permissions(scratch, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                 fs::perms::others_read | fs::perms::others_exec);
    {
      ChildProcess up({kClusterScript, "up", dir_.string(), std::to_string(nodes)},
                      ChildOptions{{}, (scratch / "up.log").string(), (scratch / "up.log").string(), {}});
      if (up.wait_exit(180s) != 0)
        throw std::runtime_error("the Slurm cluster did not come up:\n" + read_file(scratch / "up.log"));
    }
    std::istringstream env(read_file(dir_ / "env.sh"));
    for (std::string line; std::getline(env, line);) {
      // "export A=1 B='x'": the variables the user's commands need.
      std::istringstream words(line);
      std::string word;
      words >> word;
      while (words >> word) {
        std::string value = word;
        value.erase(std::remove(value.begin(), value.end(), '\''), value.end());
        environment_.push_back(value);
      }
    }
    fs::create_directories(bin());
    for (const auto& binary : binaries) {
      const auto to = bin() / fs::path(binary).filename();
      fs::copy_file(binary, to, fs::copy_options::overwrite_existing);
      fs::permissions(to, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
    }
    fs::permissions(bin(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
  } catch (...) {
    down();
    throw;
  }
}

SlurmCluster::~SlurmCluster() { down(); }

void SlurmCluster::down() noexcept {
  const auto scratch = dir_.parent_path();
  try {
    // cluster.sh down finds whatever part of the cluster is there (none at all is fine).
    ChildProcess down({kClusterScript, "down", dir_.string()},
                      ChildOptions{{}, (scratch / "down.log").string(), (scratch / "down.log").string(), {}});
    down.wait_exit(120s);
  } catch (...) {
  }
  std::error_code ignored;
  fs::remove_all(scratch, ignored);
}

std::string SlurmCluster::plugstack_line(const std::string& plugin_arguments) const {
  const char* installed = std::getenv("PARASTACK_INSTALLED_PLUGIN");
  const std::string plugin = installed && *installed ? std::string(installed)
                                                     : (bin() / "parastack.so").string() +
                                                           " monitor=" + (bin() / "parastack-monitor").string();
  return "required " + plugin + (plugin_arguments.empty() ? "" : " " + plugin_arguments) + "\n";
}

void SlurmCluster::set_plugstack(const std::string& plugin_arguments) {
  std::ofstream(dir_ / "etc" / "plugstack.conf") << plugstack_line(plugin_arguments);
}

std::string SlurmCluster::most_monitor_steps_while_background_jobs_run() {
  return "most=0\n"
         "while [ -n \"$(jobs -r)\" ]; do\n"
         "  n=$(squeue -h -s -j $SLURM_JOB_ID -o %j | grep -c '^parastack$')\n"
         "  [ $n -gt $most ] && most=$n\n"
         "  sleep 0.2\n"
         "done\n";
}

void SlurmCluster::set_plugstack_text(const std::string& text) {
  std::ofstream(dir_ / "etc" / "plugstack.conf") << text;
}

namespace {
SlurmCluster::Result run_in(const std::vector<std::string>& command, const std::vector<std::string>& environment,
                            const std::filesystem::path& directory) {
  TempDir output;
  ChildProcess child(command, ChildOptions{environment, (output.path() / "out").string(),
                                           (output.path() / "err").string(), directory.string()});
  SlurmCluster::Result result;
  result.status = child.wait_exit(120s);
  result.out = read_file(output.path() / "out");
  result.err = read_file(output.path() / "err");
  return result;
}
}  // namespace

SlurmCluster::Result SlurmCluster::as_user(const std::vector<std::string>& argv) const {
  std::vector<std::string> command{"runuser", "-u", user(), "--"};
  command.insert(command.end(), argv.begin(), argv.end());
  return run_in(command, environment_, jobs());
}

SlurmCluster::Result SlurmCluster::as_admin(const std::vector<std::string>& argv) const {
  return run_in(argv, environment_, jobs());
}

std::unique_ptr<ChildProcess> SlurmCluster::start_as_user(const std::vector<std::string>& argv, const std::string& out,
                                                          const std::string& err) const {
  std::vector<std::string> command{"runuser", "-u", user(), "--"};
  command.insert(command.end(), argv.begin(), argv.end());
  return std::make_unique<ChildProcess>(
      command, ChildOptions{environment_, (jobs() / out).string(), (jobs() / err).string(), jobs().string()});
}

std::string SlurmCluster::script(const std::string& name, const std::string& body) const {
  const auto path = jobs() / name;
  std::ofstream(path) << "#!/bin/bash\n" << body;
  const passwd* pw = ::getpwnam(user().c_str());
  if (!pw || ::chown(path.c_str(), pw->pw_uid, pw->pw_gid) != 0) throw std::runtime_error("chown " + path.string());
  fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
  return path.string();
}

std::string SlurmCluster::submit(const std::vector<std::string>& args) const {
  std::vector<std::string> argv{"sbatch", "--parsable"};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto result = as_user(argv);
  std::string id = result.out.substr(0, result.out.find_first_of(";\n"));
  if (result.status != 0 || id.empty()) {
    throw std::runtime_error("sbatch failed (" + std::to_string(result.status) + "): " + result.err);
  }
  return id;
}

SlurmJob SlurmCluster::job(const std::string& id) const {
  SlurmJob job{id, {}, {}};
  job.record = as_user({"scontrol", "show", "job", "-o", id}).out;
  job.state = field(job.record, "JobState");
  return job;
}

namespace {
// An empty state is a transient failure to ask (seen under load): the job counts as not ended.
bool active_state(const std::string& state) {
  return state.empty() || state == "PENDING" || state == "RUNNING" || state == "CONFIGURING" || state == "COMPLETING";
}
}  // namespace

bool SlurmCluster::job_active(const std::string& id) const { return active_state(job(id).state); }

SlurmJob SlurmCluster::wait_ended(const std::string& id, int timeout_seconds) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  while (true) {
    auto j = job(id);
    if (!active_state(j.state)) return j;
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("job " + id + " still " + j.state + " after " + std::to_string(timeout_seconds) + " s");
    }
    std::this_thread::sleep_for(200ms);
  }
}

std::string SlurmCluster::steps(const std::string& id) const {
  return as_user({"squeue", "-h", "-s", "-j", id, "-o", "%i %j"}).out;
}

std::vector<std::string> SlurmCluster::leftovers(const std::string& id) const {
  std::vector<std::string> found;
  const passwd* pw = ::getpwnam(user().c_str());
  const std::string conf = "SLURM_CONF=" + (dir_ / "etc" / "slurm.conf").string() + '\0';
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream status(entry.path() / "status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("Uid:", 0) == 0) {
        std::istringstream fields(line.substr(4));
        unsigned uid = 0;
        fields >> uid;
        // The user's processes of this cluster's jobs carry its SLURM_CONF (the job's environment).
        if (pw && uid == pw->pw_uid && read_file(entry.path() / "environ").find(conf) != std::string::npos) {
          found.push_back("process " + name + ": " + read_file(entry.path() / "comm"));
        }
        break;
      }
    }
  }
  // This cluster's cgroups: cluster.sh gives each node a freezer subtree slurm_CLUSTER_NODE.
  std::string cluster;
  for (const auto& variable : environment_) {
    if (variable.rfind("PS_CLUSTER=", 0) == 0) cluster = variable.substr(11);
  }
  std::error_code ignored;
  for (const auto& node : fs::directory_iterator("/sys/fs/cgroup/freezer", ignored)) {
    if (node.path().filename().string().rfind("slurm_" + cluster + "_", 0) != 0) continue;
    for (auto it = fs::recursive_directory_iterator(node.path(), ignored); it != fs::recursive_directory_iterator();
         it.increment(ignored)) {
      if (it->path().filename() == "job_" + id) found.push_back("cgroup " + it->path().string());
    }
  }
  return found;
}

}  // namespace parastack::testing
