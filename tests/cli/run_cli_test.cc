// `parastack run` misused: each mistake gets a clear message and a non-zero status, and nothing is
// launched when the mistake is in parastack's own options or configuration.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/mpi_job.h"

namespace parastack {
namespace {

using namespace std::chrono_literals;
using testing::ChildOptions;
using testing::ChildProcess;
using testing::read_file;
using testing::TempDir;

struct Outcome {
  int status;
  std::string err;
};

Outcome run_parastack(const std::vector<std::string>& args, const TempDir& dir,
                      std::vector<std::string> environment = {}) {
  std::vector<std::string> argv{PARASTACK_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  // No site configuration unless the test gives one.
  if (std::none_of(environment.begin(), environment.end(),
                   [](const auto& e) { return e.starts_with("PARASTACK_CONFIG="); })) {
    environment.push_back("PARASTACK_CONFIG=");
  }
  int status;
  {
    ChildProcess child(argv, ChildOptions{environment, (dir.path() / "out").string(), (dir.path() / "err").string(),
                                          dir.path().string()});
    status = child.wait_exit(60s);
  }
  return {status, read_file(dir.path() / "err")};
}

TEST(RunMisuse, NoCommandAfterTheSeparator) {
  TempDir dir;
  for (const auto& args : {std::vector<std::string>{"run"}, std::vector<std::string>{"run", "--"}}) {
    const auto result = run_parastack(args, dir);
    EXPECT_EQ(result.status, 2);
    EXPECT_NE(result.err.find("no command after '--'"), std::string::npos) << result.err;
  }
}

TEST(RunMisuse, ACommandThatCannotBeRun) {
  TempDir dir;
  const auto result = run_parastack({"run", "--", "/no/such/launcher"}, dir);
  EXPECT_EQ(result.status, 2);
  EXPECT_NE(result.err.find("cannot run '/no/such/launcher': No such file or directory"), std::string::npos)
      << result.err;
}

TEST(RunMisuse, ACommandThatIsNotAnMpiJob) {
  TempDir dir;
  const auto result = run_parastack({"run", "--startup-timeout", "1", "--", "sleep", "3"}, dir);
  EXPECT_EQ(result.status, 5);
  EXPECT_NE(result.err.find("no MPI rank appeared under 'sleep' within 1 s"), std::string::npos) << result.err;
}

// A command in which no MPI rank was ever seen (here `true`) is reported as such: not "ranks found
// 0 s after the start", and no sample trace is named, since none was written (both until
// 2026-12-07).
TEST(RunMisuse, AJobInWhichNoRankWasSeenSaysSoAndNamesNoTrace) {
  TempDir dir;
  const auto result = run_parastack({"run", "--report", "r.json", "--", "true"}, dir);
  EXPECT_EQ(result.status, 0) << result.err;
  const std::string text = read_file(dir.path() / "r.txt");
  EXPECT_NE(text.find("watched:   no MPI rank was found\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("ranks found"), std::string::npos) << text;
  EXPECT_EQ(text.find("trace:"), std::string::npos) << text;
  const std::string json_text = read_file(dir.path() / "r.json");
  EXPECT_NE(json_text.find("\"found_at\": null"), std::string::npos) << json_text;
  EXPECT_NE(json_text.find("\"trace\": \"\""), std::string::npos) << json_text;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "r.trace.jsonl"));
}

// Inside a batch job that pbs_parastack (or the SPANK plugin) already watches, `parastack run`
// says it is a second watchdog: the job's environment names the watched job, by its PBS id on
// Torque. A job of another id is not this one.
TEST(RunMisuse, InsideAJobAlreadyWatchedItSaysSo) {
  TempDir dir;
  const std::string warning = "job 7.server is already watched by parastack (sbatch --parastack or pbs_parastack)";
  for (const bool same : {true, false}) {
    const auto result =
        run_parastack({"run", "--startup-timeout", "1", "--", "sleep", "3"}, dir,
                      {"PBS_JOBID=7.server", std::string("PARASTACK_WATCHED_JOB=") + (same ? "7.server" : "8.server")});
    EXPECT_EQ(result.status, 5) << result.err;
    EXPECT_EQ(result.err.find(warning) != std::string::npos, same) << result.err;
  }
}

// A report's directory that cannot be made (a file is in the way; missing ones are made with the
// report's first file) is said before the command starts, and the command still runs, watched.
// A missing directory is no problem.
TEST(RunMisuse, AReportDirectoryThatCannotBeMadeIsSaidAtOnce) {
  TempDir dir;
  std::ofstream(dir.path() / "a-file") << "in the way\n";
  const auto refused = run_parastack(
      {"run", "--startup-timeout", "1", "--report", "a-file/hangs/r.json", "--", "sh", "-c", "touch ran; sleep 3"},
      dir);
  EXPECT_EQ(refused.status, 5) << refused.err;
  EXPECT_NE(refused.err.find("the report cannot be written to a-file/hangs/r.json (" +
                             (dir.path() / "a-file").string() + " is not a directory)"),
            std::string::npos)
      << refused.err;
  EXPECT_LT(refused.err.find("cannot be written"), refused.err.find("watching sh")) << refused.err;
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "ran"));
  EXPECT_EQ(read_file(dir.path() / "a-file"), "in the way\n");

  const auto missing =
      run_parastack({"run", "--startup-timeout", "1", "--report", "no/such/dir/r.json", "--", "sleep", "3"}, dir);
  EXPECT_EQ(missing.status, 5) << missing.err;
  EXPECT_EQ(missing.err.find("cannot be written"), std::string::npos) << missing.err;
}

// A report name taken by something that is no file (a directory; a device, as root: `--report
// /dev/null` replaced /dev/null with a plain file, 2026-12-07), or in a directory only root's
// access() called writable (/proc), is said before the command starts, the command still runs,
// and what was there is left as it was.
TEST(RunMisuse, AReportNameTakenByADirectoryOrADeviceIsSaidAtOnceAndLeftAsItWas) {
  TempDir dir;
  std::filesystem::create_directory(dir.path() / "a-dir");
  std::vector<std::pair<std::string, std::string>> cases{{"a-dir", "a-dir is a directory"},
                                                         {"a-dir/", "a-dir/ names a directory"}};
  if (::geteuid() == 0) {
    ASSERT_EQ(::mknod((dir.path() / "null").c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
    cases.emplace_back("null", "null is not a regular file");
    cases.emplace_back("/proc/parastack-report.json", "cannot write in /proc");
  }
  for (const auto& [report, words] : cases) {
    SCOPED_TRACE(report);
    std::filesystem::remove(dir.path() / "ran");
    const auto result = run_parastack(
        {"run", "--startup-timeout", "1", "--report", report, "--", "sh", "-c", "touch ran; sleep 3"}, dir);
    EXPECT_EQ(result.status, 5) << result.err;
    const auto said = result.err.find("the report cannot be written to " + report + " (");
    EXPECT_NE(said, std::string::npos) << result.err;
    EXPECT_NE(result.err.find(words, said), std::string::npos) << result.err;
    EXPECT_LT(said, result.err.find("watching sh")) << result.err;
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "ran"));
  }
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "a-dir"));
  if (::geteuid() == 0) {
    EXPECT_TRUE(std::filesystem::is_character_file(dir.path() / "null"));
  }
  // A job that ends (no rank seen: a report is written): none of the report's files is written
  // beside a name that is no file (a-dir.txt, null.txt were), and its text goes to the log.
  for (const std::string report : {"a-dir", "null"}) {
    if (report == "null" && ::geteuid() != 0) continue;
    const auto result = run_parastack({"run", "--report", report, "--", "true"}, dir);
    EXPECT_EQ(result.status, 0) << result.err;
    EXPECT_NE(result.err.find("the report could not be written; here it is:"), std::string::npos) << result.err;
    for (const std::string beside : {".txt", ".dot", ".svg", ".trace.jsonl"}) {
      EXPECT_FALSE(std::filesystem::exists(dir.path() / (report + beside))) << report + beside;
    }
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path() / "a-dir"));
}

// A misspelt option, a command with options of its own without '--' (one without any runs as it
// is) and a misspelt command are named as such: CLI11 alone
// said "The following arguments were not expected: ./app 4 -np mpirun" for --alpah (the command's
// words, backwards, and never the option) and "A subcommand is required" for runn.
TEST(RunMisuse, AMisspeltOptionOrCommandIsNamed) {
  TempDir dir;
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"run", "--alpah", "0.01", "--", "touch", "launched"},
       "parastack: unknown option '--alpah' (parastack run --help lists them)\n"},
      {{"run", "--acton=report", "--", "touch", "launched"},
       "parastack: unknown option '--acton' (parastack run --help lists them)\n"},
      {{"run", "touch", "-c", "launched"},
       "parastack: the command to watch goes after '--': parastack run [options] -- mpirun -np N ./app\n"},
      {{"runn", "--", "touch", "launched"}, "parastack: unknown command 'runn' (parastack --help lists them)\n"},
      {{"replay", "--bogus", "x"}, "parastack: unknown option '--bogus' (parastack replay --help lists them)\n"}};
  for (const auto& [args, said] : cases) {
    const auto result = run_parastack(args, dir);
    EXPECT_EQ(result.status, 2) << said;
    EXPECT_EQ(result.err, said);
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "launched")) << said;
  }
}

// A pid that names no process is said to be that, by stack (it said "pid N: exited", as if the
// process had just ended) and by ranks (an empty table, then "no MPI ranks found").
TEST(RunMisuse, APidOfNoProcessIsSaidToBeOne) {
  TempDir dir;
  // A pid above the kernel's largest is never in use.
  const std::string none = std::to_string(4194304 + 1);
  auto result = run_parastack({"stack", "--pid", none}, dir);
  EXPECT_EQ(result.status, 2);
  EXPECT_EQ(result.err, "parastack stack: no process has pid " + none + "\n");
  result = run_parastack({"ranks", "--pid", none}, dir);
  EXPECT_EQ(result.status, 4);
  EXPECT_EQ(result.err, "parastack ranks: no process has pid " + none + "\n");
}

TEST(RunMisuse, BadOptionValuesAreRefusedBeforeAnythingIsLaunched) {
  TempDir dir;
  for (const auto& bad : std::vector<std::vector<std::string>>{{"--alpha", "2"},
                                                               {"--action", "explode"},
                                                               {"--ranks", "0"},
                                                               {"--interval", "-1"},
                                                               {"--grace", "nan"},
                                                               {"--startup-timeout", "nan"}}) {
    std::vector<std::string> args{"run"};
    args.insert(args.end(), bad.begin(), bad.end());
    args.insert(args.end(), {"--", "touch", "launched"});
    const auto result = run_parastack(args, dir);
    EXPECT_EQ(result.status, 2) << bad[0];
    EXPECT_NE(result.err.find(bad[0]), std::string::npos) << result.err;
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "launched")) << bad[0];
  }
}

TEST(RunMisuse, AnUnreadableOrInvalidSiteConfiguration) {
  TempDir dir;
  const auto config = dir.path() / "parastack.conf";
  std::ofstream(config) << "# site defaults\nalpha = 0.01\naction = explode\n";
  auto result = run_parastack({"run", "--config", config.string(), "--", "touch", "launched"}, dir);
  EXPECT_EQ(result.status, 2);
  EXPECT_NE(result.err.find("parastack.conf line 3: action = explode"), std::string::npos) << result.err;

  // A batch-only setting (parastack run has no use for it) is checked all the same.
  std::ofstream(config) << "alpha = 0.01\nmonitor-timeout = abc\n";
  result = run_parastack({"run", "--config", config.string(), "--", "touch", "launched"}, dir);
  EXPECT_EQ(result.status, 2);
  EXPECT_NE(result.err.find("parastack.conf line 2: monitor-timeout = abc: "), std::string::npos) << result.err;

  std::ofstream(config) << "alpha = 0.01\nfrobnicate = 3\n";
  result = run_parastack({"run", "--", "touch", "launched"}, dir, {"PARASTACK_CONFIG=" + config.string()});
  EXPECT_EQ(result.status, 2);
  EXPECT_NE(result.err.find("line 2: unknown setting 'frobnicate'"), std::string::npos) << result.err;

  result = run_parastack({"run", "--config", dir.path().string(), "--", "touch", "launched"}, dir);
  EXPECT_EQ(result.status, 2);
  EXPECT_NE(result.err.find("it is a directory"), std::string::npos) << result.err;

  result = run_parastack({"run", "--config", (dir.path() / "missing.conf").string(), "--", "touch", "launched"}, dir);
  EXPECT_EQ(result.status, 2);
  EXPECT_NE(result.err.find("No such file or directory"), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "launched"));
}

// The installed file with every line uncommented is a valid file that changes nothing: each line
// shows a value that reads back (`mpi-progress = ` did not, 2026-12-07).
TEST(RunConfig, TheTemplateWithEveryLineUncommentedIsValid) {
  TempDir dir;
  const auto shown = dir.path() / "parastack.conf";
  ASSERT_EQ(std::system((std::string(PARASTACK_BIN) + " config > " + shown.string()).c_str()), 0);
  std::ifstream lines(shown);
  std::ofstream config(dir.path() / "all.conf");
  int settings = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# ", 0) == 0 && line.find(" = ") != std::string::npos && line.find(' ', 2) == line.find(" = ")) {
      config << line.substr(2) << "\n";
      ++settings;
    }
  }
  config.close();
  EXPECT_GT(settings, 20);
  const auto result = run_parastack({"run", "--config", (dir.path() / "all.conf").string(), "--", "true"}, dir);
  EXPECT_EQ(result.status, 0) << result.err;
}

TEST(RunConfig, SiteValuesApplyAndTheCommandLineOverridesThem) {
  TempDir dir;
  const auto config = dir.path() / "parastack.conf";
  std::ofstream(config) << "alpha = 0.01\nranks = 4\n";
  auto result = run_parastack({"run", "--config", config.string(), "--", "true"}, dir);
  EXPECT_EQ(result.status, 0);
  EXPECT_NE(result.err.find("alpha 0.01, 4 ranks per set"), std::string::npos) << result.err;
  result = run_parastack({"run", "--config", config.string(), "--alpha", "0.05", "--", "true"}, dir);
  EXPECT_NE(result.err.find("alpha 0.05, 4 ranks per set"), std::string::npos) << result.err;
}

// Polls `done` (a file the job writes, a line parastack logs) until it holds or `limit` passes.
template <class Condition>
bool await(Condition done, std::chrono::seconds limit = 30s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

// Signals to parastack are the job's, whenever they come: here while parastack waits for a job in
// which it found no MPI rank (it waits in waitpid), two different ones in a row. Before, both
// were caught and kept in one slot that nobody read any more: the job never got them.
TEST(RunSignals, EverySignalReachesTheJobWhileParastackWaitsForIt) {
  TempDir dir;
  const auto got = dir.path() / "got";
  const std::string job =
      "trap 'echo USR1 >> got' USR1; trap 'echo TERM >> got; exit 7' TERM; "
      "echo $$ > ready; while :; do sleep 0.05; done";
  ChildProcess parastack(
      {PARASTACK_BIN, "run", "--startup-timeout", "0.5", "--", "sh", "-c", job},
      ChildOptions{
          {"PARASTACK_CONFIG="}, (dir.path() / "out").string(), (dir.path() / "err").string(), dir.path().string()});
  ASSERT_TRUE(await([&] { return read_file(dir.path() / "err").find("no MPI rank appeared") != std::string::npos; }))
      << read_file(dir.path() / "err");
  ASSERT_EQ(::kill(parastack.pid(), SIGUSR1), 0);
  ASSERT_EQ(::kill(parastack.pid(), SIGTERM), 0);
  EXPECT_TRUE(await([&] {
    const auto lines = read_file(got);
    return lines.find("USR1") != std::string::npos && lines.find("TERM") != std::string::npos;
  })) << "the job got: '"
      << read_file(got) << "'";
  EXPECT_EQ(parastack.wait_exit(30s), 5) << read_file(dir.path() / "err");
}

// A signal parastack's parent left ignored (nohup's SIGHUP) stays ignored, for parastack and for
// the job: `nohup parastack run ... &` survives the logout. Before, the job's SIGHUP was reset to
// its default and parastack passed a hangup on to it.
TEST(RunSignals, ASignalIgnoredByParastacksParentStaysIgnoredForTheJob) {
  TempDir dir;
  const std::string job = "echo $$ > ready; while :; do sleep 0.05; done";
  ChildProcess parastack(
      {"sh", "-c", "trap '' HUP; exec \"$0\" \"$@\"", PARASTACK_BIN, "run", "--startup-timeout", "0.5", "--", "sh",
       "-c", job},
      ChildOptions{
          {"PARASTACK_CONFIG="}, (dir.path() / "out").string(), (dir.path() / "err").string(), dir.path().string()});
  pid_t job_pid = 0;
  ASSERT_TRUE(await([&] { return (std::ifstream(dir.path() / "ready") >> job_pid) && job_pid > 0; }));
  // SigIgn in /proc/PID/status: a hexadecimal mask, bit N-1 for signal N.
  const auto ignored = [](pid_t pid, int signal) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);) {
      if (line.starts_with("SigIgn:")) return ((std::stoull(line.substr(7), nullptr, 16) >> (signal - 1)) & 1) != 0;
    }
    return false;
  };
  EXPECT_TRUE(ignored(job_pid, SIGHUP)) << "the job's SIGHUP is not ignored";
  EXPECT_FALSE(ignored(job_pid, SIGUSR1));
  ASSERT_TRUE(await([&] { return read_file(dir.path() / "err").find("no MPI rank appeared") != std::string::npos; }));
  ASSERT_EQ(::kill(parastack.pid(), SIGHUP), 0);
  // Both still there after the hangup and a signal that is passed on (which ends the job).
  ASSERT_EQ(::kill(parastack.pid(), SIGUSR1), 0);
  EXPECT_EQ(parastack.wait_exit(30s), 5) << "parastack did not outlive the hangup: " << read_file(dir.path() / "err");
}

}  // namespace
}  // namespace parastack
