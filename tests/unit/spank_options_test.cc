// The SPANK plugin's parsing (spank_plugin/options.h), which the plugin runs inside Slurm: the
// plugstack.conf arguments, the --parastack value, and the monitor's arguments built from them.
#include "options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

int parse(std::vector<std::string> args, site& s) {
  std::vector<char*> av;
  for (auto& a : args) av.push_back(a.data());
  return parastack_parse_site(static_cast<int>(av.size()), av.data(), &s);
}

TEST(SpankOptions, DefaultsThenTheLastSettingOfEach) {
  site s;
  ASSERT_EQ(parse({}, s), -1);
  EXPECT_STREQ(s.srun, "srun");
  EXPECT_EQ(s.mail, 1);
  EXPECT_EQ(s.enable_all, 0);
  ASSERT_EQ(parse({"monitor=/opt/a", "enable=all", "mail=no", "monitor=/opt/b", "actions=kill,report"}, s), -1);
  EXPECT_STREQ(s.monitor, "/opt/b");
  EXPECT_STREQ(s.actions, "kill,report");
  EXPECT_EQ(s.enable_all, 1);
  EXPECT_EQ(s.mail, 0);
}

TEST(SpankOptions, TheFirstBadArgumentIsNamed) {
  site s;
  EXPECT_EQ(parse({"enable=all", "colour=blue"}, s), 1);
  EXPECT_EQ(parse({"monitor=" + std::string(VALUE_MAX, 'x')}, s), 0);  // does not fit
  EXPECT_EQ(parse({"monitor=" + std::string(VALUE_MAX - 1, 'x')}, s), -1);
}

// Found by fuzz/spank_options_fuzzer.cc: the plugin hands actions= to parastack-monitor as the
// argument after --allowed-actions, and expand_job_options reads any "--job-options=..." argument
// as a list, so a site's actions=--job-options=grace=1 overrode the user's own values.
TEST(SpankOptions, AnActionsValueThatLooksLikeAnOptionIsRefused) {
  site s;
  EXPECT_EQ(parse({"actions=--job-options=grace=1"}, s), 0);
  EXPECT_EQ(parse({"mail=yes", "actions=-x"}, s), 1);
}

// The mailer is run by the monitors: an absolute path only, never a name looked up on a PATH.
TEST(SpankOptions, AMailerIsAnAbsolutePath) {
  site s;
  ASSERT_EQ(parse({}, s), -1);
  EXPECT_STREQ(s.mailer, "") << "the monitor's default";
  ASSERT_EQ(parse({"mailer=/opt/site/bin/mailer"}, s), -1);
  EXPECT_STREQ(s.mailer, "/opt/site/bin/mailer");
  EXPECT_EQ(parse({"mail=yes", "mailer=sendmail"}, s), 1);
  EXPECT_EQ(parse({"mailer="}, s), 0);
  EXPECT_EQ(parse({"mailer=-t"}, s), 0);
}

TEST(SpankOptions, TheOptionValueAndTheMonitorsArguments) {
  EXPECT_STREQ(parastack_option_value(nullptr), "");
  EXPECT_STREQ(parastack_option_value("(null)"), "");
  EXPECT_STREQ(parastack_option_value("action=report"), "action=report");
  site s;
  ASSERT_EQ(parse({"defaults=alpha=0.01", "actions=kill"}, s), -1);
  const char* argv[16] = {"parastack-monitor", "--check-options"};
  const int argc = parastack_add_choices(&s, "grace=5", argv, 2);
  ASSERT_EQ(argc, 8);
  const std::vector<std::string> got(argv, argv + argc);
  EXPECT_EQ(got, (std::vector<std::string>{"parastack-monitor", "--check-options", "--job-options", "alpha=0.01",
                                           "--job-options", "grace=5", "--allowed-actions", "kill"}));
}

// The monitor expands %j and the like in --report: the job's own directory must not be read as
// patterns, nor refused for them.
TEST(SpankOptions, TheDefaultReportKeepsAPercentSignOfTheDirectoryAsItself) {
  char out[64];
  ASSERT_EQ(parastack_default_report(out, sizeof out, "/home/ada/runs", "12.3"), 0);
  EXPECT_STREQ(out, "/home/ada/runs/parastack-12.3.json");
  ASSERT_EQ(parastack_default_report(out, sizeof out, "/scratch/100%/%j", "12"), 0);
  EXPECT_STREQ(out, "/scratch/100%%/%%j/parastack-12.json");
  EXPECT_EQ(parastack_default_report(out, 20, "/home/ada/runs", "12"), -1) << "does not fit";
  EXPECT_EQ(parastack_default_report(out, 8, "%%%%%%%%", "1"), -1) << "does not fit once doubled";
}

// /proc/self/cmdline of salloc: NUL-terminated arguments.
salloc_command classify(const std::vector<std::string>& args, std::string* launcher = nullptr) {
  std::string cmdline;
  for (const auto& a : args) cmdline += a + '\0';
  const char* found = nullptr;
  const auto kind = parastack_salloc_command(cmdline.data(), static_cast<long>(cmdline.size()), &found);
  if (launcher) *launcher = found ? found : "";
  return kind;
}

TEST(SpankOptions, TheProgressLibraryIsWantedByTheLastMpiProgressItemUsersWin) {
  char library[VALUE_MAX];
  EXPECT_EQ(parastack_progress_choice("", "", library), 0);
  EXPECT_EQ(std::string(library).rfind('/', 0), 0u) << "the installed library is the default: " << library;
  EXPECT_EQ(parastack_progress_choice("", "alpha=0.01,mpi-progress=on", library), 1);
  EXPECT_EQ(parastack_progress_choice("mpi-progress=yes", "", library), 1);
  EXPECT_EQ(parastack_progress_choice("mpi-progress=on", "mpi-progress=off", library), 0);
  EXPECT_EQ(parastack_progress_choice("", "mpi-progress=on,mpi-progress=0", library), 0);
  EXPECT_EQ(parastack_progress_choice("", "mpi-progress=onward", library), 0);
  EXPECT_EQ(parastack_progress_choice("", "xmpi-progress=on", library), 0);
  EXPECT_EQ(parastack_progress_choice("mpi-progress-library=/opt/p.so", "mpi-progress=true", library), 1);
  EXPECT_STREQ(library, "/opt/p.so");
  // Only an absolute path names the library.
  parastack_progress_choice("", "mpi-progress-library=p.so,mpi-progress=1", library);
  EXPECT_NE(std::string(library), "p.so");
}

TEST(SpankOptions, ThePreloadPutsTheLibraryFirstOnceAndFitsOrIsRefused) {
  char out[64];
  ASSERT_EQ(parastack_preload_value(out, sizeof out, "/l/p.so", ""), 0);
  EXPECT_STREQ(out, "/l/p.so");
  ASSERT_EQ(parastack_preload_value(out, sizeof out, "/l/p.so", "/u/mine.so"), 0);
  EXPECT_STREQ(out, "/l/p.so:/u/mine.so");
  ASSERT_EQ(parastack_preload_value(out, sizeof out, "/l/p.so", "/u/mine.so:/l/p.so"), 0);
  EXPECT_STREQ(out, "/u/mine.so:/l/p.so");
  ASSERT_EQ(parastack_preload_value(out, sizeof out, "/l/p.so", "/l/p.so.old"), 0);
  EXPECT_STREQ(out, "/l/p.so:/l/p.so.old");
  EXPECT_EQ(parastack_preload_value(out, 10, "/l/p.so", "/u/mine.so"), -1);
}

TEST(SpankOptions, WhatSallocRunsDecidesWhetherItsRanksCanBeWatched) {
  std::string launcher;
  EXPECT_EQ(classify({"sbatch", "--parastack", "mpirun", "job.sh"}), NOT_SALLOC);
  EXPECT_EQ(classify({"/usr/bin/srun", "--parastack", "mpirun"}), NOT_SALLOC);
  EXPECT_EQ(classify({}), NOT_SALLOC);
  EXPECT_EQ(classify({"salloc", "--parastack", "-n", "4", "srun", "--mpi=pmix", "./app"}), SALLOC_SRUN);
  EXPECT_EQ(classify({"/usr/bin/salloc", "-n4", "/usr/bin/srun", "mpirun"}), SALLOC_SRUN) << "mpirun in a step";
  EXPECT_EQ(classify({"salloc", "--parastack", "-n", "4", "/usr/bin/mpiexec.openmpi", "./app"}, &launcher),
            SALLOC_MPI_LAUNCHER);
  EXPECT_EQ(launcher, "/usr/bin/mpiexec.openmpi");
  EXPECT_EQ(classify({"salloc", "-n", "4", "mpirun", "./app"}, &launcher), SALLOC_MPI_LAUNCHER);
  EXPECT_EQ(launcher, "mpirun");
  EXPECT_EQ(classify({"salloc", "--parastack", "-n", "4"}), SALLOC_OTHER) << "the user's shell";
  EXPECT_EQ(classify({"salloc", "--parastack", "./run-mpirun.sh", "mpirunner"}), SALLOC_OTHER);
}

TEST(SpankOptions, ATruncatedCommandLineIsReadUpToItsLastWholeArgument) {
  const std::string cmdline = std::string("salloc") + '\0' + "-n" + '\0' + "mpiru";
  const char* launcher = nullptr;
  EXPECT_EQ(parastack_salloc_command(cmdline.data(), static_cast<long>(cmdline.size()), &launcher), SALLOC_OTHER);
  EXPECT_EQ(launcher, nullptr);
  EXPECT_EQ(parastack_salloc_command("salloc", 6, &launcher), NOT_SALLOC) << "not even argv[0] is whole";
}

}  // namespace
