// `sbatch --parastack` end to end: a real slurmctld, slurmd and munged (tests/slurm/cluster.sh),
// jobs submitted by an unprivileged user, real Open MPI jobs launched with srun and mpirun (and
// MPICH's with srun --mpi=pmi2 and mpiexec.hydra), real hangs, real mail (exim's local delivery to
// /var/mail/pstest). After every job: no process of the user and no cgroup of the job is left.
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "support/mpi_job.h"
#include "support/slurm_cluster.h"
#include "support/watch_log.h"

namespace parastack {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::read_file;
using testing::SlurmCluster;

// The MPICH build of the solver and its fault injector (tests/programs/CMakeLists.txt): only when
// MPICH was installed before the build was configured.
bool have_mpich() {
  return ::access(testing::test_program("ps_solver_mpich").c_str(), X_OK) == 0 &&
         ::access(testing::test_program("libps_fault_mpich.so").c_str(), R_OK) == 0;
}

std::vector<std::string> binaries() {
  std::vector<std::string> files{PARASTACK_BIN,
                                 PARASTACK_MONITOR_BIN,
                                 PARASTACK_SPANK_PLUGIN,
                                 testing::test_program("ps_solver"),
                                 testing::test_program("libps_fault.so"),
                                 testing::test_program("ps_progress"),
                                 PARASTACK_PROGRESS_LIB};
  if (have_mpich()) {
    files.push_back(testing::test_program("ps_solver_mpich"));
    files.push_back(testing::test_program("libps_fault_mpich.so"));
  }
  return files;
}

// Waits until nothing of the job is left (its cgroups go a moment after the job ends).
void expect_nothing_left(const SlurmCluster& cluster, const std::string& id) {
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  std::vector<std::string> left;
  while (!(left = cluster.leftovers(id)).empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(200ms);
  }
  std::string list;
  for (const auto& l : left) list += l + "\n";
  EXPECT_TRUE(left.empty()) << "left behind by job " << id << ":\n" << list;
}

// The user's monitors' own Open MPI session directories in /tmp (the jobs' TMPDIR here).
std::set<std::string> monitor_session_directories() {
  std::set<std::string> found;
  const passwd* user = ::getpwnam(SlurmCluster::user().c_str());
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator("/tmp", ignored)) {
    struct stat owner {};
    const std::string name = entry.path().filename();
    if (user && name.rfind("parastack-monitors.", 0) == 0 && ::stat(entry.path().c_str(), &owner) == 0 &&
        owner.st_uid == user->pw_uid) {
      found.insert(name);
    }
  }
  return found;
}

std::string mailbox() { return read_file("/var/mail/" + SlurmCluster::user()); }

// Waits for a job of solver_script() to end and expects it to have run to its own end untouched:
// COMPLETED with exit code 0, the solver's closing line and the launcher's status 0 in its output
// (file `out` in the jobs' directory), which it returns. `context` (the job's stderr, say) is shown
// when the job did not complete.
std::string expect_ran_to_its_end(
    const SlurmCluster& cluster, const std::string& id, const std::string& out,
    const std::function<std::string()>& context = [] { return std::string(); }) {
  const auto job = cluster.wait_ended(id, 300);
  EXPECT_EQ(job.state, "COMPLETED") << job.record << context();
  EXPECT_NE(job.record.find("ExitCode=0:0"), std::string::npos) << job.record;
  const std::string output = read_file(cluster.jobs() / out);
  EXPECT_NE(output.find("iterations "), std::string::npos) << output;
  EXPECT_NE(output.find("launcher-status=0"), std::string::npos) << output;
  return output;
}

// A job script: the solver under `launcher`, the fault injector armed by a trigger file when
// `fault` is set, then the job's step names (the monitors' step is "parastack"). Open MPI's build
// under "srun" (--mpi=pmix) or "mpirun"; MPICH's under "srun-mpich" (--mpi=pmi2) or "hydra"
// (mpiexec.hydra, which starts its proxies with srun), as sites of the MPICH family (Intel MPI,
// MVAPICH, Cray MPICH) launch: no Open MPI in the ranks, which are known by PMI_RANK.
std::string solver_script(const SlurmCluster& cluster, const std::string& launcher, int seconds,
                          const std::string& fault = "", int rank = 0, const std::string& environment = "") {
  const bool mpich = launcher == "srun-mpich" || launcher == "hydra";
  const std::string command = launcher == "srun"     ? "srun --mpi=pmix"
                              : launcher == "mpirun" ? "mpirun"
                              : launcher == "hydra"  ? "mpiexec.hydra -n $SLURM_NTASKS"
                                                     : "srun --mpi=pmi2";
  std::string body = "export OMPI_MCA_mpi_yield_when_idle=1\n" + environment;
  if (!fault.empty()) {
    body += "export LD_PRELOAD=" + (cluster.bin() / (mpich ? "libps_fault_mpich.so" : "libps_fault.so")).string() +
            " PS_FAULT_KIND=" + fault + " PS_FAULT_RANK=" + std::to_string(rank) +
            " PS_FAULT_AFTER_SECONDS=1e9 PS_FAULT_TRIGGER_FILE=" + (cluster.jobs() / ("fire." + fault)).string() + "\n";
  }
  body += command + " " + (cluster.bin() / (mpich ? "ps_solver_mpich" : "ps_solver")).string() + " blocking " +
          std::to_string(seconds) + "\n";
  body += "echo launcher-status=$?\nsqueue -h -s -j $SLURM_JOB_ID -o 'step %j'\n";
  return cluster.script(launcher + "-" + (fault.empty() ? "healthy" : fault) + ".sh", body);
}

class SlurmPlugin : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (SlurmCluster::unavailable()) return;
    try {
      cluster_ = new SlurmCluster(0, binaries());
    } catch (const std::exception& e) {
      problem_ = e.what();
    }
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override {
    if (auto why = SlurmCluster::unavailable()) GTEST_SKIP() << "no Slurm cluster here: " << *why;
    ASSERT_NE(cluster_, nullptr) << problem_;
    cluster_->set_plugstack("");
  }
  SlurmCluster& cluster() { return *cluster_; }

  // What the job's stderr says after the verdict's line, one part of each line.
  std::vector<std::string> error_lines_;

  // Runs a healthy job (8 ranks unless told) to its end; the job's output.
  std::string run_healthy(const std::string& launcher, const std::vector<std::string>& parastack, int ranks = 8) {
    std::vector<std::string> args{"-n", std::to_string(ranks), "-o", launcher + ".out", "-e", launcher + ".err"};
    args.insert(args.end(), parastack.begin(), parastack.end());
    args.push_back(solver_script(cluster(), launcher, 15));
    const auto id = cluster().submit(args);
    const std::string out = expect_ran_to_its_end(cluster(), id, launcher + ".out");
    EXPECT_EQ(read_file(cluster().jobs() / (launcher + ".err")), "") << "a healthy job's stderr stays its own";
    EXPECT_FALSE(std::filesystem::exists(cluster().jobs() / ("parastack-" + id + ".json")));
    EXPECT_FALSE(std::filesystem::exists(cluster().jobs() / ("parastack-" + id + ".trace.jsonl")));
    expect_nothing_left(cluster(), id);
    return out;
  }

  // Submits a job whose rank hangs once both models are ready; waits for its end; its report.
  json run_hang(const std::string& fault, int rank, const std::vector<std::string>& extra, std::string& id,
                const std::string& launcher = "srun") {
    // A fresh start: an earlier job's "model built" in FAULT.err, or its trigger, would fire this
    // one at once.
    for (const auto& left : {"fire." + fault, fault + ".err", fault + ".out"}) {
      std::filesystem::remove(cluster().jobs() / left);
    }
    std::vector<std::string> args{"-o", fault + ".out", "-e", fault + ".err", "--parastack=log-level=debug"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(solver_script(cluster(), launcher, 100000, fault, rank));
    id = cluster().submit(args);
    const auto err = cluster().jobs() / (fault + ".err");
    testing::await_models([&] { return read_file(err); }, [&] { return cluster().job_active(id); }, 40);
    std::ofstream(cluster().jobs() / ("fire." + fault)).put('\n');
    const auto job = cluster().wait_ended(id, 600);
    EXPECT_EQ(job.state, "CANCELLED") << job.record << read_file(err);
    EXPECT_NE(job.record.find("Comment=parastack: hang"), std::string::npos) << job.record;
    EXPECT_NE(read_file(err).find("report: " + (cluster().jobs() / ("parastack-" + id + ".json")).string()),
              std::string::npos)
        << "the job's stderr says where the report is";
    // At the monitors' default level (error), the job's stderr gets one line from parastack: the
    // verdict with the report's path (and then one more for each thing that failed, which a test
    // expects in error_lines_). Nor does the monitors' srun add one (it would for a monitor's
    // non-zero exit).
    std::istringstream lines(read_file(err));
    const std::regex error_line(R"(^parastack [0-9:.]+ error: .*)");
    std::vector<std::string> errors;
    for (std::string line; std::getline(lines, line);) {
      if (std::regex_match(line, error_line)) errors.push_back(line);
      EXPECT_EQ(line.find("Exited with exit code"), std::string::npos) << line;
    }
    EXPECT_EQ(errors.size(), 1 + error_lines_.size()) << read_file(err);
    if (!errors.empty()) {
      EXPECT_NE(errors[0].find("job " + id + " hung: "), std::string::npos) << errors[0];
    }
    for (std::size_t i = 1; i < errors.size() && i <= error_lines_.size(); ++i) {
      EXPECT_NE(errors[i].find(error_lines_[i - 1]), std::string::npos) << errors[i];
    }
    std::ifstream in(cluster().jobs() / ("parastack-" + id + ".json"));
    const json report = json::parse(in, nullptr, false);
    EXPECT_FALSE(report.is_discarded()) << read_file(err);
    expect_nothing_left(cluster(), id);
    return report;
  }

  static SlurmCluster* cluster_;
  static std::string problem_;  // why the cluster did not come up
};
SlurmCluster* SlurmPlugin::cluster_ = nullptr;
std::string SlurmPlugin::problem_;

TEST_F(SlurmPlugin, HelpListsTheOptionsAtSubmission) {
  const auto srun = cluster().as_user({"srun", "--parastack=help", "true"});
  EXPECT_EQ(srun.status, 0) << srun.err;
  EXPECT_NE(srun.out.find("alpha="), std::string::npos) << srun.out;
  EXPECT_NE(srun.out.find("action="), std::string::npos) << srun.out;
  const auto sbatch = cluster().as_user({"sbatch", "--parastack=help"});
  EXPECT_EQ(sbatch.status, 0) << sbatch.err;
  EXPECT_EQ(sbatch.out, srun.out);
  EXPECT_EQ(cluster().as_user({"squeue", "-h", "-u", SlurmCluster::user()}).out, "") << "help queues no job";
}

TEST_F(SlurmPlugin, ABadOptionIsRefusedAtSubmissionWithAClearMessage) {
  for (const auto& [value, message] :
       std::vector<std::pair<std::string, std::string>>{{"alhpa=0.01", "unknown option 'alhpa'"},
                                                        {"action=explode", "explode not in {kill,report,stop}"},
                                                        {"alpha=", "option 'alpha' needs a value"},
                                                        {"report=hangs/%s.json", "'hangs/%s.json' holds %s"}}) {
    const auto sbatch = cluster().as_user({"sbatch", "--parastack=" + value, "--wrap", "true"});
    EXPECT_NE(sbatch.status, 0) << value;
    EXPECT_NE(sbatch.err.find(message), std::string::npos) << sbatch.err;
  }
  cluster().set_plugstack("actions=kill");  // a site that lets jobs only be killed
  const auto report = cluster().as_user({"sbatch", "--parastack=action=report", "--wrap", "true"});
  EXPECT_NE(report.status, 0);
  EXPECT_NE(report.err.find("action=report is not allowed on this cluster"), std::string::npos) << report.err;
  EXPECT_EQ(cluster().as_user({"squeue", "-h", "-u", SlurmCluster::user()}).out, "") << "nothing was queued";
}

// A wrong plugstack.conf argument is the site's mistake: it never stops a submission, with or
// without --parastack, and a job that asked to be watched is told that it is not.
TEST_F(SlurmPlugin, AWrongPlugstackArgumentNeverStopsASubmission) {
  cluster().set_plugstack("no-such-setting=1");
  for (const std::vector<std::string>& option : {std::vector<std::string>{}, {"--parastack"}}) {
    std::vector<std::string> sbatch{"sbatch", "--parsable"};
    sbatch.insert(sbatch.end(), option.begin(), option.end());
    sbatch.insert(sbatch.end(), {"--wrap", "true"});
    const auto submitted = cluster().as_user(sbatch);
    ASSERT_EQ(submitted.status, 0) << submitted.err;
    if (!option.empty()) {
      EXPECT_NE(submitted.err.find("this job runs unwatched"), std::string::npos) << submitted.err;
    }
    const std::string id = submitted.out.substr(0, submitted.out.find_first_not_of("0123456789"));
    const auto job = cluster().wait_ended(id, 300);
    EXPECT_EQ(job.state, "COMPLETED") << job.record;
  }
}

TEST_F(SlurmPlugin, AHealthySrunJobCompletesUntouchedWithMonitorsBesideIt) {
  const auto out = run_healthy("srun", {"--parastack"});
  EXPECT_NE(out.find("step parastack"), std::string::npos) << "the monitors' step ran beside the job:\n" << out;
}

// The leading monitor watches the batch script (the plugin records its pid and start time) and
// ends with it, so the monitors' step ends by itself, before the batch step's end would kill it.
// Nothing signals the monitors and nothing searches for them.
// And they leave no session directory of their own behind in the node's /tmp, where they remove
// the one that monitors killed with an earlier job left.
TEST_F(SlurmPlugin, TheMonitorsEndByThemselvesWhenTheBatchScriptEnds) {
  const auto stale = testing::stale_monitors_session_directory("/tmp", SlurmCluster::user());
  const auto directories_before = monitor_session_directories();
  const auto id = cluster().submit({"-n", "4", "-o", "ends.out", "-e", "ends.err", "--parastack=log-level=info",
                                    solver_script(cluster(), "srun", 5)});
  const auto job = cluster().wait_ended(id, 300);
  EXPECT_EQ(job.state, "COMPLETED") << job.record;
  const std::string err = read_file(cluster().jobs() / "ends.err");
  EXPECT_NE(err.find(") has ended: monitoring ends with it"), std::string::npos) << err;
  for (const char* killed : {"Killed", "CANCELLED", "Terminated", "Exited with exit code"}) {
    EXPECT_EQ(err.find(killed), std::string::npos) << err;
  }
  expect_nothing_left(cluster(), id);
  std::string left;
  for (const auto& name : monitor_session_directories()) {
    if (!directories_before.count(name)) left += " /tmp/" + name;
  }
  EXPECT_EQ(left, "") << "the monitors' session directories outlived them";
  EXPECT_FALSE(std::filesystem::exists(stale)) << stale << ": a killed job's monitors' directory was kept";
  std::error_code ignored;
  std::filesystem::remove_all(stale, ignored);
}

// log-file=: the monitors' log goes to the file (at info), the job's stderr stays its own; a file
// they cannot open ends the monitors, never the job, and the job's stderr says why. The path's
// patterns are sbatch -o's (one #SBATCH line for every job of a script): %j the job's id, %A and %a
// an array task's array and index (the job is an array of one task, index 3, which takes the
// array's id); its missing directory is made.
TEST_F(SlurmPlugin, TheMonitorsLogToTheJobsLogFileAndOneTheyCannotOpenLeavesTheJobRunning) {
  const auto not_a_directory = cluster().jobs() / "not-a-directory";
  std::ofstream(not_a_directory) << "a file\n";
  std::filesystem::remove_all(cluster().jobs() / "logs");
  for (const bool can_open : {true, false}) {
    SCOPED_TRACE(can_open ? "a log file" : "a log file under a file");
    const std::string path = can_open ? (cluster().jobs() / "logs" / "monitors-%A_%a-%j.log").string()
                                      : (not_a_directory / "monitors.log").string();
    const auto id = cluster().submit({"-n", "4", "--array=3", "-o", "logged.out", "-e", "logged.err",
                                      "--parastack=log-file=" + path, solver_script(cluster(), "srun", 5)});
    const auto log = cluster().jobs() / "logs" / ("monitors-" + id + "_3-" + id + ".log");
    expect_ran_to_its_end(cluster(), id, "logged.out");
    const std::string err = read_file(cluster().jobs() / "logged.err");
    if (can_open) {
      EXPECT_EQ(err, "") << "a healthy job's stderr stays its own";
      const std::string logged = read_file(log);
      EXPECT_NE(logged.find("found 4 rank(s) of MPI program"), std::string::npos) << logged;
      EXPECT_NE(logged.find(") has ended: monitoring ends with it"), std::string::npos) << logged;
    } else {
      EXPECT_NE(err.find("cannot open the log file " + path), std::string::npos) << err;
      EXPECT_EQ(err.find("MPI_ABORT"), std::string::npos) << "the monitors end before MPI starts:\n" << err;
    }
    expect_nothing_left(cluster(), id);
  }
}

TEST_F(SlurmPlugin, AHealthyMpirunJobCompletesUntouchedWithMonitorsBesideIt) {
  const auto out = run_healthy("mpirun", {"--parastack"});
  EXPECT_NE(out.find("step parastack"), std::string::npos) << out;
}

TEST_F(SlurmPlugin, OffAndNoOptionLeaveTheJobAlone) {
  EXPECT_EQ(run_healthy("srun", {}).find("step parastack"), std::string::npos) << "opt-in site, no option";
  cluster().set_plugstack("enable=all");
  EXPECT_EQ(run_healthy("srun", {"--parastack=off"}).find("step parastack"), std::string::npos) << "opted out";
  EXPECT_NE(run_healthy("srun", {}).find("step parastack"), std::string::npos) << "enable=all watches every job";
}

TEST_F(SlurmPlugin, AComputationHangIsCancelledReportedAndMailedToTheOwner) {
  std::string id;
  // Every cluster numbers its jobs from 1: an earlier run's mail has this very subject.
  const auto mail_before = mailbox().size();
  const json report = run_hang("spin", 5, {"-n", "8"}, id);
  EXPECT_EQ(report["hang_type"], "computation");
  EXPECT_EQ(report["faulty_ranks"], json::array({5}));
  // Local delivery is synchronous in exim's default configuration, but the mailbox is written by
  // another process: wait for it rather than assume.
  const std::string subject = "Subject: parastack: Slurm job " + id + " hung: computation error on rank(s) 5";
  const auto new_mail = [&] { return mailbox().substr(std::min(mail_before, mailbox().size())); };
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (new_mail().find(subject) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_NE(new_mail().find(subject), std::string::npos) << new_mail();
}

// The mail is the last thing done about a hang: a site's mailer that is missing or fails costs the
// mail and nothing else. The job is still cancelled, its report written and its Comment set, and
// its stderr says why no mail came.
TEST_F(SlurmPlugin, AMissingOrFailingMailerCostsOnlyTheMail) {
  for (const std::string mailer : {"/nonexistent/sendmail", "/bin/false"}) {
    SCOPED_TRACE(mailer);
    cluster().set_plugstack("mailer=" + mailer);
    error_lines_ = {"the report could not be mailed to " + SlurmCluster::user() + ": " + mailer};
    const auto mail_before = mailbox().size();  // earlier clusters' jobs had the same ids
    std::string id;
    const json report = run_hang("spin", 5, {"-n", "8"}, id);
    EXPECT_EQ(report["hang_type"], "computation");
    EXPECT_EQ(report["faulty_ranks"], json::array({5}));
    const std::string new_mail = mailbox().substr(std::min(mail_before, mailbox().size()));
    EXPECT_EQ(new_mail.find("parastack: Slurm job " + id + " hung"), std::string::npos) << new_mail;
  }
}

// Sites of the MPICH family (Intel MPI, MVAPICH, Cray MPICH) start their jobs with srun --mpi=pmi2,
// or with their own mpirun, mpiexec.hydra, which starts its proxies with srun: no Open MPI in the
// ranks, which are numbered by PMI_RANK. Each way, a healthy job runs untouched, and a hung one is
// cancelled with its rank named among four distinct ones. (Under hydra every rank also inherits its
// proxy's PMIX_RANK, 0 on one node: until 2026-12-05 all four were "rank 0", and so was the faulty one.)
TEST_F(SlurmPlugin, AnMpichJobUnderSrunOrHydraIsWatchedLikeAnyOther) {
  if (!have_mpich())
    GTEST_FAIL() << "MPICH is not installed, or the test programs were built without it (packaging/bootstrap.sh "
                    "test installs mpich and libmpich-dev before it configures the build)";
  for (const auto& [launcher, faulty] : {std::pair<std::string, int>{"srun-mpich", 2}, {"hydra", 1}}) {
    SCOPED_TRACE(launcher);
    run_healthy(launcher, {"--parastack"}, 4);
    std::string id;
    const json report = run_hang("spin", faulty, {"-n", "4"}, id, launcher);
    EXPECT_EQ(report["hang_type"], "computation");
    EXPECT_EQ(report["faulty_ranks"], json::array({faulty}));
    std::set<int> ranks;
    for (const auto& r : report["ranks"]) ranks.insert(r["rank"].get<int>());
    EXPECT_EQ(ranks, (std::set<int>{0, 1, 2, 3})) << report["ranks"].dump();
  }
}

TEST_F(SlurmPlugin, ADeadlockIsReportedAsACommunicationError) {
  std::string id;
  const json report = run_hang("deadlock", 3, {"-n", "8"}, id);
  EXPECT_EQ(report["hang_type"], "communication");
  EXPECT_EQ(report["faulty_ranks"], json::array());
}

// A job that the scheduler suspends (scontrol suspend; gang scheduling and preemption do it) stands
// still with its monitors, step by step: it is no hang, and once resumed it is watched as before:
// a hang after the resume is found, with its rank, and the job cancelled.
TEST_F(SlurmPlugin, ASuspendedJobIsNoHangAndIsWatchedOnceResumed) {
  std::vector<std::string> args{"-n", "8", "-o", "suspend.out", "-e", "suspend.err", "--parastack=log-level=debug"};
  // Unwatched after the resume, the job would complete: the test then fails, and ends.
  args.push_back(solver_script(cluster(), "srun", 150, "spin", 5));
  const auto id = cluster().submit(args);
  const auto err = cluster().jobs() / "suspend.err";
  testing::await_models([&] { return read_file(err); }, [&] { return cluster().job_active(id); }, 40);
  auto await_state = [&](const std::string& state) {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (cluster().job(id).state != state && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(100ms);
    }
    return cluster().job(id).state;
  };
  const auto suspend = cluster().as_admin({"scontrol", "suspend", id});
  ASSERT_EQ(suspend.status, 0) << suspend.err;
  ASSERT_EQ(await_state("SUSPENDED"), "SUSPENDED") << cluster().job(id).record;
  // Suspended for several times what a hang takes to be found.
  std::this_thread::sleep_for(20s);
  EXPECT_EQ(cluster().job(id).state, "SUSPENDED") << cluster().job(id).record;
  const auto resume = cluster().as_admin({"scontrol", "resume", id});
  ASSERT_EQ(resume.status, 0) << resume.err;
  ASSERT_EQ(await_state("RUNNING"), "RUNNING") << cluster().job(id).record << read_file(err);
  const std::size_t resumed_at = read_file(err).size();
  // Watched again: samples taken after the resume.
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (read_file(err).find("debug: t=", resumed_at) == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_NE(read_file(err).find("debug: t=", resumed_at), std::string::npos) << "no sample after the resume";
  EXPECT_EQ(read_file(err).find("HANG"), std::string::npos) << read_file(err);
  std::ofstream(cluster().jobs() / "fire.spin").put('\n');
  const auto job = cluster().wait_ended(id, 300);
  EXPECT_EQ(job.state, "CANCELLED") << job.record << read_file(err);
  EXPECT_NE(job.record.find("Comment=parastack: hang"), std::string::npos) << job.record;
  EXPECT_EQ(read_file(err).find("monitoring lost"), std::string::npos) << read_file(err);
  std::ifstream in(cluster().jobs() / ("parastack-" + id + ".json"));
  const json report = json::parse(in, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << read_file(err);
  EXPECT_EQ(report["hang_type"], "computation");
  EXPECT_EQ(report["faulty_ranks"], json::array({5}));
  expect_nothing_left(cluster(), id);
}

// `parastack run` in a batch job submitted with --parastack: the batch step's monitors already
// watch it, and parastack run says so (two watchers both sample and both act). Not in a job
// submitted without the option.
TEST_F(SlurmPlugin, ParastackRunInsideAWatchedBatchJobSaysTheJobIsWatchedTwice) {
  const std::string body = "export OMPI_MCA_mpi_yield_when_idle=1 PARASTACK_CONFIG=\n" +
                           (cluster().bin() / "parastack").string() + " run --log-level warn --report " +
                           (cluster().jobs() / "twice-run.json").string() + " -- mpirun -n 2 " +
                           (cluster().bin() / "ps_solver").string() + " blocking 3\necho run-status=$?\n";
  const auto script = cluster().script("twice.sh", body);
  for (const bool watched : {true, false}) {
    SCOPED_TRACE(watched ? "sbatch --parastack" : "sbatch");
    std::vector<std::string> args{"-n", "2", "-o", "twice.out", "-e", "twice.err"};
    if (watched) args.push_back("--parastack");
    args.push_back(script);
    const auto id = cluster().submit(args);
    const auto job = cluster().wait_ended(id, 300);
    EXPECT_EQ(job.state, "COMPLETED") << job.record;
    EXPECT_NE(read_file(cluster().jobs() / "twice.out").find("run-status=0"), std::string::npos)
        << read_file(cluster().jobs() / "twice.out");
    const std::string err = read_file(cluster().jobs() / "twice.err");
    const std::string warning = "job " + id + " is already watched by parastack (sbatch --parastack or pbs_parastack)";
    EXPECT_EQ(err.find(warning) != std::string::npos, watched) << err;
    expect_nothing_left(cluster(), id);
  }
}

TEST_F(SlurmPlugin, AHangUnderMpirunIsFoundToo) {
  std::string id;
  const json report = run_hang("sleep", 2, {"-n", "8"}, id, "mpirun");
  EXPECT_EQ(report["hang_type"], "computation");
  EXPECT_EQ(report["faulty_ranks"], json::array({2}));
}

// --parastack=mpi-progress=on: the batch script gets the progress library in its LD_PRELOAD, its
// mpirun hands it to the ranks, and the report of a rank that skipped a collective names that rank
// from the ranks' own facts (docs/diagnosis.md, "Who is behind").
TEST_F(SlurmPlugin, MpiProgressOnNamesTheRankThatSkippedACollective) {
  const auto script =
      cluster().script("progress.sh", "export OMPI_MCA_mpi_yield_when_idle=1\necho \"preload=$LD_PRELOAD\"\nmpirun " +
                                          (cluster().bin() / "ps_progress").string() +
                                          " --fault skip-collective --fault-rank 3 --fault-after 5\n");
  const auto library = cluster().bin() / "libparastack-progress.so";
  const auto id = cluster().submit({"-n", "8", "-o", "progress.out", "-e", "progress.err",
                                    "--parastack=mpi-progress=on,mpi-progress-library=" + library.string(), script});
  const auto job = cluster().wait_ended(id, 600);
  const auto err = read_file(cluster().jobs() / "progress.err");
  EXPECT_EQ(job.state, "CANCELLED") << job.record << err;
  EXPECT_NE(read_file(cluster().jobs() / "progress.out").find("preload=" + library.string()), std::string::npos);
  std::ifstream in(cluster().jobs() / ("parastack-" + id + ".json"));
  const json report = json::parse(in, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << err;
  EXPECT_EQ(report["hang_type"], "communication");
  EXPECT_EQ(report["least_progressed"]["source"], "mpi-progress") << report["least_progressed"].dump(2);
  EXPECT_EQ(report["least_progressed"]["pages_read"], 8);
  EXPECT_EQ(report["least_progressed"]["ranks"], json::array({3})) << report["least_progressed"].dump(2);
  expect_nothing_left(cluster(), id);
}

// srun --parastack without a watched batch job: the step's first task starts one monitor per node
// of the step, watching that step only; on a hang the step is cancelled (scancel JOB.STEP).
class SlurmSteps : public SlurmPlugin {
 protected:
  // Whether the monitors' step (job name parastack) showed up in squeue while `launcher` ran.
  bool monitor_step_seen_while(testing::ChildProcess& launcher) {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (launcher.running() && std::chrono::steady_clock::now() < deadline) {
      const auto steps = cluster().as_user({"squeue", "-h", "-s", "-u", SlurmCluster::user(), "-o", "%j"}).out;
      if (steps.find("parastack") != std::string::npos) return true;
      std::this_thread::sleep_for(200ms);
    }
    return false;
  }

  // srun ARGS... of the solver on 8 ranks with rank 5 spinning once fired; the report's JSON.
  json run_step_hang(const std::vector<std::string>& launcher, const std::string& name) {
    const auto trigger = cluster().jobs() / ("fire." + name);
    std::filesystem::remove(trigger);
    std::vector<std::string> argv = launcher;
    argv.insert(
        argv.end(),
        {"srun", "--parastack=log-level=debug", "-n", "8", "--mpi=pmix",
         "--export=ALL,OMPI_MCA_mpi_yield_when_idle=1,LD_PRELOAD=" + (cluster().bin() / "libps_fault.so").string() +
             ",PS_FAULT_KIND=spin,PS_FAULT_RANK=5,PS_FAULT_AFTER_SECONDS=1e9,PS_FAULT_TRIGGER_FILE=" + trigger.string(),
         (cluster().bin() / "ps_solver").string(), "blocking", "100000"});
    auto srun = cluster().start_as_user(argv, name + ".out", name + ".err");
    const auto err = cluster().jobs() / (name + ".err");
    testing::await_models([&] { return read_file(err); }, [&] { return srun->running(); }, 40);
    std::ofstream(trigger).put('\n');
    EXPECT_NE(srun->wait_exit(600s), 0) << "the hung step was cancelled: " << read_file(err);
    const std::regex verdict(R"(job ([0-9]+\.[0-9]+) hung: computation error on rank\(s\) 5; report: (\S+))");
    std::smatch found;
    const std::string text = read_file(err);
    EXPECT_TRUE(std::regex_search(text, found, verdict)) << text;
    if (found.empty()) return json();
    const std::string step = found[1];
    EXPECT_EQ(found[2], (cluster().jobs() / ("parastack-" + step + ".json")).string());
    std::ifstream in(found[2].str());
    return json::parse(in, nullptr, false);
  }
};

TEST_F(SlurmSteps, AnSrunFromALoginShellIsWatchedAndItsHangCancelled) {
  const json report = run_step_hang({}, "login");
  ASSERT_FALSE(report.is_discarded());
  EXPECT_EQ(report["faulty_ranks"], json::array({5}));
}

TEST_F(SlurmSteps, AStepInsideSallocIsWatchedAndItsHangCancelled) {
  const json report = run_step_hang({"salloc", "-n", "8"}, "salloc");
  ASSERT_FALSE(report.is_discarded());
  EXPECT_EQ(report["faulty_ranks"], json::array({5}));
}

TEST_F(SlurmSteps, AHealthySrunKeepsItsStatusAndOutputWithMonitorsBesideIt) {
  auto srun = cluster().start_as_user(
      {"srun", "--parastack", "-n", "4", "--mpi=pmix", "--export=ALL,OMPI_MCA_mpi_yield_when_idle=1",
       (cluster().bin() / "ps_solver").string(), "blocking", "10"},
      "healthy-step.out", "healthy-step.err");
  EXPECT_TRUE(monitor_step_seen_while(*srun)) << "a monitors' step ran beside the srun";
  EXPECT_EQ(srun->wait_exit(300s), 0);
  const std::string out = read_file(cluster().jobs() / "healthy-step.out");
  EXPECT_NE(out.find("iterations "), std::string::npos) << out;
  EXPECT_EQ(read_file(cluster().jobs() / "healthy-step.err"), "") << "a healthy step's stderr stays its own";
}

// salloc --parastack hands the option to every step of the allocation: a plain srun in it is
// watched. Here salloc's host is the allocation's node, so an mpirun that salloc runs starts its
// ranks on it in no step, where no monitor can reach them: salloc says so (one line) and the job
// runs as it would without parastack.
TEST_F(SlurmSteps, SallocParastackWatchesItsStepsAndSaysWhatMpirunLeavesUnwatched) {
  const auto told = cluster().as_user({"salloc", "--parastack", "-n", "4", "mpirun", "--oversubscribe",
                                       (cluster().bin() / "ps_solver").string(), "blocking", "5"});
  EXPECT_EQ(told.status, 0) << told.err;
  EXPECT_NE(told.err.find("parastack: the ranks mpirun starts through srun are watched; any it starts on this host "
                          "itself are in no step and are not"),
            std::string::npos)
      << told.err;
  EXPECT_NE(told.out.find("iterations "), std::string::npos) << told.out;

  auto salloc = cluster().start_as_user(
      {"salloc", "--parastack", "-n", "4", "srun", "--mpi=pmix", "--export=ALL,OMPI_MCA_mpi_yield_when_idle=1",
       (cluster().bin() / "ps_solver").string(), "blocking", "10"},
      "salloc-step.out", "salloc-step.err");
  EXPECT_TRUE(monitor_step_seen_while(*salloc)) << "a monitors' step ran beside the plain srun";
  EXPECT_EQ(salloc->wait_exit(300s), 0) << read_file(cluster().jobs() / "salloc-step.err");
  EXPECT_NE(read_file(cluster().jobs() / "salloc-step.out").find("iterations "), std::string::npos);
}

// `parastack run -- srun` in an allocation and from a login shell, with no --parastack anywhere:
// the step's tasks are slurmstepd's children, not srun's (nor parastack's). parastack run finds
// them by the port they carry from their srun (SLURM_SRUN_COMM_PORT) and their job, or srun's
// host; a healthy step passes through with its output and status, a hung one is found, named and
// ended through srun.
TEST_F(SlurmSteps, ParastackRunAroundSrunFindsTheStepsTasks) {
  const auto parastack_run = [&](const std::string& ranks, const std::string& report) {
    return std::vector<std::string>{"salloc",
                                    "-n",
                                    ranks,
                                    "env",
                                    "PARASTACK_CONFIG=",
                                    (cluster().bin() / "parastack").string(),
                                    "run",
                                    "--log-level",
                                    "debug",
                                    "--report",
                                    (cluster().jobs() / report).string(),
                                    "--",
                                    "srun",
                                    "-n",
                                    ranks,
                                    "--mpi=pmix"};
  };
  const auto job_of = [](const std::string& err) {
    std::smatch granted;
    return std::regex_search(err, granted, std::regex("Granted job allocation ([0-9]+)")) ? granted[1].str()
                                                                                          : std::string();
  };

  auto healthy = parastack_run("4", "run-srun-healthy.json");
  healthy.insert(healthy.end(), {"--export=ALL,OMPI_MCA_mpi_yield_when_idle=1",
                                 (cluster().bin() / "ps_solver").string(), "blocking", "10"});
  const auto passed = cluster().as_user(healthy);
  EXPECT_EQ(passed.status, 0) << passed.err;
  EXPECT_NE(passed.out.find("iterations "), std::string::npos) << passed.out;
  EXPECT_NE(passed.err.find("found 4 rank(s) of MPI program"), std::string::npos) << passed.err;
  EXPECT_EQ(passed.err.find("no MPI rank appeared"), std::string::npos) << passed.err;
  const auto healthy_id = job_of(passed.err);
  EXPECT_FALSE(healthy_id.empty()) << passed.err;
  if (!healthy_id.empty()) expect_nothing_left(cluster(), healthy_id);

  // From a login shell srun makes its own allocation, whose id never reaches its /proc environment:
  // its tasks are known by its port and the address slurmd knows its host by, which they carry
  // (SLURM_SRUN_COMM_HOST); a port alone would take another host's srun's tasks too.
  auto login = parastack_run("2", "run-srun-login.json");
  login.erase(login.begin(), login.begin() + 3);  // no salloc
  login.insert(login.end(), {"--export=ALL,OMPI_MCA_mpi_yield_when_idle=1", (cluster().bin() / "ps_solver").string(),
                             "blocking", "5"});
  const auto from_login = cluster().as_user(login);
  EXPECT_EQ(from_login.status, 0) << from_login.err;
  EXPECT_NE(from_login.out.find("iterations "), std::string::npos) << from_login.out;
  EXPECT_NE(from_login.err.find("found 2 rank(s) of MPI program"), std::string::npos) << from_login.err;

  // srun --parastack under it: watched twice, which srun says; the healthy job is untouched.
  auto twice = parastack_run("2", "run-srun-twice.json");
  twice.insert(twice.end(), {"--parastack", "--export=ALL,OMPI_MCA_mpi_yield_when_idle=1",
                             (cluster().bin() / "ps_solver").string(), "blocking", "5"});
  const auto watched_twice = cluster().as_user(twice);
  EXPECT_EQ(watched_twice.status, 0) << watched_twice.err;
  EXPECT_NE(watched_twice.out.find("iterations "), std::string::npos) << watched_twice.out;
  EXPECT_NE(watched_twice.err.find("this srun runs under parastack run (pid "), std::string::npos) << watched_twice.err;
  EXPECT_EQ(passed.err.find("this srun runs under parastack run"), std::string::npos) << "said only with --parastack";
  const auto twice_id = job_of(watched_twice.err);
  if (!twice_id.empty()) expect_nothing_left(cluster(), twice_id);

  const auto trigger = cluster().jobs() / "fire.run-srun";
  std::filesystem::remove(trigger);
  auto hung = parastack_run("8", "run-srun.json");
  hung.insert(
      hung.end(),
      {"--export=ALL,OMPI_MCA_mpi_yield_when_idle=1,LD_PRELOAD=" + (cluster().bin() / "libps_fault.so").string() +
           ",PS_FAULT_KIND=spin,PS_FAULT_RANK=5,PS_FAULT_AFTER_SECONDS=1e9,PS_FAULT_TRIGGER_FILE=" + trigger.string(),
       (cluster().bin() / "ps_solver").string(), "blocking", "100000"});
  auto salloc = cluster().start_as_user(hung, "run-srun.out", "run-srun.err");
  const auto err = cluster().jobs() / "run-srun.err";
  testing::await_models([&] { return read_file(err); }, [&] { return salloc->running(); }, 40);
  std::ofstream(trigger).put('\n');
  EXPECT_EQ(salloc->wait_exit(600s), 3) << "parastack run's status for a hang, through salloc: " << read_file(err);
  std::ifstream in(cluster().jobs() / "run-srun.json");
  const json report = json::parse(in, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << read_file(err);
  EXPECT_EQ(report["faulty_ranks"], json::array({5}));
  EXPECT_EQ(report["ranks"].size(), 8u);
  const auto id = job_of(read_file(err));
  ASSERT_FALSE(id.empty()) << read_file(err);
  expect_nothing_left(cluster(), id);
}

// A batch job watched as a whole (--parastack) whose script runs two srun --parastack steps at once
// (and sruns inherit the option anyway): one set of monitors, the batch step's, and never more.
// (--exact: without it Slurm runs a batch job's steps one after the other, whatever parastack does.)
// Without --parastack on the batch job, each srun --parastack step gets its own.
TEST_F(SlurmSteps, ConcurrentStepsGetNoDuplicateMonitors) {
  const std::string body =
      "export OMPI_MCA_mpi_yield_when_idle=1\n"
      "srun --parastack --exact --mpi=pmix -n 2 " +
      (cluster().bin() / "ps_solver").string() +
      " blocking 8 > /dev/null &\n"
      "srun --parastack --exact --mpi=pmix -n 2 " +
      (cluster().bin() / "ps_solver").string() + " blocking 8 > /dev/null &\n" +
      SlurmCluster::most_monitor_steps_while_background_jobs_run() + "wait\necho most-monitor-steps=$most\n";
  for (const bool whole_job : {true, false}) {
    SCOPED_TRACE(whole_job ? "sbatch --parastack" : "sbatch");
    std::vector<std::string> args{"-n", "8", "-o", "steps.out", "-e", "steps.err"};
    if (whole_job) args.push_back("--parastack");
    args.push_back(cluster().script("steps.sh", body));
    const auto id = cluster().submit(args);
    const auto job = cluster().wait_ended(id, 300);
    EXPECT_EQ(job.state, "COMPLETED") << job.record;
    const std::string out = read_file(cluster().jobs() / "steps.out");
    EXPECT_NE(out.find(whole_job ? "most-monitor-steps=1" : "most-monitor-steps=2"), std::string::npos) << out;
    EXPECT_EQ(read_file(cluster().jobs() / "steps.err"), "");
    expect_nothing_left(cluster(), id);
  }
}

// The usual cluster: salloc on a login host that is none of the allocation's nodes. mpirun then
// starts its daemons on the nodes with srun, a step that gets monitors of its own like any other:
// `salloc --parastack mpirun` is watched, the hang found and the step cancelled. Open MPI sends
// that srun's stderr, the monitors' too, to /dev/null: their log is read from log-file=, and the
// fault fires once their model is built (CI's loaded machine once started them after a fault
// at a fixed 5 s, too late to see the job move: unwatched, as designed, and never found).
TEST(SallocOnTwoNodes, AnMpirunFromALoginHostIsWatchedThroughItsDaemonsStep) {
  if (auto why = SlurmCluster::unavailable()) GTEST_SKIP() << "no Slurm cluster here: " << *why;
  SlurmCluster cluster(2, binaries());
  cluster.set_plugstack("");
  const auto trigger = cluster.jobs() / "fire.login";
  const auto log = cluster.jobs() / "login-monitors.log";
  auto salloc = cluster.start_as_user({"salloc",
                                       "--parastack=log-level=debug,log-file=" + log.string(),
                                       "-N",
                                       "2",
                                       "--ntasks-per-node=2",
                                       "mpirun",
                                       "-x",
                                       "OMPI_MCA_mpi_yield_when_idle=1",
                                       "-x",
                                       "LD_PRELOAD=" + (cluster.bin() / "libps_fault.so").string(),
                                       "-x",
                                       "PS_FAULT_KIND=spin",
                                       "-x",
                                       "PS_FAULT_RANK=3",
                                       "-x",
                                       "PS_FAULT_AFTER_SECONDS=1e9",
                                       "-x",
                                       "PS_FAULT_TRIGGER_FILE=" + trigger.string(),
                                       (cluster.bin() / "ps_solver").string(),
                                       "blocking",
                                       "100000"},
                                      "login.out", "login.err");
  testing::await_models([&] { return read_file(log); }, [&] { return salloc->running(); }, 40);
  std::ofstream(trigger).put('\n');
  EXPECT_NE(salloc->wait_exit(600s), 0) << "the hung step was cancelled: " << read_file(cluster.jobs() / "login.err");
  const std::string monitors = read_file(log);
  EXPECT_NE(monitors.find("2 monitors on node1 node2"), std::string::npos) << monitors;
  EXPECT_NE(monitors.find("HANG detected: computation error, faulty rank(s) 3"), std::string::npos) << monitors;
  // The report of step JOB.0, mpirun's daemons.
  std::filesystem::path report;
  const std::regex report_name(R"(parastack-\d+\.0\.json)");
  for (const auto& entry : std::filesystem::directory_iterator(cluster.jobs())) {
    if (std::regex_match(entry.path().filename().string(), report_name)) report = entry.path();
  }
  ASSERT_FALSE(report.empty()) << read_file(cluster.jobs() / "login.err") << monitors;
  std::ifstream in(report);
  const json found = json::parse(in, nullptr, false);
  ASSERT_FALSE(found.is_discarded());
  EXPECT_EQ(found["hang_type"], "computation");
  EXPECT_EQ(found["faulty_ranks"], json::array({3}));
}

// Two emulated nodes (each slurmd in its own network, UTS, PID and mount namespace): a monitor on
// each, `per_node` ranks on each under `launcher` (solver_script), the faulty rank the second
// node's last. Every rank is found, on its own host, and the faulty one named.
void expect_the_faulty_rank_on_the_second_node_named(const std::string& launcher, int per_node,
                                                     const std::string& environment = "") {
  SlurmCluster cluster(2, binaries());
  cluster.set_plugstack("");
  const int faulty = 2 * per_node - 1;
  const auto id = cluster.submit({"-N", "2", "--ntasks-per-node=" + std::to_string(per_node), "-o", "two.out", "-e",
                                  "two.err", "--parastack=log-level=debug",
                                  solver_script(cluster, launcher, 100000, "spin", faulty, environment)});
  const auto err = cluster.jobs() / "two.err";
  testing::await_models([&] { return read_file(err); }, [&] { return cluster.job_active(id); }, 40);
  EXPECT_NE(read_file(err).find("2 monitors on node1 node2"), std::string::npos) << read_file(err);
  std::ofstream(cluster.jobs() / "fire.spin").put('\n');
  const auto job = cluster.wait_ended(id, 600);
  EXPECT_EQ(job.state, "CANCELLED") << job.record << read_file(err);
  std::ifstream in(cluster.jobs() / ("parastack-" + id + ".json"));
  const json report = json::parse(in, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << read_file(err);
  EXPECT_EQ(report["faulty_ranks"], json::array({faulty}));
  std::set<int> ranks;
  for (const auto& r : report["ranks"]) {
    ranks.insert(r["rank"].get<int>());
    EXPECT_EQ(r["host"], r["rank"].get<int>() < per_node ? "node1" : "node2") << r.dump();
  }
  EXPECT_EQ(ranks.size(), static_cast<std::size_t>(2 * per_node)) << report["ranks"].dump();
  expect_nothing_left(cluster, id);
}

TEST(SlurmPluginOnTwoNodes, TheFaultyRankOnTheSecondNodeIsNamedWithItsHost) {
  if (auto why = SlurmCluster::unavailable()) GTEST_SKIP() << "no Slurm cluster here: " << *why;
  expect_the_faulty_rank_on_the_second_node_named("srun", 4);
}

// MPICH's mpiexec.hydra across nodes: one proxy per node started by srun, whose ranks inherit its
// PMIX_RANK (0 on node1, 1 on node2) beside their own PMI_RANK.
TEST(SlurmPluginOnTwoNodes, AnMpichJobsFaultyRankOnTheSecondNodeIsNamedWithItsHost) {
  if (auto why = SlurmCluster::unavailable()) GTEST_SKIP() << "no Slurm cluster here: " << *why;
  if (!have_mpich()) GTEST_FAIL() << "MPICH is not installed, or the test programs were built without it";
  // UCX (MPICH's transport in Debian) takes the emulated nodes for one machine (one kernel, one
  // boot id) and tries shared memory between them: TCP only, as between real nodes.
  expect_the_faulty_rank_on_the_second_node_named("hydra", 2, "export UCX_TLS=tcp,self\n");
}

// Never harm a job, and leave nothing behind: a monitor killed (kill -9, or a crash: CI once saw the
// leading monitor die of a segfault as it started) ends the other monitors of the job, which would
// otherwise wait for it until the job's end, and the job runs on to its own end untouched.
TEST(SlurmPluginOnTwoNodes, AMonitorKilledEndsTheOtherMonitorsAndNotTheJob) {
  if (auto why = SlurmCluster::unavailable()) GTEST_SKIP() << "no Slurm cluster here: " << *why;
  SlurmCluster cluster(2, binaries());
  cluster.set_plugstack("");
  // 90 s of work: the monitors are killed once their models hold, well before its end.
  const auto id = cluster.submit({"-N", "2", "--ntasks-per-node=2", "-o", "killed.out", "-e", "killed.err",
                                  "--parastack=log-level=debug", solver_script(cluster, "srun", 90)});
  const auto err = cluster.jobs() / "killed.err";
  testing::await_models([&] { return read_file(err); }, [&] { return cluster.job_active(id); }, 20);
  const auto monitors = cluster.processes(id, "parastack-monitor");
  ASSERT_EQ(monitors.size(), 2u) << read_file(err);
  const auto ranks = cluster.processes(id, "ps_solver");
  ASSERT_EQ(ranks.size(), 4u);
  ASSERT_EQ(::kill(monitors.at(0), SIGKILL), 0);  // the leader
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!cluster.processes(id, "parastack-monitor").empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_TRUE(cluster.processes(id, "parastack-monitor").empty()) << "the other monitor waits on\n" << read_file(err);
  // Every rank still runs: what ended was the monitors, not the job.
  EXPECT_EQ(cluster.processes(id, "ps_solver"), ranks) << read_file(err);
  expect_ran_to_its_end(cluster, id, "killed.out", [&] { return read_file(err); });
  expect_nothing_left(cluster, id);
}

// Never harm a job, when the monitors cannot even start: a monitor that dies as the monitors start
// (CI saw two crash inside Open MPI's MPI_Init, on one node of two) takes the other monitor,
// waiting for it in MPI_Init, with it, and the job runs to its own end untouched. The crash is a
// stand-in: node2's monitor is a script that sends itself SIGSEGV before it would run the monitor.
TEST(SlurmPluginOnTwoNodes, AMonitorThatCrashesAsItStartsEndsTheOtherAndNotTheJob) {
  if (auto why = SlurmCluster::unavailable()) GTEST_SKIP() << "no Slurm cluster here: " << *why;
  SlurmCluster cluster(2, binaries());
  const auto monitor = cluster.script("crashing-monitor.sh",
                                      "ulimit -c 0\n"
                                      "[ \"$(hostname)\" = node2 ] && kill -SEGV $$\n"
                                      "exec " +
                                          (cluster.bin() / "parastack-monitor").string() + " \"$@\"\n");
  cluster.set_plugstack("monitor=" + monitor);
  const auto id = cluster.submit({"-N", "2", "--ntasks-per-node=2", "-o", "crashed.out", "-e", "crashed.err",
                                  "--parastack", solver_script(cluster, "srun", 40)});
  const auto err = cluster.jobs() / "crashed.err";
  // The monitors' srun says that its task on node2 died; then node1's monitor must go, and the
  // job (40 s of work) run to its end.
  const auto crashed = std::chrono::steady_clock::now() + 60s;
  while (read_file(err).find("Segmentation fault") == std::string::npos && cluster.job_active(id) &&
         std::chrono::steady_clock::now() < crashed) {
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_NE(read_file(err).find("Segmentation fault"), std::string::npos) << read_file(err);
  const auto gone = std::chrono::steady_clock::now() + 60s;
  while (!cluster.processes(id, "parastack-monitor").empty() && std::chrono::steady_clock::now() < gone) {
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_TRUE(cluster.processes(id, "parastack-monitor").empty()) << "node1's monitor waits on\n" << read_file(err);
  expect_ran_to_its_end(cluster, id, "crashed.out", [&] { return read_file(err); });
  // srun's line says a task of some step died: one of parastack's says whose step, and that the
  // job runs on.
  EXPECT_NE(read_file(err).find("parastack: the watchdog's monitors have stopped (their srun ended with status "),
            std::string::npos)
      << read_file(err);
  expect_nothing_left(cluster, id);
}

}  // namespace
}  // namespace parastack
