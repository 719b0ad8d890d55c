// The JSON report against its documentation (docs/report-format.md, "Hang report"): every field the
// report writes is documented there, and every documented field is written by a hang's report. The
// document is the contract for tools that read reports, so the two must not drift.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "node/stack_views.h"
#include "watch/report.h"

namespace parastack::watch {
namespace {

using Names = std::set<std::string>;

std::string read_doc() {
  std::ifstream in(PARASTACK_SOURCE_DIR "/docs/report-format.md");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The field names of the first table after `marker` in the hang report's section: each row's first
// cell, whose backticked names may be several ("`launcher_pid`, `host`").
Names documented(const std::string& doc, const std::string& marker) {
  const auto section = doc.find("## Hang report");
  const auto at = doc.find(marker, section);
  EXPECT_NE(at, std::string::npos) << marker;
  Names names;
  std::istringstream lines(doc.substr(at));
  std::string line;
  bool in_table = false;
  while (std::getline(lines, line)) {
    if (line.starts_with("|")) {
      in_table = true;
      const std::string cell = line.substr(1, line.find('|', 1) - 1);
      const std::regex name("`([a-z_]+)`");
      for (std::sregex_iterator it(cell.begin(), cell.end(), name), end; it != end; ++it) names.insert((*it)[1]);
    } else if (in_table) {
      break;
    }
  }
  names.erase("field");
  return names;
}

// The names inside the braces of a documented object ("`{observations, since, ...}`"), in the
// first row for `field` after `after`.
Names documented_braces(const std::string& doc, const std::string& field, const std::string& after = "## Hang report") {
  const auto at = doc.find("| `" + field + "` |", doc.find(after, doc.find("## Hang report")));
  EXPECT_NE(at, std::string::npos) << field;
  const auto open = doc.find('{', at), close = doc.find('}', open);
  Names names;
  std::istringstream items(doc.substr(open + 1, close - open - 1));
  for (std::string item; std::getline(items, item, ',');) {
    item.erase(0, item.find_first_not_of(' '));
    names.insert(item.substr(0, item.find_first_of(" :")));
  }
  return names;
}

Names keys(const nlohmann::json& object) {
  Names names;
  for (const auto& [key, value] : object.items()) names.insert(key);
  return names;
}

RunReport hang_report() {
  RunReport r;
  r.command = {"mpirun", "-np", "2", "./solver"};
  r.launcher_pid = 1234;
  r.host = "node-a";
  r.verdict = JobVerdict::Hang;
  r.action = Action::Kill;
  r.action_taken = "the job was terminated";
  stats::HangFinding finding;
  finding.decision.threshold = stats::SuspicionThreshold{0.05, 0.1, 0.01, 100, 0.06};
  finding.decision.evidence = stats::Evidence::Fraction;
  finding.faulty_ranks = {1};
  finding.checks = {{stats::RankState::InMpi, stats::RankState::OutMpi}};
  r.finding = finding;
  r.faulty_ranks = {1};
  r.ranks = {
      {0, 100, "node-a", "IN_MPI", "MPI_Allreduce", {"main", "solver", "MPI_Allreduce"}, {0x31, 0x8c, 0}, {}, ""},
      {1, 101, "node-a", "OUT_MPI", "", {"main", "solver", "relax"}, {0x31, 0x40, 0x7}, {}, ""}};
  diagnosis::RankProgress waiting;
  waiting.rank = 0;
  waiting.activity = diagnosis::RankProgress::Activity::Collective;
  waiting.call = "MPI_Allreduce";
  waiting.operation = {diagnosis::WaitOperation::Kind::Collective, -3, -1, 1, 9};
  waiting.comms = {{1, 2, 0, 9}};
  diagnosis::RankProgress computing;
  computing.rank = 1;
  computing.comms = {{1, 2, 1, 8}};
  r.ranks[0].progress = waiting;
  r.ranks[1].progress = computing;
  r.behind = analyse_behind(r.ranks, 2);
  diagnosis::PrefixTree tree;
  tree.add(diagnosis::StackTrace{{"main", "solver", "", false}, {"MPI_Allreduce", "libmpi.so", "", true}}, 0);
  tree.add(diagnosis::StackTrace{{"main", "solver", "", false}, {"relax", "solver", "", false}}, 1);
  r.stacks = node::stack_views(tree, "test", /*with_svg=*/false);
  return r;
}

TEST(ReportFormat, AHangsReportWritesExactlyTheDocumentedFields) {
  const std::string doc = read_doc();
  const auto json = to_json(hang_report());
  EXPECT_EQ(keys(json), documented(doc, "| field | type | meaning |"));
  EXPECT_EQ(keys(json["model"]), documented(doc, "`model`:"));
  EXPECT_EQ(keys(json["coverage"]), documented(doc, "`coverage` says"));
  EXPECT_EQ(keys(json["model"]["stasis_run"]), documented_braces(doc, "stasis_run"));
  EXPECT_EQ(keys(json["stacks"]), documented_braces(doc, "stacks"));
  EXPECT_EQ(keys(json["least_progressed"]), documented(doc, "`least_progressed`:"));
  EXPECT_EQ(keys(json["least_progressed"]["mpi_progress"]), documented_braces(doc, "mpi_progress"));
  EXPECT_EQ(keys(json["least_progressed"]["stacks"]), documented_braces(doc, "stacks", "`least_progressed`:"));
  EXPECT_EQ(json["least_progressed"]["ranks"], nlohmann::json::array({1}));
  EXPECT_EQ(json["least_progressed"]["source"], "mpi-progress");
  const Names rank_fields = documented_braces(doc, "ranks");
  for (const auto& rank : json["ranks"]) {
    for (const auto& key : keys(rank)) EXPECT_TRUE(rank_fields.contains(key)) << key;
  }
  EXPECT_EQ(keys(json["ranks"][0]), rank_fields);  // a rank in MPI has every field
}

TEST(ReportFormat, EveryVerdictAndActionIsADocumentedWord) {
  const std::string doc = read_doc();
  const auto row = [&](const std::string& field) {
    const auto at = doc.find("| `" + field + "` |", doc.find("## Hang report"));
    return doc.substr(at, doc.find('\n', at) - at);
  };
  for (auto verdict : {JobVerdict::Completed, JobVerdict::Hang, JobVerdict::MonitoringLost}) {
    EXPECT_NE(row("verdict").find("\"" + std::string(to_string(verdict)) + "\""), std::string::npos)
        << to_string(verdict);
  }
  for (auto type : {stats::HangType::Computation, stats::HangType::Communication, stats::HangType::Undetermined}) {
    EXPECT_NE(row("hang_type").find("\"" + std::string(stats::to_string(type)) + "\""), std::string::npos)
        << stats::to_string(type);
  }
  for (auto action : {Action::Kill, Action::Report, Action::Stop}) {
    EXPECT_NE(row("action").find("`" + std::string(to_string(action)) + "`"), std::string::npos) << to_string(action);
    EXPECT_EQ(action_from_string(to_string(action)), action);
  }
  EXPECT_EQ(action_from_string("explode"), std::nullopt);
}

TEST(ReportFormat, ACompletedReportWritesOnlyDocumentedFieldsAndNoHangFields) {
  const std::string doc = read_doc();
  RunReport r;
  r.verdict = JobVerdict::Completed;
  r.exit_status = 0;
  const auto json = to_json(r);
  const Names all = documented(doc, "| field | type | meaning |");
  for (const auto& key : keys(json)) EXPECT_TRUE(all.contains(key)) << key;
  for (const char* hang_only : {"hang_type", "detected_at", "onset_estimate", "stacks", "least_progressed"}) {
    EXPECT_FALSE(json.contains(hang_only)) << hang_only;
  }
  EXPECT_EQ(json["verdict"], "completed");
  EXPECT_EQ(json["exit_status"], 0);
  EXPECT_TRUE(json["faulty_ranks"].empty());
  EXPECT_NE(to_text(r).find("verdict:   ended, NOT WATCHED, exit status 0"), std::string::npos) << to_text(r);
}

TEST(ReportFormat, AWatchedJobThatCompletedCountsItsAlarmsInWords) {
  RunReport r;
  r.verdict = JobVerdict::Completed;
  r.exit_status = 0;
  r.observations = 591;
  r.coverage.model_since = 1.9;
  EXPECT_NE(to_text(r).find("verdict:   completed, exit status 0 (591 observations, no alarm)\n"), std::string::npos)
      << to_text(r);
  r.alarms = 2;
  EXPECT_NE(to_text(r).find("(591 observations, 2 alarm(s), all judged slowdowns)\n"), std::string::npos) << to_text(r);
}

TEST(ReportFormat, AHangWhoseJobEndedBeforeTheChecksSaysItsTypeIsUndetermined) {
  RunReport r;
  r.verdict = JobVerdict::Hang;
  stats::HangFinding finding;
  finding.ended_during_checks = true;
  r.finding = std::move(finding);  // a copy here makes GCC 12 -O3 warn -Wmaybe-uninitialized (falsely)
  const auto json = to_json(r);
  EXPECT_EQ(json["hang_type"], "undetermined");
  EXPECT_TRUE(json["faulty_ranks"].empty());
  const std::string text = to_text(r);
  EXPECT_NE(text.find("verdict:   HANG (undetermined type)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("faulty:    not known: the job ended after the hang was confirmed"), std::string::npos) << text;
  EXPECT_EQ(text.find("every rank waits inside MPI"), std::string::npos) << text;
}

TEST(ReportFormat, AReportOfLostMonitoringSaysSoInItsText) {
  RunReport r;
  r.verdict = JobVerdict::MonitoringLost;
  r.notes = {"monitoring lost: monitor 3 did not answer"};
  const std::string text = to_text(r);
  EXPECT_NE(text.find("verdict:   MONITORING LOST"), std::string::npos) << text;
  EXPECT_EQ(text.find("completed"), std::string::npos) << text;
  EXPECT_EQ(to_json(r)["verdict"], "monitoring lost");
}

}  // namespace
}  // namespace parastack::watch
