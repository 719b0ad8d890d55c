// The installed documentation says what the programs do: the man pages render without a warning,
// and the option lists they give are the programs' own (sbatch --parastack=help, parastack config).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "support/shell.h"

namespace {

using parastack::testing::ShellResult;
ShellResult run(const std::string& command) { return parastack::testing::run_shell(command); }

std::string man_page(const std::string& name) {
  std::ifstream in(std::string(PARASTACK_MAN_DIR) + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The part of a man page from section `title` to the next section.
std::string section(const std::string& page, const std::string& title) {
  const auto start = page.find("\n.SH " + title + "\n");
  if (start == std::string::npos) return {};
  const auto end = page.find("\n.SH ", start + 1);
  return page.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

std::set<std::string> matches(const std::string& text, const std::regex& pattern) {
  std::set<std::string> found;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern); it != std::sregex_iterator(); ++it) {
    std::string name = (*it)[1];
    name.erase(std::remove(name.begin(), name.end(), '\\'), name.end());  // "max\-interval"
    found.insert(name);
  }
  return found;
}

TEST(ManPages, EveryPageRendersWithoutAWarning) {
  if (run("command -v man >/dev/null").status != 0)
    GTEST_SKIP() << "no man (packaging/bootstrap.sh test installs man-db)";
  for (const char* page : {"parastack.1", "pbs_parastack.1", "parastack.conf.5", "parastack-spank.8"}) {
    SCOPED_TRACE(page);
    const auto rendered =
        run(std::string("MANWIDTH=80 man --warnings -l ") + PARASTACK_MAN_DIR + "/" + page + " 2>&1 >/dev/null");
    EXPECT_EQ(rendered.status, 0);
    EXPECT_EQ(rendered.out, "") << "warnings";
    const auto text = run(std::string("MANWIDTH=80 man -l ") + PARASTACK_MAN_DIR + "/" + page + " 2>/dev/null");
    EXPECT_NE(text.out.find("NAME"), std::string::npos) << text.out;
  }
}

// sbatch --parastack=help prints `parastack-monitor --list-options`: its names are exactly the
// JOB OPTIONS of parastack-spank(8).
TEST(ManPages, TheSpankPageListsTheJobOptionsHelpPrints) {
  const auto help = run(std::string(PARASTACK_MONITOR_BIN) + " --list-options");
  ASSERT_EQ(help.status, 0) << help.out;
  const auto printed = matches(help.out, std::regex(R"(\n  ([a-z-]+)=)"));
  ASSERT_GT(printed.size(), 10u) << help.out;
  const auto documented =
      matches(section(man_page("parastack-spank.8"), "JOB OPTIONS"), std::regex(R"(\n\.TP\n\.B ([a-z\\-]+)=)"));
  EXPECT_EQ(documented, printed);
}

// ... with a batch job's own defaults where they are not parastack run's: the monitors log at
// level error, the report is named after the job, and grace is the scheduler's (the list gave
// run's info, ./parastack-HOST-PID.json and 10 until 2026-12-07).
TEST(ManPages, TheJobOptionsHelpGivesABatchJobsOwnDefaults) {
  const auto help = run(std::string(PARASTACK_MONITOR_BIN) + " --list-options");
  ASSERT_EQ(help.status, 0) << help.out;
  const auto line_of = [&](const std::string& name) {
    const auto at = help.out.find("\n  " + name + "=");
    return at == std::string::npos ? std::string() : help.out.substr(at + 1, help.out.find('\n', at + 1) - at - 1);
  };
  EXPECT_NE(line_of("log-level").find("[default: error]"), std::string::npos) << line_of("log-level");
  EXPECT_NE(line_of("report").find("[default: parastack-JOBID.json]"), std::string::npos) << line_of("report");
  EXPECT_EQ(line_of("report").find("HOST-PID"), std::string::npos) << line_of("report");
  EXPECT_NE(line_of("grace").find("[default: not used"), std::string::npos) << line_of("grace");
  EXPECT_NE(line_of("alpha").find("[default: 0.001]"), std::string::npos) << line_of("alpha");
  EXPECT_NE(help.out.find("pbs_parastack"), std::string::npos) << help.out;
}

// At submission (--check-options), mpi-progress takes only the words the SPANK plugin and
// pbs_parastack act on, and its library only an absolute path: `mpi-progress=enable` and a relative
// library were accepted and then preloaded nothing (2026-12-07).
TEST(ManPages, TheProgressLibrarysJobOptionsTakeOnlyWhatTheIntegrationsAct) {
  const auto check = [](const std::string& item) {
    return run(std::string(PARASTACK_MONITOR_BIN) + " --check-options --job-options " + item + " 2>&1");
  };
  for (const std::string good : {"on", "off", "yes", "no", "true", "false", "1", "0"}) {
    EXPECT_EQ(check("mpi-progress=" + good).status, 0) << good;
  }
  for (const std::string bad : {"enable", "y", "2"}) {
    const auto refused = check("mpi-progress=" + bad);
    EXPECT_NE(refused.status, 0) << bad;
    EXPECT_NE(refused.out.find("mpi-progress"), std::string::npos) << refused.out;
  }
  EXPECT_EQ(check("mpi-progress-library=/opt/p/libparastack-progress.so").status, 0);
  const auto relative = check("mpi-progress-library=lib/libparastack-progress.so");
  EXPECT_NE(relative.status, 0);
  EXPECT_NE(relative.out.find("an absolute path"), std::string::npos) << relative.out;
}

// parastack config (the installed parastack.conf) names every key; parastack(1) documents each as
// an option, and parastack.conf(5) as a setting.
TEST(ManPages, EverySettingOfTheConfigFileIsDocumented) {
  const auto config = run(std::string(PARASTACK_BIN) + " config");
  ASSERT_EQ(config.status, 0) << config.out;
  const auto keys = matches(config.out, std::regex(R"(\n# ([a-z-]+) = )"));
  ASSERT_GT(keys.size(), 15u) << config.out;
  const std::string conf_page = section(man_page("parastack.conf.5"), "WATCH SETTINGS") +
                                section(man_page("parastack.conf.5"), "SCHEDULER SETTINGS");
  const auto in_conf_page = matches(conf_page, std::regex(R"(\.B[IR]? ([a-z\\-]+)[ ,:\n])"));
  const std::string parastack_page = man_page("parastack.1");
  for (const auto& key : keys) {
    EXPECT_TRUE(in_conf_page.contains(key)) << key << " is not in parastack.conf(5)";
    if (key == "monitor" || key == "mpirun" || key == "mail" || key == "mailer" || key == "actions") continue;
    std::string escaped = "\\-\\-" + std::regex_replace(key, std::regex("-"), "\\-");
    EXPECT_NE(parastack_page.find(escaped), std::string::npos) << key << " is not in parastack(1)";
  }
}

// Each setting of the generated file is a valid one, at its default: parastack run accepts the file
// with every line uncommented.
TEST(SiteConfigTemplate, EverySettingUncommentedIsAccepted) {
  const auto config = run(std::string(PARASTACK_BIN) + " config");
  ASSERT_EQ(config.status, 0);
  std::istringstream lines(config.out);
  std::string uncommented;
  for (std::string line; std::getline(lines, line);) {
    static const std::regex setting(R"(# ([a-z-]+) = (.*))");
    std::smatch m;
    if (std::regex_match(line, m, setting) && !m[2].str().empty())
      uncommented += m[1].str() + " = " + m[2].str() + "\n";
  }
  char dir[] = "/tmp/parastack-conf-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/parastack.conf";
  std::ofstream(path) << uncommented;
  // `true` is no MPI job: parastack run reads the file, runs it and reports that no rank was seen.
  const auto checked = run(std::string(PARASTACK_BIN) + " run --config " + path + " --report " + dir +
                           "/report.json --startup-timeout 0.1 -- true 2>&1");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(checked.out.find("parastack.conf line"), std::string::npos) << checked.out;
  EXPECT_EQ(checked.out.find(path + " line"), std::string::npos) << checked.out;
  EXPECT_EQ(checked.status, 0) << checked.out << "\n" << uncommented;
  EXPECT_NE(checked.out.find("the job ended before any MPI rank was seen"), std::string::npos) << checked.out;
}

}  // namespace
