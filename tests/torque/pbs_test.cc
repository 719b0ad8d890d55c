// pbs_parastack end to end, submitted by an unprivileged user (pstest) with real Open MPI jobs,
// real hangs and real mail (exim's local delivery to /var/mail/pstest):
//   - PbsOverSlurm: Slurm's own PBS front end (slurm-wlm-torque: the real qsub, qdel and qstat) on
//     the real Slurm cluster of the Slurm tests (tests/slurm/cluster.sh) with Slurm's spank_pbs,
//     which gives jobs their PBS_* variables; that qsub sets no PBS_NODEFILE.
//   - PbsTorqueStandIn: no Torque server exists for Debian, so a STAND-IN qsub/qdel/qstat
//     (tests/torque/standin/) reproduces what Torque gives a job: PBS_JOBID "N.server", a
//     PBS_NODEFILE listing the host once per ppn, PBS_O_WORKDIR, the script fed to the login
//     shell in a session of its own, qdel's SIGTERM then SIGKILL to that session.
// After every job nothing of the user's is left running.
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "support/mpi_job.h"
#include "support/slurm_cluster.h"
#include "support/watch_log.h"

namespace parastack {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using nlohmann::json;
using testing::ChildOptions;
using testing::ChildProcess;
using testing::read_file;
using testing::SlurmCluster;

const std::string kUser = SlurmCluster::user();
const std::string kStandIn = PARASTACK_SOURCE_DIR "/tests/torque/standin";
const std::string kSpankPbs = "required /usr/lib/x86_64-linux-gnu/slurm-wlm/spank_pbs.so\n";

std::string mailbox() { return read_file("/var/mail/" + kUser); }

bool await(const std::function<bool()>& condition, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(200ms);
  }
  return true;
}

void give_to_user(const fs::path& path) {
  const passwd* pw = ::getpwnam(kUser.c_str());
  if (!pw || ::chown(path.c_str(), pw->pw_uid, pw->pw_gid) != 0) throw std::runtime_error("chown " + path.string());
}

// A job script: the PBS variables the job sees (but those that differ from job to job), the solver
// on 4 ranks under mpirun, whether monitors run beside it, and an exit status of its own.
std::string solver_body(const fs::path& bin, int seconds, const std::string& fault, const fs::path& trigger) {
  std::string body = "export OMPI_MCA_mpi_yield_when_idle=1\n";
  body += "env | grep -E '^PBS_' | grep -vE '^PBS_(JOBID|JOBCOOKIE|NODEFILE)=' | sort\n";
  if (!fault.empty()) {
    body += "export LD_PRELOAD=" + (bin / "libps_fault.so").string() + " PS_FAULT_KIND=" + fault +
            " PS_FAULT_RANK=2 PS_FAULT_AFTER_SECONDS=1e9 PS_FAULT_TRIGGER_FILE=" + trigger.string() + "\n";
  }
  body += "mpirun --oversubscribe -n 4 " + (bin / "ps_solver").string() + " blocking " + std::to_string(seconds) +
          " > /dev/null\necho solver-status=$?\n";
  body += "echo monitors-beside-it=$(pgrep -x -u $(id -u) parastack-monit | wc -l)\nexit 7\n";
  return body;
}

// What a job printed, with the line that differs by design (the monitors beside it) taken out.
std::string without_monitor_line(const std::string& out, std::string& monitor_line) {
  std::istringstream lines(out);
  std::string kept;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("monitors-beside-it=", 0) == 0) {
      monitor_line = line;
    } else {
      kept += line + "\n";
    }
  }
  return kept;
}

// ------------------------------------------------------------------------------------------------
// The Torque stand-in.

class PbsTorqueStandIn : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the tests submit as " << kUser << ": they need root";
    if (!::getpwnam(kUser.c_str())) {
      ChildProcess add({"useradd", "-m", "-s", "/bin/bash", kUser});
      ASSERT_EQ(add.wait_exit(60s), 0);
    }
    fs::permissions(scratch_.path(), fs::perms::all);  // the user's job directory and spool live here
    for (const auto& dir : {bin(), jobs(), spool(), submit_tmp()}) fs::create_directories(dir);
    for (const std::string& binary :
         std::vector<std::string>{PBS_PARASTACK_BIN, PARASTACK_MONITOR_BIN, testing::test_program("ps_solver"),
                                  testing::test_program("libps_fault.so")}) {
      fs::copy_file(binary, bin() / fs::path(binary).filename());
    }
    for (const auto& dir : {jobs(), spool(), submit_tmp()}) give_to_user(dir);
    ::chmod(bin().c_str(), 0755);
    mail_before_ = mailbox().size();
  }
  void TearDown() override {
    // Whatever of the user's still runs with this spool in its environment (a job, its monitors).
    const std::string mark = "STANDIN_SPOOL=" + spool().string() + '\0';
    for (int round = 0; round < 2; ++round) {
      for (const auto& entry : fs::directory_iterator("/proc")) {
        const std::string name = entry.path().filename();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        if (read_file(entry.path() / "environ").find(mark) != std::string::npos) ::kill(std::stoi(name), SIGKILL);
      }
    }
  }

  fs::path bin() const { return scratch_.path() / "bin"; }
  fs::path jobs() const { return scratch_.path() / "jobs"; }
  fs::path spool() const { return scratch_.path() / "spool"; }
  fs::path submit_tmp() const { return scratch_.path() / "submit-tmp"; }

  std::string script(const std::string& name, const std::string& text) const {
    const auto path = jobs() / name;
    std::ofstream(path) << text;
    give_to_user(path);
    return name;
  }

  // Runs a command as the user in jobs() with the stand-in first on PATH.
  SlurmCluster::Result as_user(std::vector<std::string> argv, const std::vector<std::string>& env = {},
                               const std::string& path = "") const {
    testing::TempDir output;
    std::vector<std::string> command{"runuser",
                                     "-u",
                                     kUser,
                                     "--",
                                     "env",
                                     "PATH=" + (path.empty() ? kStandIn + ":/usr/bin:/bin" : path),
                                     "STANDIN_SPOOL=" + spool().string(),
                                     "TMPDIR=" + submit_tmp().string()};
    command.insert(command.end(), env.begin(), env.end());
    command.insert(command.end(), argv.begin(), argv.end());
    ChildProcess child(
        command, ChildOptions{{}, (output.path() / "out").string(), (output.path() / "err").string(), jobs().string()});
    SlurmCluster::Result result;
    result.status = child.wait_exit(120s);
    result.out = read_file(output.path() / "out");
    result.err = read_file(output.path() / "err");
    return result;
  }

  // The job's exit status as the stand-in recorded it, once it has ended.
  int wait_ended(const std::string& id, std::chrono::seconds timeout = 300s) const {
    const auto file = spool() / (id.substr(0, id.find('.')) + ".exit");
    if (!await([&] { return fs::exists(file); }, timeout)) throw std::runtime_error("job " + id + " did not end");
    return std::stoi(read_file(file));
  }

  std::string submit(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) const {
    std::vector<std::string> argv{(bin() / "pbs_parastack").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto result = as_user(argv, env);
    EXPECT_EQ(result.status, 0) << result.err;
    EXPECT_EQ(result.err, "");
    return result.out.substr(0, result.out.find('\n'));
  }

  testing::TempDir scratch_;
  std::size_t mail_before_ = 0;
};

TEST_F(PbsTorqueStandIn, AHealthyJobRunsAsWithoutParastackItsStatusOutputAndEnvironmentUnchanged) {
  const std::string text =
      "#!/bin/bash\n#PBS -N healthy\n#PBS -l nodes=1:ppn=4\n" + solver_body(bin(), 6, "", "") + "\n";
  script("healthy.sh", text);
  const auto plain = as_user({"qsub", "healthy.sh"});
  ASSERT_EQ(plain.status, 0) << plain.err;
  const std::string plain_id = plain.out.substr(0, plain.out.find('\n'));
  EXPECT_EQ(wait_ended(plain_id), 7);

  const std::string id = submit({"healthy.sh"});
  EXPECT_EQ(id, std::to_string(std::stoi(plain_id) + 1) + ".standin-server") << "qsub's job id, printed as qsub does";
  EXPECT_EQ(wait_ended(id), 7) << "the script's exit status is the job's";
  const auto number = [](const std::string& job) { return job.substr(0, job.find('.')); };
  std::string plain_monitors, watched_monitors;
  const std::string plain_out =
      without_monitor_line(read_file(jobs() / ("healthy.o" + number(plain_id))), plain_monitors);
  const std::string watched_out =
      without_monitor_line(read_file(jobs() / ("healthy.o" + number(id))), watched_monitors);
  EXPECT_EQ(watched_out, plain_out) << "the same output, the same PBS environment";
  EXPECT_NE(watched_out.find("PBS_JOBNAME=healthy"), std::string::npos) << watched_out;
  EXPECT_NE(watched_out.find("solver-status=0"), std::string::npos) << watched_out;
  EXPECT_EQ(plain_monitors, "monitors-beside-it=0");
  EXPECT_EQ(watched_monitors, "monitors-beside-it=1") << "one monitor on the job's one host";
  EXPECT_EQ(read_file(jobs() / ("healthy.e" + number(id))), "") << "a healthy job's stderr stays its own";
  EXPECT_EQ(read_file(jobs() / "healthy.sh"), text) << "the user's script is never written";
  EXPECT_TRUE(fs::is_empty(submit_tmp())) << "the generated script is gone once qsub has read it";
  for (const auto& entry : fs::directory_iterator(jobs())) {
    EXPECT_EQ(entry.path().filename().string().find("parastack"), std::string::npos) << entry.path();
  }
}

// The site file (PARASTACK_CONFIG here) gives every job's monitors its watch settings, under the
// job's own; its log-file is `parastack run`'s alone (parastack.conf(5)), never theirs.
TEST_F(PbsTorqueStandIn, TheSiteFilesSettingsReachTheMonitorsButItsLogFileDoesNot) {
  const auto site_log = jobs() / "site-run.log";
  const auto config = jobs() / "parastack.conf";
  // An empty value is the default (`seed = `, as the installed file shows it, was passed on as
  // `seed=` and refused by the monitors for every job until 2026-12-07).
  std::ofstream(config) << "log-level = info\nseed = \nlog-file = " << site_log.string() << "\n";
  give_to_user(config);
  script("site.sh", "#!/bin/bash\n#PBS -l nodes=1:ppn=4\n" + solver_body(bin(), 4, "", "") + "\n");
  const std::string id = submit({"site.sh"}, {"PARASTACK_CONFIG=" + config.string()});
  EXPECT_EQ(wait_ended(id), 7);
  const std::string err = read_file(jobs() / ("site.sh.e" + id.substr(0, id.find('.'))));
  EXPECT_NE(err.find("found 4 rank(s) of MPI program"), std::string::npos) << "the site's log-level=info:\n" << err;
  EXPECT_FALSE(fs::exists(site_log)) << read_file(site_log);
}

TEST_F(PbsTorqueStandIn, AHangIsReportedMailedAndTheJobDeletedThroughQdel) {
  const fs::path trigger = jobs() / "fire.spin";
  script("hang.sh",
         "#!/bin/bash\n#PBS -l nodes=1:ppn=4\n#PBS -M " + kUser + "\n" + solver_body(bin(), 100000, "spin", trigger));
  const std::string id = submit({"hang.sh", "--", "--log-level=debug"});
  const std::string number = id.substr(0, id.find('.'));
  const auto err = jobs() / ("hang.sh.e" + number);
  testing::await_models([&] { return read_file(err); }, [&] { return !fs::exists(spool() / (number + ".exit")); }, 40);
  std::ofstream(trigger).put('\n');
  EXPECT_EQ(wait_ended(id), 256 + SIGTERM) << read_file(err);
  EXPECT_NE(read_file(spool() / "deleted").find(id), std::string::npos) << "deleted through qdel";
  const auto report_path = jobs() / ("parastack-" + id + ".json");
  EXPECT_NE(read_file(err).find("job " + id + " hung: computation error on rank(s) 2; report: " + report_path.string()),
            std::string::npos)
      << read_file(err);
  std::ifstream in(report_path);
  const json report = json::parse(in, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << read_file(err);
  EXPECT_EQ(report["hang_type"], "computation");
  EXPECT_EQ(report["faulty_ranks"], json::array({2}));
  const std::string subject = "Subject: parastack: PBS job " + id + " hung: computation error on rank(s) 2";
  EXPECT_TRUE(await([&] { return mailbox().find(subject, mail_before_) != std::string::npos; }, 60s))
      << mailbox().substr(mail_before_);
}

// Open MPI 4's mpirun empties its user's session directory on the node as it starts, so the job's
// first mpirun, starting with the monitors' mpirun, failed now and then ("session_dir.c at line
// 107", once in CI): the monitors' mpirun keeps a session directory of its own. The script waits
// for the monitors to be up, then looks at the job's TMPDIR before its own mpirun runs.
// What monitors killed with an earlier job left there is gone by then.
TEST_F(PbsTorqueStandIn, TheMonitorsMpirunKeepsOutOfTheJobsOpenMpiSessionDirectory) {
  const auto stale = testing::stale_monitors_session_directory(submit_tmp(), kUser);
  script("apart.sh",
         "#!/bin/bash\n#PBS -l nodes=1:ppn=4\n"
         "for i in $(seq 1200); do pgrep -x -u $(id -u) parastack-monit > /dev/null && break; sleep 0.1; done\n"
         "for i in $(seq 1200); do ls -d $TMPDIR/*/ > /dev/null 2>&1 && break; sleep 0.1; done\n"
         "ls -A $TMPDIR | sed -E 's/[0-9]+/N/g'\n" +
             solver_body(bin(), 2, "", ""));
  const std::string id = submit({"apart.sh"});
  EXPECT_EQ(wait_ended(id), 7);
  const std::string number = id.substr(0, id.find('.'));
  const std::string out = read_file(jobs() / ("apart.sh.o" + number));
  utsname host{};
  ::uname(&host);
  EXPECT_EQ(out.substr(0, out.find("PBS_")),
            "parastack-monitors." + std::regex_replace(host.nodename, std::regex("[0-9]+"), "N") + ".N.N.N\n")
      << "the monitors' Open MPI session directory, and nothing in the job's own (ompi.HOST.UID), nor "
      << stale.filename();
  EXPECT_NE(out.find("solver-status=0"), std::string::npos) << out;
  EXPECT_EQ(read_file(jobs() / ("apart.sh.e" + number)), "");
}

// On the nodes other than the first, the ranks of a Torque job are started by orted, which
// Debian's Open MPI (built without Torque's TM launcher) starts through ssh: they carry no
// PBS_JOBID. Here the ranks are started without it on one node (env -u), and the job's monitor
// finds them through the Open MPI launch under the job script, as the other nodes' monitors do.
TEST_F(PbsTorqueStandIn, RanksWithoutPbsJobidAsSshStartsThemAreFoundThroughTheirLaunch) {
  const fs::path trigger = jobs() / "fire.ssh";
  std::string body = solver_body(bin(), 100000, "spin", trigger);
  const std::string mpirun = "mpirun --oversubscribe -n 4 ";
  body.replace(body.find(mpirun), mpirun.size(), mpirun + "env -u PBS_JOBID ");
  script("nojobid.sh", "#!/bin/bash\n#PBS -l nodes=1:ppn=4\n" + body);
  const std::string id = submit({"nojobid.sh", "--", "--log-level=debug"});
  const std::string number = id.substr(0, id.find('.'));
  const auto err = jobs() / ("nojobid.sh.e" + number);
  testing::await_models([&] { return read_file(err); }, [&] { return !fs::exists(spool() / (number + ".exit")); }, 40,
                        180s);
  std::ofstream(trigger).put('\n');
  EXPECT_EQ(wait_ended(id), 256 + SIGTERM) << read_file(err);
  std::ifstream in(jobs() / ("parastack-" + id + ".json"));
  const json report = json::parse(in, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << read_file(err);
  EXPECT_EQ(report["faulty_ranks"], json::array({2}));
  EXPECT_EQ(report["ranks"].size(), 4u);
}

TEST_F(PbsTorqueStandIn, ANodeFileThatIsMissingInsideTheJobLeavesItRunningUnwatched) {
  script("lost.sh", "#!/bin/bash\necho ran $PBS_JOBNAME\nexit 3\n");
  const std::string id = submit({"lost.sh"}, {"STANDIN_LOSE_NODEFILE=1"});
  EXPECT_EQ(wait_ended(id), 3);
  const std::string number = id.substr(0, id.find('.'));
  EXPECT_EQ(read_file(jobs() / ("lost.sh.o" + number)), "ran lost.sh\n");
  EXPECT_EQ(read_file(jobs() / ("lost.sh.e" + number)),
            "pbs_parastack: the node file PBS_NODEFILE=" + (spool() / "aux" / id).string() +
                " cannot be read (No such file or directory); this job runs unwatched\n");
}

// Torque runs a script with -S (or the login shell), whatever its first line: csh here, with the
// script's arguments from -F.
TEST_F(PbsTorqueStandIn, AShellChosenWithDashSRunsTheScriptWithItsArguments) {
  if (::access("/bin/csh", X_OK) != 0) GTEST_SKIP() << "no /bin/csh (packaging/bootstrap.sh test installs csh)";
  script("csh.job", "set x = 5\necho csh $x $argv[2]\nexit 4\n");
  const std::string id = submit({"-S", "/bin/csh", "-F", "one two", "csh.job"});
  EXPECT_EQ(wait_ended(id), 4);
  const std::string number = id.substr(0, id.find('.'));
  EXPECT_EQ(read_file(jobs() / ("csh.job.o" + number)), "csh 5 two\n");
  EXPECT_EQ(read_file(jobs() / ("csh.job.e" + number)), "");
}

TEST_F(PbsTorqueStandIn, BadInvocationsSayWhatIsWrongInOneLineAndSubmitNothing) {
  script("job.sh", "#!/bin/bash\ntrue\n");
  script("interactive.sh", "#!/bin/bash\n#PBS -I\ntrue\n");
  const std::string pbs = (bin() / "pbs_parastack").string();
  struct Case {
    std::vector<std::string> argv;
    std::string message, path;
  };
  for (const auto& [argv, message, path] : std::vector<Case>{
           {{"job.sh"}, "no qsub on PATH", "/nonexistent"},
           {{"nosuch.sh"}, "cannot read the script nosuch.sh: No such file or directory", ""},
           {{"job.sh", "--", "--alhpa=0.1"}, "--alhpa is not a parastack option", ""},
           {{"job.sh", "--", "--alpha=0.1", "--alpha=0.2"}, "conflicting options: --alpha=0.1 and --alpha=0.2", ""},
           {{"job.sh", "--", "--action=explode"}, "parastack options refused", ""},
           {{"-I"}, "-I: an interactive job cannot be watched", ""},
           {{"interactive.sh"}, "interactive.sh asks for -I", ""},
           {{"-S", "/usr/bin/python3", "job.sh"},
            "-S /usr/bin/python3: pbs_parastack's job script must be run by a shell",
            ""},
           {{"job.sh", "-N", "x"}, "'-N' after the script", ""},
           {{"-l"}, "option -l needs a value", ""}}) {
    std::vector<std::string> command{pbs};
    command.insert(command.end(), argv.begin(), argv.end());
    const auto result = as_user(command, {}, path);
    EXPECT_EQ(result.status, 2) << message;
    EXPECT_NE(result.err.find("pbs_parastack: " + message), std::string::npos) << result.err;
    EXPECT_EQ(result.out, "") << message;
  }
  // A bad value in the site's file is the site's to fix: named with its file and line, as
  // parastack run names it (until 2026-12-04: only "parastack options refused").
  const auto config = jobs() / "bad-site.conf";
  std::ofstream(config) << "log-level = info\nalpha = 2\n";
  give_to_user(config);
  const auto result = as_user({pbs, "job.sh"}, {"PARASTACK_CONFIG=" + config.string()});
  EXPECT_EQ(result.status, 2);
  EXPECT_EQ(result.err.rfind("pbs_parastack: " + config.string() + " line 2: alpha = 2: ", 0), 0u) << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << "one line:\n" << result.err;
  EXPECT_EQ(result.out, "");
  EXPECT_FALSE(fs::exists(spool() / "next")) << "nothing was submitted";
}

// ------------------------------------------------------------------------------------------------
// Slurm's PBS front end on a real Slurm cluster.

class PbsOverSlurm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (SlurmCluster::unavailable() || ::access("/usr/bin/qsub", X_OK) != 0) return;
    try {
      cluster_ = new SlurmCluster(
          0, {PBS_PARASTACK_BIN, PARASTACK_MONITOR_BIN, testing::test_program("ps_solver"),
              testing::test_program("libps_fault.so"), testing::test_program("ps_progress"), PARASTACK_PROGRESS_LIB});
      // spank_pbs gives jobs PBS_JOBID, PBS_O_WORKDIR... as a site running Slurm's qsub has it do.
      cluster_->set_plugstack_text(kSpankPbs);
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
    if (::access("/usr/bin/qsub", X_OK) != 0) {
      GTEST_SKIP() << "no Slurm qsub (packaging/bootstrap.sh test installs slurm-wlm-torque)";
    }
    ASSERT_NE(cluster_, nullptr) << problem_;
  }
  SlurmCluster& cluster() { return *cluster_; }
  // The build's, or the installed one (PARASTACK_INSTALLED_BINDIR: packaging/test-packages.sh),
  // which starts the monitor beside it.
  std::string pbs_parastack() const {
    const char* installed = std::getenv("PARASTACK_INSTALLED_BINDIR");
    return installed && *installed ? std::string(installed) + "/pbs_parastack"
                                   : (cluster_->bin() / "pbs_parastack").string();
  }

  static SlurmCluster* cluster_;
  static std::string problem_;
};
SlurmCluster* PbsOverSlurm::cluster_ = nullptr;
std::string PbsOverSlurm::problem_;

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

TEST_F(PbsOverSlurm, AHealthyJobPassesThroughWithItsDirectivesStatusAndOutput) {
  const auto path = cluster().script(
      "healthy.sh", "#PBS -N healthy\n#PBS -l walltime=00:10:00\n" + solver_body(cluster().bin(), 6, "", ""));
  // One after the other: a job counts the monitors beside it among all of the user's processes.
  const auto plain = cluster().as_user({"qsub", "healthy.sh"});
  ASSERT_EQ(plain.status, 0) << plain.err << plain.out;
  cluster().wait_ended(first_line(plain.out), 300);
  const auto watched = cluster().as_user({pbs_parastack(), "healthy.sh"});
  ASSERT_EQ(watched.status, 0) << watched.err << watched.out;
  EXPECT_EQ(watched.err, "");
  const std::string plain_id = first_line(plain.out), id = first_line(watched.out);
  EXPECT_EQ(watched.out, id + "\n") << "the job id alone, as qsub prints it";
  std::string outputs[2];
  for (int i = 0; i < 2; ++i) {
    const std::string job_id = i == 0 ? plain_id : id;
    const auto job = cluster().wait_ended(job_id, 300);
    EXPECT_EQ(job.state, "FAILED") << job.record;
    EXPECT_NE(job.record.find("ExitCode=7:0"), std::string::npos) << job.record;
    EXPECT_NE(job.record.find("JobName=healthy "), std::string::npos) << "#PBS -N is honoured: " << job.record;
    EXPECT_NE(job.record.find("TimeLimit=00:10:00"), std::string::npos) << "#PBS -l walltime: " << job.record;
    std::string monitors;
    const std::string out = read_file(cluster().jobs() / ("healthy.sh.o" + job_id));
    outputs[i] = without_monitor_line(out, monitors);
    EXPECT_EQ(monitors, i == 0 ? "monitors-beside-it=0" : "monitors-beside-it=1");
    EXPECT_EQ(read_file(cluster().jobs() / ("healthy.sh.e" + job_id)), "");
  }
  EXPECT_EQ(outputs[1], outputs[0]) << "the same output and PBS environment as without parastack";
  EXPECT_NE(outputs[1].find("PBS_JOBNAME=healthy"), std::string::npos) << outputs[1];
  EXPECT_NE(outputs[1].find("solver-status=0"), std::string::npos) << outputs[1];
  EXPECT_EQ(read_file(path),
            "#!/bin/bash\n#PBS -N healthy\n#PBS -l walltime=00:10:00\n" + solver_body(cluster().bin(), 6, "", ""));
  EXPECT_FALSE(fs::exists(cluster().jobs() / ("parastack-" + id + ".json")));
}

TEST_F(PbsOverSlurm, AHangIsDeletedWithQdelReportedAndMailed) {
  const fs::path trigger = cluster().jobs() / "fire.spin";
  fs::remove(trigger);
  cluster().script("hang.sh", "#PBS -l nodes=1:ppn=4\n" + solver_body(cluster().bin(), 100000, "spin", trigger));
  const auto mail_before = mailbox().size();
  const auto submitted = cluster().as_user({pbs_parastack(), "-M", kUser, "hang.sh", "--", "--log-level", "debug"});
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  const std::string id = first_line(submitted.out);
  const auto err = cluster().jobs() / ("hang.sh.e" + id);
  testing::await_models([&] { return read_file(err); }, [&] { return cluster().job_active(id); }, 40);
  std::ofstream(trigger).put('\n');
  const auto job = cluster().wait_ended(id, 600);
  EXPECT_EQ(job.state, "CANCELLED") << job.record << read_file(err);
  EXPECT_NE(read_file(err).find("deleting job " + id + " (qdel)"), std::string::npos) << read_file(err);
  std::ifstream in(cluster().jobs() / ("parastack-" + id + ".json"));
  const json report = json::parse(in, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << read_file(err);
  EXPECT_EQ(report["faulty_ranks"], json::array({2}));
  const std::string subject = "Subject: parastack: PBS job " + id + " hung: computation error on rank(s) 2";
  EXPECT_TRUE(await([&] { return mailbox().find(subject, mail_before) != std::string::npos; }, 60s))
      << mailbox().substr(mail_before);
}

// -- --mpi-progress=on: the job script runs with the progress library in front of its LD_PRELOAD
// (the monitors, started before, without it), and the report names the rank that skipped a
// collective from the ranks' own facts.
TEST_F(PbsOverSlurm, MpiProgressOnNamesTheRankThatSkippedACollective) {
  cluster().script("progress.sh",
                   "#PBS -l nodes=1:ppn=8\nexport OMPI_MCA_mpi_yield_when_idle=1\n"
                   "echo \"preload=$LD_PRELOAD\"\nmpirun --oversubscribe " +
                       (cluster().bin() / "ps_progress").string() +
                       " --fault wrong-tag --fault-rank 2 --fault-after 5\n");
  const auto library = cluster().bin() / "libparastack-progress.so";
  const auto submitted = cluster().as_user(
      {pbs_parastack(), "progress.sh", "--", "--mpi-progress=on", "--mpi-progress-library=" + library.string()});
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  const std::string id = first_line(submitted.out);
  const auto job = cluster().wait_ended(id, 600);
  const auto err = read_file(cluster().jobs() / ("progress.sh.e" + id));
  EXPECT_EQ(job.state, "CANCELLED") << job.record << err;
  EXPECT_NE(read_file(cluster().jobs() / ("progress.sh.o" + id)).find("preload=" + library.string()),
            std::string::npos);
  std::ifstream in(cluster().jobs() / ("parastack-" + id + ".json"));
  const json report = json::parse(in, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << err;
  EXPECT_EQ(report["least_progressed"]["source"], "mpi-progress") << report["least_progressed"].dump(2);
  EXPECT_EQ(report["least_progressed"]["ranks"], json::array({2})) << report["least_progressed"].dump(2);
}

// qsub -t: each index is a job of its own (its own PBS_JOBID) and gets a watchdog of its own, which
// watches that subjob's ranks only: the subjobs run at once on one node, index 2 hangs, and only
// index 2 is deleted; index 1 ends as it would without parastack. (Slurm's qsub passes -o/-e to
// sbatch, whose %a gives each index its own files, as Torque's default names do.)
TEST_F(PbsOverSlurm, AJobArrayGetsOneWatchdogPerSubjobAndOnlyTheHungOneIsDeleted) {
  const fs::path trigger = cluster().jobs() / "fire.array";
  fs::remove(trigger);
  const auto solver = (cluster().bin() / "ps_solver").string();
  const auto fault =
      "LD_PRELOAD=" + (cluster().bin() / "libps_fault.so").string() +
      " PS_FAULT_KIND=spin PS_FAULT_RANK=2 PS_FAULT_AFTER_SECONDS=1e9 PS_FAULT_TRIGGER_FILE=" + trigger.string();
  cluster().script("array.sh",
                   "#PBS -l nodes=1:ppn=4\n"
                   "export OMPI_MCA_mpi_yield_when_idle=1\n"
                   "echo subjob=$PBS_JOBID\n"
                   "echo array=$SLURM_ARRAY_JOB_ID\n"
                   "seconds=8\n"
                   "if [ \"${PBS_ARRAYID:-$PBS_ARRAY_INDEX}\" = 2 ]; then\n"
                   "  export " +
                       fault +
                       "\n"
                       "  seconds=100000\n"
                       "fi\n"
                       "mpirun --oversubscribe -n 4 " +
                       solver +
                       " blocking $seconds > /dev/null\n"
                       "echo solver-status=$?\n"
                       "echo monitors-of-this-subjob=$(pgrep -f \"^[^ ]*parastack-monitor .*--pbs-job "
                       "$PBS_JOBID( |$)\" | wc -l)\n"
                       "exit 7\n");
  // One report path for every subjob: %j, each subjob's own id, keeps them apart, and so do %A_%a,
  // the array's id and the index (in a directory of its own, which the monitors make).
  const auto submitted = cluster().as_user({pbs_parastack(), "-t", "1-2", "-o", "array.o%a", "-e", "array.e%a",
                                            "array.sh", "--", "--log-level", "debug",
                                            "--report=" + (cluster().jobs() / "array-%A_%a" / "%j.json").string()});
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  const std::string id = first_line(submitted.out);
  EXPECT_EQ(submitted.out, id + "\n");
  const auto array_running = [&] {
    return !cluster().as_user({"squeue", "-h", "-r", "-j", id, "-o", "%i"}).out.empty();
  };
  testing::await_models([&] { return read_file(cluster().jobs() / "array.e2"); }, array_running, 40);
  std::ofstream(trigger).put('\n');
  ASSERT_TRUE(await([&] { return !array_running(); }, 600s)) << read_file(cluster().jobs() / "array.e2");

  // What a subjob's script said: its own PBS_JOBID (subjob=), its array's id (array=).
  const auto said = [&](int index, const std::string& what) {
    const std::string out = read_file(cluster().jobs() / ("array.o" + std::to_string(index)));
    const auto at = out.find(what + "=");
    if (at == std::string::npos) return std::string();
    const auto from = at + what.size() + 1;
    return out.substr(from, out.find('\n', at) - from);
  };
  const std::string healthy = said(1, "subjob"), hung = said(2, "subjob"), array = said(2, "array");
  ASSERT_FALSE(healthy.empty() || hung.empty() || array.empty()) << "both subjobs ran";
  EXPECT_NE(healthy, hung);
  const std::string healthy_out = read_file(cluster().jobs() / "array.o1");
  EXPECT_NE(healthy_out.find("solver-status=0\nmonitors-of-this-subjob=1\n"), std::string::npos) << healthy_out;
  const auto healthy_job = cluster().wait_ended(healthy, 60);
  EXPECT_NE(healthy_job.record.find("ExitCode=7:0"), std::string::npos) << healthy_job.record;
  const std::string healthy_err = read_file(cluster().jobs() / "array.e1");
  EXPECT_EQ(healthy_err.find(" hung: "), std::string::npos) << healthy_err;
  EXPECT_FALSE(fs::exists(cluster().jobs() / ("array-" + array + "_1"))) << "no report, so no directory for one";

  const std::string hung_err = read_file(cluster().jobs() / "array.e2");
  EXPECT_NE(hung_err.find("deleting job " + hung + " (qdel)"), std::string::npos) << hung_err;
  EXPECT_EQ(cluster().wait_ended(hung, 60).state, "CANCELLED");
  std::ifstream in(cluster().jobs() / ("array-" + array + "_2") / (hung + ".json"));
  const json report = json::parse(in, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << hung_err;
  EXPECT_EQ(report["faulty_ranks"], json::array({2}));
  EXPECT_FALSE(fs::exists(cluster().jobs() / "array-%A_%a"));
}

// A site with parastack's SPANK plugin beside the PBS front end: the plugin's copy in bin() and
// plugstack.conf with both, as long as the object lives; then spank_pbs alone again.
class PluginBesideSpankPbs {
 public:
  PluginBesideSpankPbs(SlurmCluster& cluster, const std::string& plugin_arguments) : cluster_(cluster) {
#ifdef PARASTACK_SPANK_PLUGIN
    fs::copy_file(PARASTACK_SPANK_PLUGIN, cluster.bin() / "parastack.so", fs::copy_options::overwrite_existing);
    fs::permissions(cluster.bin() / "parastack.so", fs::perms::owner_all | fs::perms::group_read |
                                                        fs::perms::group_exec | fs::perms::others_read |
                                                        fs::perms::others_exec);
#endif
    cluster.set_plugstack_text(kSpankPbs + cluster.plugstack_line(plugin_arguments));
  }
  ~PluginBesideSpankPbs() { cluster_.set_plugstack_text(kSpankPbs); }
  PluginBesideSpankPbs(const PluginBesideSpankPbs&) = delete;
  PluginBesideSpankPbs& operator=(const PluginBesideSpankPbs&) = delete;

 private:
  SlurmCluster& cluster_;
};

// A site whose plugin watches every batch job (enable=all) and that offers pbs_parastack too: a
// job submitted with pbs_parastack is watched once, by the plugin's monitors, and pbs_parastack
// says so in one line. Two watchdogs would both sample the job and both act on a hang.
TEST_F(PbsOverSlurm, AJobTheSitesPluginAlreadyWatchesGetsNoSecondWatchdog) {
#ifndef PARASTACK_SPANK_PLUGIN
  GTEST_SKIP() << "the SPANK plugin is not built here (no slurm/spank.h)";
#endif
  const PluginBesideSpankPbs site(cluster(), "enable=all");
  cluster().script("both.sh", "#PBS -l nodes=1:ppn=4\n" + solver_body(cluster().bin(), 6, "", ""));
  const auto submitted = cluster().as_user({pbs_parastack(), "both.sh"});
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  const std::string id = first_line(submitted.out);
  const auto job = cluster().wait_ended(id, 300);
  const std::string out = read_file(cluster().jobs() / ("both.sh.o" + id));
  const std::string err = read_file(cluster().jobs() / ("both.sh.e" + id));
  EXPECT_NE(job.record.find("ExitCode=7:0"), std::string::npos) << job.record << err;
  EXPECT_NE(out.find("solver-status=0"), std::string::npos) << out;
  std::string monitors;
  without_monitor_line(out, monitors);
  EXPECT_EQ(monitors, "monitors-beside-it=1") << "the plugin's monitor alone\n" << out << err;
  EXPECT_EQ(err, "pbs_parastack: job " + id +
                     " is already watched by parastack (the site's Slurm plugin watches every job): no second "
                     "watchdog is started, and the options given to pbs_parastack are not used\n");
}

// Inside a job pbs_parastack watches, the job's own `srun --parastack` steps start no monitors of
// their own (the job's environment names the watched job, as the plugin's batch step does).
TEST_F(PbsOverSlurm, AnSrunParastackStepInsideAWatchedJobStartsNoSecondWatchdog) {
#ifndef PARASTACK_SPANK_PLUGIN
  GTEST_SKIP() << "the SPANK plugin is not built here (no slurm/spank.h)";
#endif
  const PluginBesideSpankPbs site(cluster(), "");
  cluster().script("step.sh",
                   "#PBS -l nodes=1:ppn=4\nexport OMPI_MCA_mpi_yield_when_idle=1\n"
                   "echo watched=$PARASTACK_WATCHED_JOB\n"
                   "srun --parastack --mpi=pmix -n 2 " +
                       (cluster().bin() / "ps_solver").string() + " blocking 8 > /dev/null &\n" +
                       SlurmCluster::most_monitor_steps_while_background_jobs_run() +
                       "wait $!\necho step-status=$? most-monitor-steps=$most\n");
  const auto submitted = cluster().as_user({pbs_parastack(), "step.sh"});
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  const std::string id = first_line(submitted.out);
  const auto job = cluster().wait_ended(id, 300);
  const std::string out = read_file(cluster().jobs() / ("step.sh.o" + id));
  const std::string err = read_file(cluster().jobs() / ("step.sh.e" + id));
  EXPECT_EQ(job.state, "COMPLETED") << job.record << err;
  EXPECT_NE(out.find("watched=" + id + "\n"), std::string::npos) << out;
  EXPECT_NE(out.find("step-status=0 most-monitor-steps=0"), std::string::npos) << out << err;
  EXPECT_EQ(err, "");
}

// Two emulated nodes (tests/slurm/cluster.sh: each slurmd in namespaces of its own), -l nodes=2:ppn=4
// through Slurm's qsub: one monitor on each node of the allocation (Slurm's qsub writes no node
// file: the nodes come from SLURM_JOB_NODELIST), and the faulty rank, on the second node, is named
// with its host. (That qsub asks for 8 tasks on 2 nodes, which Slurm packs 7 and 1: mpirun places
// 4 ranks on each node itself.)
// Inside the job, pbs_parastack reads what the submitting pbs_parastack wrote into the wrapper
// script; the submit host's and the node's versions may differ for a while after an upgrade. An
// argument this version does not know costs nothing of the job: its script still runs with the
// shell and the arguments the user gave (before, the job ran the script as itself, without its
// arguments, and a script without "#!" failed with 127).
TEST(PbsInJob, AJobSubmittedByAnotherVersionStillRunsItsScriptWithItsShellAndArguments) {
  testing::TempDir dir;
  const std::string command = "printf 'echo arg=$1 shell=$0\\n' | '" + std::string(PBS_PARASTACK_BIN) +
                              "' --in-job --shell /bin/sh --arg one --from-a-newer-version x -- /bin/false";
  ChildProcess job({"/bin/sh", "-c", command},
                   ChildOptions{{"PBS_NODEFILE=", "SLURM_JOB_NODELIST=", "PARASTACK_WATCHED_JOB="},
                                (dir.path() / "out").string(),
                                (dir.path() / "err").string(),
                                dir.path().string()});
  EXPECT_EQ(job.wait_exit(60s), 0) << read_file(dir.path() / "err");
  EXPECT_EQ(read_file(dir.path() / "out").substr(0, 14), "arg=one shell=") << read_file(dir.path() / "err");
  EXPECT_NE(read_file(dir.path() / "err").find("ignoring what this version does not know: --from-a-newer-version x"),
            std::string::npos)
      << read_file(dir.path() / "err");
}

TEST(PbsOverSlurmOnTwoNodes, OneMonitorPerNodeNamesTheFaultyRankOnTheSecondNode) {
  if (auto why = SlurmCluster::unavailable()) GTEST_SKIP() << "no Slurm cluster here: " << *why;
  if (::access("/usr/bin/qsub", X_OK) != 0) GTEST_SKIP() << "no Slurm qsub (packaging/bootstrap.sh test installs it)";
  SlurmCluster cluster(2, {PBS_PARASTACK_BIN, PARASTACK_MONITOR_BIN, testing::test_program("ps_solver"),
                           testing::test_program("libps_fault.so")});
  cluster.set_plugstack_text(kSpankPbs);
  const fs::path trigger = cluster.jobs() / "fire.two";
  cluster.script("two.sh",
                 "#PBS -l nodes=2:ppn=4\n"
                 "export OMPI_MCA_mpi_yield_when_idle=1\n"
                 "export LD_PRELOAD=" +
                     (cluster.bin() / "libps_fault.so").string() +
                     " PS_FAULT_KIND=spin PS_FAULT_RANK=6 PS_FAULT_AFTER_SECONDS=1e9 PS_FAULT_TRIGGER_FILE=" +
                     trigger.string() + "\nmpirun --oversubscribe --map-by ppr:4:node " +
                     (cluster.bin() / "ps_solver").string() + " blocking 100000\n");
  const auto submitted =
      cluster.as_user({(cluster.bin() / "pbs_parastack").string(), "two.sh", "--", "--log-level", "debug"});
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  const std::string id = first_line(submitted.out);
  const auto err = cluster.jobs() / ("two.sh.e" + id);
  testing::await_models([&] { return read_file(err); }, [&] { return cluster.job_active(id); }, 40);
  EXPECT_NE(read_file(err).find("2 monitors on node1 node2"), std::string::npos) << read_file(err);
  std::ofstream(trigger).put('\n');
  const auto job = cluster.wait_ended(id, 600);
  EXPECT_EQ(job.state, "CANCELLED") << job.record << read_file(err);
  EXPECT_NE(read_file(err).find("deleting job " + id + " (qdel)"), std::string::npos) << read_file(err);
  std::ifstream in(cluster.jobs() / ("parastack-" + id + ".json"));
  const json report = json::parse(in, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << read_file(err);
  EXPECT_EQ(report["faulty_ranks"], json::array({6}));
  ASSERT_EQ(report["ranks"].size(), 8u);
  for (const auto& r : report["ranks"]) {
    EXPECT_EQ(r["host"], r["rank"].get<int>() < 4 ? "node1" : "node2") << r.dump();
  }
}

}  // namespace
}  // namespace parastack
