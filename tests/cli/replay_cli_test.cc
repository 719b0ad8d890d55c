// `parastack replay` and `parastack simulate --trace-out` run as a user runs them, on traces the
// test generates with the simulator.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "parastack/sim/campaign.h"
#include "parastack/stats/trace.h"
#include "support/shell.h"

namespace {

namespace fs = std::filesystem;

parastack::testing::ShellResult run(const std::string& arguments) {
  return parastack::testing::run_shell(std::string(PARASTACK_BIN) + " " + arguments + " 2>&1");
}

nlohmann::json last_json_line(const std::string& out) {
  std::istringstream lines(out);
  std::string line, last;
  while (std::getline(lines, line)) {
    if (!line.empty()) last = line;
  }
  return nlohmann::json::parse(last);
}

class ReplayCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("parastack-replay-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write_trace(const std::string& name, const std::vector<parastack::stats::Observation>& trace,
                          double before = 1e300) {
    const auto path = (dir_ / name).string();
    std::ofstream out(path);
    for (const auto& o : trace) {
      if (o.t < before) out << parastack::stats::format_trace_line(o) << "\n";
    }
    return path;
  }

  fs::path dir_;
};

constexpr double kOnset = 1800;

std::vector<parastack::stats::Observation> healthy_then_hang() {
  parastack::sim::WorkloadShape shape;
  for (const auto& s : parastack::sim::standard_shapes()) {
    if (s.name == "solver-50ms") shape = s;
  }
  parastack::sim::Fault fault{parastack::sim::FaultKind::Computation, kOnset, {5}};
  return parastack::sim::record_trace(shape, {}, 99, kOnset + 600, fault);
}

TEST_F(ReplayCli, ReportsTheHangAfterItsOnset) {
  const auto path = write_trace("hang.jsonl", healthy_then_hang());
  const auto result = run("replay --json " + path);
  EXPECT_EQ(result.status, 3) << result.out;
  const auto summary = last_json_line(result.out);
  EXPECT_EQ(summary["verdict"], "hang");
  EXPECT_GT(summary["detected_t"].get<double>(), kOnset);
  EXPECT_GE(summary["onset_t"].get<double>(), kOnset - 10);
  EXPECT_LT(summary["detected_t"].get<double>(), kOnset + 120);
  EXPECT_LT(summary["model_ready_t"].get<double>(), kOnset);
}

TEST_F(ReplayCli, HealthyPartAloneReportsNoHang) {
  const auto path = write_trace("healthy.jsonl", healthy_then_hang(), kOnset);
  const auto result = run("replay --json " + path);
  EXPECT_EQ(result.status, 0) << result.out;
  const auto summary = last_json_line(result.out);
  EXPECT_EQ(summary["verdict"], "no_hang");
  EXPECT_TRUE(summary["detected_t"].is_null());
  EXPECT_GT(summary["observations"].get<int>(), 1000);
}

// A real trace (tests/data): a healthy hpcc on a node loaded 4x over (two benchmark jobs and a
// simulator on 2 cores), where three ranks sat in MPI_Waitany for 5 s while the fourth worked on
// inside its MPI_Testany loop. The model-free rule once called that a deadlock; with every active
// rank in MPI and another busy-waiting, 5 s is not enough (stats/stasis.h).
TEST_F(ReplayCli, AnOverloadedHealthyPollingCodeIsNotAHang) {
  const auto result = run("replay --json " PARASTACK_TEST_DATA "/hpcc-healthy-overloaded.trace.jsonl");
  EXPECT_EQ(result.status, 0) << result.out;
  const auto summary = last_json_line(result.out);
  EXPECT_EQ(summary["verdict"], "no_hang") << result.out;
  EXPECT_EQ(summary["observations"].get<int>(), 165);
}

// A real 4-rank ps_poller (every wait an MPI_Test/MPI_Iprobe loop) whose rank 1 began to spin at
// t = 2.2 s, 0.8 s after the first stasis tests: the S model was built from the hung samples, and
// the others' steps out of their loops, two in a row now and then, ended the spinner's run before
// it lasted the 20 s it needs beside busy-waiting ranks, each time raising the floor (3 x the
// longest run ended), so it was never found. Steps out of up to three observations no longer end
// a run (stats/stasis.h).
TEST_F(ReplayCli, ARankSpinningBesidePollersFromItsFirstSecondsIsFound) {
  const auto result = run("replay --json --quiet " PARASTACK_TEST_DATA "/poller-spin-early.trace.jsonl");
  EXPECT_EQ(result.status, 3) << result.out;
  const auto summary = last_json_line(result.out);
  EXPECT_EQ(summary["verdict"], "hang") << result.out;
  EXPECT_EQ(summary["evidence"], "early-stasis") << result.out;
  // The spin began at 2.18 s: 20 s of standstill beside busy-waiting ranks, and a few samples.
  EXPECT_LT(summary["detected_t"].get<double>(), 2.18 + 20 + 1) << result.out;
}

// A real trace (tests/data): Debian's hpcc, 4 ranks, no progress library; 5.7 s in, rank 1 entered a
// receive nobody sends (bench/watchdog.sh's deadlock) while the others polled for it for ever in
// their MPI_Test and MPI_Testany loops. Every active rank blocked in MPI beside busy-waiting ranks,
// at a place the job never left: a hang after four times the 20 s the rule needs beside them
// (stats/stasis.h). Until 2026-12-03 it was never found.
TEST_F(ReplayCli, ADeadlockBesidePollersIsFoundAfterFourTimesTheWait) {
  const auto result = run("replay --json --quiet " PARASTACK_TEST_DATA "/hpcc-deadlock-beside-pollers.trace.jsonl");
  EXPECT_EQ(result.status, 3) << result.out;
  const auto summary = last_json_line(result.out);
  EXPECT_EQ(summary["verdict"], "hang") << result.out;
  EXPECT_EQ(summary["evidence"], "early-stasis") << result.out;
  const double onset = summary["onset_t"].get<double>();
  EXPECT_NEAR(onset, 5.6, 0.2) << result.out;
  EXPECT_GE(summary["detected_t"].get<double>() - onset, 80) << result.out;
  EXPECT_LT(summary["detected_t"].get<double>() - onset, 80 + 1) << result.out;
}

TEST_F(ReplayCli, TextOutputShowsEveryDecisionAndTheVerdict) {
  const auto path = write_trace("hang.jsonl", healthy_then_hang());
  const auto result = run("replay " + path);
  EXPECT_EQ(result.status, 3);
  EXPECT_NE(result.out.find("runs test"), std::string::npos);
  EXPECT_NE(result.out.find(" k="), std::string::npos);
  EXPECT_NE(result.out.find("verdict: hang at t="), std::string::npos);
  EXPECT_NE(result.out.find(", alpha=0.001 per-job)\n"), std::string::npos) << result.out;
}

TEST_F(ReplayCli, PerTestBudgetNeedsFewerSuspicions) {
  const auto path = write_trace("hang.jsonl", healthy_then_hang());
  const auto per_job = last_json_line(run("replay --json --quiet " + path).out);
  const auto per_test = last_json_line(run("replay --json --quiet --budget per-test " + path).out);
  EXPECT_EQ(per_test["budget"], "per-test");
  EXPECT_LT(per_test["k"].get<int>(), per_job["k"].get<int>());
  EXPECT_LE(per_test["detected_t"].get<double>(), per_job["detected_t"].get<double>());
}

TEST_F(ReplayCli, BadInputGivesAClearErrorAndStatus2) {
  auto missing = run("replay " + (dir_ / "nope.jsonl").string());
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.out.find("cannot read"), std::string::npos) << missing.out;
  // A directory opens as a file does, and read as an empty trace it said "verdict: no hang".
  auto directory = run("replay " + dir_.string());
  EXPECT_EQ(directory.status, 2);
  EXPECT_NE(directory.out.find("cannot read " + dir_.string() + ": Is a directory"), std::string::npos)
      << directory.out;

  const auto path = (dir_ / "bad.jsonl").string();
  std::ofstream(path) << R"({"t":0.4,"set":0,"n_out":1,"n":10})"
                      << "\n"
                      << R"({"t":0.8,"set":0})"
                      << "\n";
  auto bad = run("replay " + path);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.out.find(":2: missing field \"n_out\""), std::string::npos) << bad.out;

  auto alpha = run("replay --alpha 2 " + path);
  EXPECT_EQ(alpha.status, 2);
  EXPECT_NE(alpha.out.find("--alpha"), std::string::npos) << alpha.out;
}

TEST_F(ReplayCli, SimulateWritesATraceThatReplays) {
  const auto path = (dir_ / "sim.jsonl").string();
  auto written = run("simulate --shape imbalanced --duration 3000 --hang-at 2000 --fault deadlock --trace-out " + path);
  ASSERT_EQ(written.status, 0) << written.out;
  const auto summary = last_json_line(run("replay --json --quiet " + path).out);
  EXPECT_EQ(summary["verdict"], "hang");
  EXPECT_GT(summary["detected_t"].get<double>(), 2000);
}

}  // namespace
