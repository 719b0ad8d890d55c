// What users and sites write, read back: the job's option list (sbatch --parastack=...,
// expand_job_options) and the site configuration file (read_site_config, apply_site_config).
#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "cli/commands.h"
#include "cli/job_options.h"
#include "cli/path_patterns.h"
#include "cli/site_config.h"

namespace parastack::cli {
namespace {

using Args = std::vector<std::string>;

TEST(JobOptions, ArgumentsWithoutAListPassThrough) {
  const Args argv{"parastack-monitor", "--slurm-job", "42", "--alpha=0.01"};
  EXPECT_EQ(expand_job_options(argv), argv);
}

TEST(JobOptions, AListBecomesOneArgumentPerOption) {
  EXPECT_EQ(expand_job_options({"m", "--slurm-job", "42", "--job-options", "action=report,alpha=0.01"}),
            (Args{"m", "--slurm-job", "42", "--action=report", "--alpha=0.01"}));
  EXPECT_EQ(expand_job_options({"m", "--job-options=ranks=4"}), (Args{"m", "--ranks=4"}));
}

TEST(JobOptions, TheJobsValueWinsOverTheSitesAndTheLaterOverTheEarlier) {
  // The plugin puts the site's own options first: the job's list overrides them, in both spellings.
  EXPECT_EQ(expand_job_options({"m", "--alpha", "0.1", "--grace=5", "--job-options", "alpha=0.01,grace=1,alpha=0.02"}),
            (Args{"m", "--alpha=0.02", "--grace=1"}));
}

// A batch job's monitors log only errors (the plugin's --log-level error): a log file asked for
// gets the watch's log, unless the job chose a level too. mpirun's daemons step has no stderr
// anybody reads (Open MPI sends it to /dev/null): this is the only way to see its monitors' log.
TEST(JobOptions, ALogFileComesWithTheInfoLevelUnlessALevelIsChosen) {
  EXPECT_EQ(expand_job_options({"m", "--log-level", "error", "--job-options", "log-file=w.log"}),
            (Args{"m", "--log-file=w.log", "--log-level=info"}));
  EXPECT_EQ(expand_job_options({"m", "--log-level", "error", "--job-options", "log-level=debug,log-file=w.log"}),
            (Args{"m", "--log-level=debug", "--log-file=w.log"}));
  EXPECT_EQ(expand_job_options({"m", "--log-level", "error", "--job-options", "alpha=0.01"}),
            (Args{"m", "--log-level", "error", "--alpha=0.01"}));
}

TEST(JobOptions, EmptyItemsAreIgnored) {
  EXPECT_EQ(expand_job_options({"m", "--job-options", ",seed=3,,"}), (Args{"m", "--seed=3"}));
}

TEST(JobOptions, AnUnknownNameOrAMissingValueIsAClearError) {
  try {
    expand_job_options({"m", "--job-options", "slurm-job=7"});  // not the job's to choose
    FAIL() << "slurm-job accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown option 'slurm-job'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(expand_job_options({"m", "--job-options", "alpha"}), std::runtime_error);
  EXPECT_THROW(expand_job_options({"m", "--job-options", "alpha="}), std::runtime_error);
  EXPECT_THROW(expand_job_options({"m", "--job-options"}), std::runtime_error);
}

// CLI::Range and CLI::PositiveNumber let "nan" through; --grace nan reached the kill as NaN seconds
// made into milliseconds (undefined behaviour), from the command line, the site file or a job's
// --parastack=grace=nan. Found by fuzz/job_options_fuzzer.cc.
TEST(JobOptions, NonFiniteNumbersAreRefused) {
  for (const std::string name : {"grace", "alpha", "interval", "max-interval", "horizon", "stasis-min"}) {
    for (const std::string value : {"nan", "-nan", "inf"}) {
      watch::WatchOptions options;
      CLI::App app;
      add_watch_options(app, options);
      const auto args = expand_job_options({"m", "--job-options", name + "=" + value});
      std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);
      EXPECT_THROW(app.parse(reversed), CLI::ValidationError) << name << "=" << value;
    }
  }
  CLI::App app;
  const auto run = add_run_command(app);
  EXPECT_THROW(app.parse(std::vector<std::string>{"true", "--", "nan", "--startup-timeout", "run"}),
               CLI::ValidationError);
  watch::WatchOptions options;
  CLI::App fine;
  add_watch_options(fine, options);
  fine.parse(std::vector<std::string>{"2.5", "--grace", "0.125", "--interval"});
  EXPECT_EQ(options.watchdog.model.initial_interval, 0.125);
  EXPECT_EQ(options.grace, 2.5);
}

// CLI::Range said "Value abc not in range 0.000000 to 0.500000" for --alpha abc, and printed the
// bound 1e-12 as 0.000000, so "--alpha 0" read as in range. The same words reach a batch job's
// --parastack=alpha=... and a site file.
TEST(JobOptions, ABadNumberIsRefusedInWordsTheUserCanActOn) {
  const auto refusal = [](const std::string& option, const std::string& value) {
    watch::WatchOptions options;
    CLI::App app;
    add_watch_options(app, options);
    try {
      app.parse(std::vector<std::string>{value, "--" + option});
    } catch (const CLI::ValidationError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refusal("alpha", "abc"), "--alpha: 'abc' is not a number");
  EXPECT_EQ(refusal("alpha", "0"), "--alpha: 0 is outside [1e-12, 0.5]");
  EXPECT_EQ(refusal("alpha", "0.6"), "--alpha: 0.6 is outside [1e-12, 0.5]");
  EXPECT_EQ(refusal("alpha", "1e-12"), "accepted");
  EXPECT_EQ(refusal("alpha", "0.5"), "accepted");
  EXPECT_EQ(refusal("interval", "-1"), "--interval: -1 is not above 0");
  EXPECT_EQ(refusal("interval", "0"), "--interval: 0 is not above 0");
  EXPECT_EQ(refusal("interval", "1e-3"), "accepted");
  EXPECT_EQ(refusal("ranks", "2.5"), "--ranks: '2.5' is not a whole number");
  EXPECT_EQ(refusal("ranks", "0"), "--ranks: 0 is outside [1, 10000]");
  EXPECT_EQ(refusal("ranks", "10000"), "accepted");
  EXPECT_EQ(refusal("grace", "3601"), "--grace: 3601 is outside [0, 3600]");
  EXPECT_EQ(refusal("grace", "0"), "accepted");
  EXPECT_EQ(refusal("grace", "inf"), "--grace: 'inf' is not a number");
}

TEST(PathPatterns, EachPatternIsReplacedAndAPercentSignIsWrittenTwice) {
  const PathFields fields{.job = "1234.0", .host = "node7", .pid = "42", .user = "ada"};
  EXPECT_EQ(expand_path_pattern("hangs/%u/%j-%h-%p.json", fields), "hangs/ada/1234.0-node7-42.json");
  EXPECT_EQ(expand_path_pattern("100%%-%j%j", fields), "100%-1234.01234.0");
  EXPECT_EQ(expand_path_pattern("%%j", fields), "%j");
  EXPECT_EQ(expand_path_pattern("plain/report.json", fields), "plain/report.json");
  EXPECT_EQ(expand_path_pattern("", fields), "");
  // A value never makes a directory of its own (a PBS array id, a host name from a strange resolver).
  EXPECT_EQ(expand_path_pattern("r-%j.json", {.job = "12/3", .host = "h", .pid = "1", .user = "u"}), "r-12_3.json");
  // A default path built from a directory (pbs_parastack's $PBS_O_WORKDIR) stays itself.
  EXPECT_EQ(expand_path_pattern(literal_path("/scratch/100%/%j/r.json"), fields), "/scratch/100%/%j/r.json");
  // A job that is no array task: %A is its id, %a Slurm's "no value", as `sbatch -o %A_%a` writes them.
  EXPECT_EQ(expand_path_pattern("%A_%a", fields), "1234.0_4294967294");
  PathFields task = fields;
  task.array_job = "1230";
  task.array_task = "4";
  EXPECT_EQ(expand_path_pattern("hangs/%A/%a-%j.json", task), "hangs/1230/4-1234.0.json");
}

// The job-array fields, from each batch system's variables, and only from the watched job's own
// environment.
TEST(PathPatterns, ArrayFieldsComeFromTheWatchedJobsOwnEnvironment) {
  using Environment = std::map<std::string, std::string>;
  const auto fields_in = [](const std::string& job, const Environment& environment) {
    PathFields fields{.job = job, .host = "h", .pid = "1", .user = "u"};
    add_array_fields(fields, [&](const char* name) {
      const auto found = environment.find(name);
      return found == environment.end() ? std::string() : found->second;
    });
    return fields.array_job + "_" + fields.array_task;
  };
  const Environment slurm{{"SLURM_JOB_ID", "1234"}, {"SLURM_ARRAY_JOB_ID", "1230"}, {"SLURM_ARRAY_TASK_ID", "4"}};
  EXPECT_EQ(fields_in("1234", slurm), "1230_4");
  EXPECT_EQ(fields_in("1234.2", slurm), "1230_4") << "a step watched alone";
  EXPECT_EQ(fields_in("999", slurm), "999_4294967294") << "another job's environment";
  EXPECT_EQ(fields_in("1234", {{"SLURM_JOB_ID", "1234"}}), "1234_4294967294") << "no array";
  // Slurm's PBS front end sets PBS_JOBID to the Slurm id beside Slurm's own variables.
  Environment pbs_over_slurm = slurm;
  pbs_over_slurm["PBS_JOBID"] = "1234";
  pbs_over_slurm["PBS_ARRAYID"] = "4";
  EXPECT_EQ(fields_in("1234", pbs_over_slurm), "1230_4");
  // PBS Pro names the array; Torque only the index, the array being the id with [] for [INDEX].
  EXPECT_EQ(fields_in("77[4].server",
                      {{"PBS_JOBID", "77[4].server"}, {"PBS_ARRAY_ID", "77[].server"}, {"PBS_ARRAY_INDEX", "4"}}),
            "77[].server_4");
  EXPECT_EQ(fields_in("77[4].server", {{"PBS_JOBID", "77[4].server"}, {"PBS_ARRAYID", "4"}}), "77[].server_4");
  EXPECT_EQ(fields_in("78[4].server", {{"PBS_JOBID", "77[4].server"}, {"PBS_ARRAYID", "4"}}),
            "78[4].server_4294967294");
  EXPECT_EQ(fields_in("77.server", {{"PBS_JOBID", "77.server"}}), "77.server_4294967294");
}

TEST(PathPatterns, AnUnknownPatternOrALonePercentSignIsAClearErrorWhereTheOptionIsGiven) {
  for (const std::string bad : {"r-%q.json", "r-100%", "%J.json", "%"}) {
    const auto error = path_pattern_error(bad);
    ASSERT_TRUE(error.has_value()) << bad;
    EXPECT_NE(error->find("'" + bad + "'"), std::string::npos) << *error;
    EXPECT_THROW(expand_path_pattern(bad, {}), std::invalid_argument) << bad;
  }
  EXPECT_NE(path_pattern_error("r-%q.json")
                ->find("%j (job id), %A and %a (job array id and index), %h (host), %p (process id), %u (user)"),
            std::string::npos);
  // As a job's option: refused by parsing, i.e. by --check-options at submission.
  for (const std::string name : {"report", "log-file"}) {
    watch::WatchOptions options;
    CLI::App app;
    add_watch_options(app, options);
    const auto args = expand_job_options({"m", "--job-options", name + "=hangs/%s.json"});
    std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);
    EXPECT_THROW(app.parse(reversed), CLI::ValidationError) << name;
  }
  watch::WatchOptions options;
  CLI::App app;
  add_watch_options(app, options);
  app.parse(std::vector<std::string>{"--report=hangs/%j-%%.json"});
  EXPECT_EQ(options.report, "hangs/%j-%%.json") << "expanded by the watcher, not by parsing";
}

// A scratch file, removed whatever happens.
class ConfigFile {
 public:
  explicit ConfigFile(const std::string& content)
      : path_(std::filesystem::temp_directory_path() /
              ("parastack-config-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++) + ".conf")) {
    std::ofstream(path_) << content;
  }
  ~ConfigFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

TEST(SiteConfig, ReadsKeysValuesCommentsAndQuotes) {
  ConfigFile file(
      "# site defaults\n\nalpha = 0.01\n  action=report   # no kills here\nreport = \"/var/log/p s.json\"\n");
  const auto read = read_site_config(file.path());
  ASSERT_TRUE(std::holds_alternative<std::vector<Setting>>(read)) << std::get<std::string>(read);
  const auto& settings = std::get<std::vector<Setting>>(read);
  ASSERT_EQ(settings.size(), 3u);
  EXPECT_EQ(settings[0].key, "alpha");
  EXPECT_EQ(settings[0].value, "0.01");
  EXPECT_EQ(settings[0].line, 3);
  EXPECT_EQ(settings[1].key, "action");
  EXPECT_EQ(settings[1].value, "report");
  EXPECT_EQ(settings[2].value, "/var/log/p s.json");
}

TEST(SiteConfig, ABadLineAMissingFileAndADirectoryAreNamed) {
  ConfigFile file("alpha = 0.01\njust words\n");
  const auto bad = read_site_config(file.path());
  ASSERT_TRUE(std::holds_alternative<std::string>(bad));
  EXPECT_NE(std::get<std::string>(bad).find("line 2"), std::string::npos) << std::get<std::string>(bad);
  const auto missing = read_site_config("/nonexistent/parastack.conf");
  ASSERT_TRUE(std::holds_alternative<std::string>(missing));
  EXPECT_NE(std::get<std::string>(missing).find("No such file"), std::string::npos) << std::get<std::string>(missing);
  const auto directory = read_site_config(std::filesystem::temp_directory_path().string());
  ASSERT_TRUE(std::holds_alternative<std::string>(directory));
  EXPECT_NE(std::get<std::string>(directory).find("directory"), std::string::npos);
}

TEST(SiteConfig, TheTextIsParsedAsTheFileIsRead) {
  // parse_site_config is read_site_config without the file: lines as std::getline splits them
  // (a last line without its newline, a blank one counted), \r trimmed, the path only in messages.
  const auto parsed = parse_site_config("alpha = 0.01\r\n\n# note\ngrace = \"5\"", "/site.conf");
  ASSERT_TRUE(std::holds_alternative<std::vector<Setting>>(parsed)) << std::get<std::string>(parsed);
  const auto& settings = std::get<std::vector<Setting>>(parsed);
  ASSERT_EQ(settings.size(), 2u);
  EXPECT_EQ(settings[0].value, "0.01");
  EXPECT_EQ(settings[1].key, "grace");
  EXPECT_EQ(settings[1].value, "5");
  EXPECT_EQ(settings[1].line, 4);
  EXPECT_EQ(std::get<std::string>(parse_site_config("\n\nx", "/site.conf")),
            "/site.conf line 3: expected 'key = value', got 'x'");
  EXPECT_TRUE(std::get<std::vector<Setting>>(parse_site_config("", "/site.conf")).empty());
}

struct Parsed {
  CLI::App app{"test"};
  double alpha = 0.001;
  std::string action = "kill";
  std::string config;
  Parsed(const Args& args) {
    app.add_option("--alpha", alpha)->check(CLI::Range(1e-12, 0.5));
    app.add_option("--action", action)->check(CLI::IsMember({"kill", "report", "stop"}));
    app.add_option("--config", config);
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app.parse(reversed);
  }
};

TEST(SiteConfig, AKeySetTwiceIsAnErrorNamingBothLines) {
  const auto parsed = parse_site_config("alpha = 0.01\n# a comment\nalpha = 7\n", "site.conf");
  ASSERT_TRUE(std::holds_alternative<std::string>(parsed));
  EXPECT_EQ(std::get<std::string>(parsed), "site.conf line 3: 'alpha' is set again (first on line 1)");
}

TEST(SiteConfig, TheCommandLineWinsOverTheFile) {
  Parsed parsed({"--alpha", "0.2"});
  const std::vector<Setting> settings{{"alpha", "0.01", 1}, {"action", "report", 2}};
  EXPECT_EQ(apply_site_config(parsed.app, "site.conf", settings), std::nullopt);
  EXPECT_DOUBLE_EQ(parsed.alpha, 0.2);
  EXPECT_EQ(parsed.action, "report");
}

// One file serves parastack run, pbs_parastack and the plugin: the schedulers' own keys are no
// unknown settings to parastack run, which leaves them alone (found by site_config_fuzzer).
TEST(SiteConfig, TheSchedulersSettingsAreSkippedNotRefused) {
  Parsed parsed({});
  std::vector<Setting> settings;
  int line = 0;
  for (const auto& key : kSchedulerSettings) settings.push_back({key, "x", ++line});
  settings.push_back({"alpha", "0.01", ++line});
  EXPECT_EQ(apply_site_config(parsed.app, "site.conf", settings), std::nullopt);
  EXPECT_DOUBLE_EQ(parsed.alpha, 0.01);
}

// The same file serves the batch jobs' watch: a key of theirs that `parastack run` has no use for
// (monitor-timeout: one node's run has no other monitors to wait for) is left alone. Refused, it
// made every `parastack run` on a node whose parastack.conf set it exit 2.
TEST(SiteConfig, TheBatchJobsOwnSettingsAreSkippedByParastackRun) {
  CLI::App app;
  const auto run_command = add_run_command(app);  // holds the options the parse writes into
  CLI::App* run = app.get_subcommand("run");
  app.parse(std::vector<std::string>{"true", "--", "run"});
  std::vector<Setting> settings;
  int line = 0;
  for (const auto& key : kJobOptions) {
    if (!run->get_option_no_throw("--" + key)) settings.push_back({key, "30", ++line});
  }
  ASSERT_EQ(settings.size(), 1u);
  EXPECT_EQ(settings.front().key, "monitor-timeout");
  EXPECT_EQ(apply_site_config(*run, "site.conf", settings), std::nullopt);
  EXPECT_EQ(apply_site_config(*run, "site.conf", {{"monitor-timout", "30", 7}}),
            "site.conf line 7: unknown setting 'monitor-timout'");
}

// site_config_fuzzer starts from fuzz/corpus: a key that no seed sets is reached only when the
// mutator happens on it (its check was out of date for monitor-timeout for six days, found once in
// a 20-s run). So one seed sets every key, parastack run takes that file as a whole, and the
// fuzzer's dictionary holds every key.
TEST(SiteConfig, TheFuzzSeedSetsEveryKeyAndParastackRunTakesIt) {
  const std::string fuzz = std::string(PARASTACK_SOURCE_DIR) + "/fuzz/";
  const auto parsed = read_site_config(fuzz + "corpus/site_config_fuzzer/every-key");
  ASSERT_TRUE(std::holds_alternative<std::vector<Setting>>(parsed)) << std::get<std::string>(parsed);
  const auto& settings = std::get<std::vector<Setting>>(parsed);

  CLI::App app;
  const auto run_command = add_run_command(app);  // holds the options the parse writes into
  CLI::App* run = app.get_subcommand("run");
  app.parse(std::vector<std::string>{"true", "--", "run"});
  std::set<std::string> keys(kJobOptions.begin(), kJobOptions.end());
  keys.insert(kSchedulerSettings.begin(), kSchedulerSettings.end());
  for (const CLI::Option* option : run->get_options()) {
    for (const auto& name : option->get_lnames()) {
      if (name != "help" && name != "config") keys.insert(name);  // config: a file cannot name another
    }
  }
  std::set<std::string> seeded;
  for (const auto& s : settings) seeded.insert(s.key);
  EXPECT_EQ(seeded, keys);
  EXPECT_EQ(apply_site_config(*run, "every-key", settings), std::nullopt);

  std::ifstream dictionary(fuzz + "site_config_fuzzer.dict");
  std::set<std::string> words;
  for (std::string line; std::getline(dictionary, line);) {
    if (line.size() > 2 && line.front() == '"' && line.back() == '"') words.insert(line.substr(1, line.size() - 2));
  }
  for (const auto& key : keys) EXPECT_TRUE(words.count(key)) << key << " is not in site_config_fuzzer.dict";
}

TEST(SiteConfig, UnknownKeysBadValuesAndNestedFilesAreRefusedWithFileAndLine) {
  {
    Parsed parsed({});
    const auto error = apply_site_config(parsed.app, "site.conf", {{"colour", "blue", 4}});
    ASSERT_TRUE(error);
    EXPECT_EQ(*error, "site.conf line 4: unknown setting 'colour'");
  }
  {
    Parsed parsed({});
    const auto error = apply_site_config(parsed.app, "site.conf", {{"action", "explode", 2}});
    ASSERT_TRUE(error);
    EXPECT_NE(error->find("site.conf line 2: action = explode"), std::string::npos) << *error;
    EXPECT_EQ(parsed.action, "kill");
  }
  {
    Parsed parsed({});
    const auto error = apply_site_config(parsed.app, "site.conf", {{"config", "/etc/other.conf", 1}});
    ASSERT_TRUE(error);
    EXPECT_NE(error->find("cannot name another"), std::string::npos) << *error;
  }
}

}  // namespace
}  // namespace parastack::cli
