// pbs_parastack's pure part: the qsub command line it reads and the job script it writes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

#include "job_script.h"
#include "qsub_command_line.h"

namespace parastack::pbs {
namespace {

QsubCommandLine parsed(const std::vector<std::string>& args) {
  auto result = parse_command_line(args);
  if (auto* error = std::get_if<std::string>(&result)) ADD_FAILURE() << *error;
  return std::get_if<QsubCommandLine>(&result) ? std::get<QsubCommandLine>(result) : QsubCommandLine{};
}

std::string error_of(const std::vector<std::string>& args) {
  auto result = parse_command_line(args);
  return std::get_if<std::string>(&result) ? std::get<std::string>(result) : "(no error)";
}

TEST(QsubCommandLine, QsubOptionsPassThroughAndTheScriptAndParastackOptionsAreSeparated) {
  const auto line = parsed(
      {"-l", "nodes=2:ppn=8", "-N", "run1", "-Vj", "oe", "-M", "me@site", "-mabe", "job.sh", "--", "--alpha=0.001"});
  EXPECT_EQ(line.qsub_args, (std::vector<std::string>{"-l", "nodes=2:ppn=8", "-N", "run1", "-V", "-j", "oe", "-M",
                                                      "me@site", "-m", "abe"}));
  EXPECT_EQ(line.script, "job.sh");
  EXPECT_EQ(line.parastack_args, std::vector<std::string>{"--alpha=0.001"});
  EXPECT_EQ(line.mail_users, "me@site");
  EXPECT_FALSE(line.interactive);
}

TEST(QsubCommandLine, WithoutAScriptItComesOnStdinAndDashDashStillStartsParastackOptions) {
  const auto line = parsed({"-q", "short", "--", "--action", "report"});
  EXPECT_FALSE(line.script);
  EXPECT_EQ(line.parastack_args, (std::vector<std::string>{"--action", "report"}));
}

TEST(QsubCommandLine, ShellArgumentsAndPrefixAreReadAndArgumentsAreNotQsubs) {
  const auto line = parsed({"-S", "/bin/tcsh@node1,/bin/bash", "-F", "one 'two words'", "-C", "#MY", "job.sh"});
  EXPECT_EQ(line.shell, "/bin/tcsh");
  EXPECT_EQ(line.script_args, (std::vector<std::string>{"one", "two words"}));
  EXPECT_EQ(line.directive_prefix, "#MY");
  EXPECT_EQ(line.qsub_args, (std::vector<std::string>{"-S", "/bin/tcsh@node1,/bin/bash", "-C", "#MY"}))
      << "-F is carried out inside the job, not by qsub";
}

TEST(QsubCommandLine, MistakesAreOneClearSentence) {
  EXPECT_EQ(error_of({"-l"}), "option -l needs a value");
  EXPECT_EQ(error_of({"-Y", "job.sh"}), "unknown qsub option -Y");
  EXPECT_NE(error_of({"job.sh", "--alpha=1"}).find("after the script"), std::string::npos);
  EXPECT_NE(error_of({"--alpha=1", "job.sh"}).find("parastack options go after the script and --"), std::string::npos);
  EXPECT_EQ(error_of({"-F", "'unterminated"}), "-F 'unterminated: an unterminated quote");
}

TEST(QsubCommandLine, InteractiveIsNoticedOnTheCommandLineAndInADirective) {
  EXPECT_TRUE(parsed({"-I"}).interactive);
  auto line = parsed({"job.sh"});
  ASSERT_FALSE(apply_directives({" -l nodes=1", " -I"}, line));
  EXPECT_TRUE(line.interactive);
}

TEST(QsubCommandLine, DirectivesFillInButNeverOverrideTheCommandLine) {
  auto line = parsed({"-M", "cli@site", "job.sh"});
  ASSERT_FALSE(apply_directives({" -M script@site -S /bin/csh", " -N name"}, line));
  EXPECT_EQ(line.mail_users, "cli@site");
  EXPECT_EQ(line.shell, "/bin/csh");
  EXPECT_TRUE(line.qsub_args == (std::vector<std::string>{"-M", "cli@site"})) << "qsub reads the directives itself";
  EXPECT_NE(apply_directives({" -Q"}, line), std::nullopt);
}

TEST(JobScript, TheHeaderIsTheFirstBlockOfCommentsAndItsDirectivesArePicked) {
  const std::string text =
      "#!/bin/bash\n#PBS -N a\n\n# a comment\n  #PBS -l walltime=1:00\n#PBSX not one\necho hi\n#PBS -M late@x\n";
  const auto parts = split_script(text, "#PBS");
  EXPECT_TRUE(parts.has_interpreter);
  EXPECT_EQ(parts.header, "#PBS -N a\n\n# a comment\n  #PBS -l walltime=1:00\n#PBSX not one\n");
  EXPECT_EQ(parts.directives, (std::vector<std::string>{" -N a", " -l walltime=1:00"}))
      << "a directive after the first command is not one, as for qsub";
  EXPECT_FALSE(split_script("echo hi\n", "#PBS").has_interpreter);
}

TEST(JobScript, TheWrapperKeepsTheHeaderAndCarriesTheScriptVerbatim) {
  const std::string text = "#!/bin/bash\n#PBS -N a\necho \"$HOME\" 'it''s' `date` $((1+1))\n";
  const auto parts = split_script(text, "#PBS");
  const std::string marker = end_marker(text, "abc");
  const auto wrapper =
      wrapper_script(parts, "/home/u/job.sh", {"/usr/bin/pbs_parastack", "--in-job", "it's"}, text, marker);
  EXPECT_EQ(wrapper.rfind("#!/bin/sh\n#PBS -N a\n", 0), 0u) << wrapper;
  EXPECT_NE(wrapper.find("exec '/usr/bin/pbs_parastack' '--in-job' 'it'\\''s' <<'PARASTACK_SCRIPT_abc'\n" + text +
                         "PARASTACK_SCRIPT_abc\n'PARASTACK_SCRIPT_abc'\n"),
            std::string::npos)
      << wrapper;
}

TEST(JobScript, TheBareMarkerCshLeavesIsDroppedAndNothingElse) {
  EXPECT_EQ(script_from_here_document("echo a\nM\n", "M"), "echo a\n");
  EXPECT_EQ(script_from_here_document("echo a\n", "M"), "echo a\n");
  EXPECT_EQ(script_from_here_document("M\n", "M"), "");
  EXPECT_EQ(script_from_here_document("echo aM\n", "M"), "echo aM\n");
}

TEST(JobScript, TheMarkerIsNoLineOfTheScriptAndWordsCshCannotCarryAreRefused) {
  EXPECT_EQ(end_marker("PARASTACK_SCRIPT_abc\n", "abc"), "PARASTACK_SCRIPT_abc_");
  EXPECT_EQ(quote("a b"), "'a b'");
  EXPECT_EQ(quote("two\nlines"), std::nullopt);
  EXPECT_EQ(quote("bang!"), std::nullopt);
  EXPECT_TRUE(runs_the_wrapper("/bin/tcsh"));
  EXPECT_TRUE(runs_the_wrapper("bash"));
  EXPECT_FALSE(runs_the_wrapper("/usr/bin/python3"));
}

TEST(JobScript, TheGeneratedWrapperRunsUnderShAndCsh) {
  // The exec line must be read the same by the shells Torque may use (login shell or -S).
  const std::string text = "#!/bin/bash\necho \"payload $1\"\n";
  const auto wrapper = wrapper_script(split_script(text, "#PBS"), "job.sh", {"/bin/cat"}, text, end_marker(text, "x"));
  char path[] = "/tmp/pbs-wrapper-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, wrapper.data(), wrapper.size()), static_cast<ssize_t>(wrapper.size()));
  ::close(fd);
  for (const char* shell : {"/bin/sh", "/bin/bash", "/bin/dash", "/bin/csh", "/bin/tcsh"}) {
    if (::access(shell, X_OK) != 0) continue;
    FILE* pipe = ::popen((std::string(shell) + " " + path).c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string out;
    char buffer[256];
    while (std::fgets(buffer, sizeof buffer, pipe)) out += buffer;
    EXPECT_EQ(::pclose(pipe), 0) << shell;
    EXPECT_EQ(script_from_here_document(out, "PARASTACK_SCRIPT_x"), text) << shell;
  }
  ::unlink(path);
}

}  // namespace
}  // namespace parastack::pbs
