// The report `parastack run` writes when a job ends or hangs: JSON for tools (schema in
// docs/report-format.md, versioned) and plain text for people, with the merged stack tree of all
// ranks as text, DOT and SVG. Building the report is pure; writing it is the caller's.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "node/node_worker.h"
#include "node/stack_views.h"
#include "parastack/diagnosis/progress.h"
#include "parastack/diagnosis/stack_order.h"
#include "parastack/stats/watchdog.h"

namespace parastack::watch {

inline constexpr const char* kReportSchema = "parastack-report/1";

// What parastack does to a job whose hang it confirmed (--action; the report's "action").
enum class Action { Kill, Report, Stop };
// What parastack concluded about the job (the report's "verdict"); Undecided while it runs.
enum class JobVerdict { Undecided, Completed, Hang, MonitoringLost };

// The one place these words live: options, the JSON report and the text report use them.
std::string_view to_string(Action action);
std::optional<Action> action_from_string(std::string_view word);
std::string_view to_string(JobVerdict verdict);

// What was watched, and what was not (docs/report-format.md): a job is watched at a sample when
// some test could fire there, the S model (built), the stasis model (bounds estimated) or the
// model-free stasis rule (the job has shown that its call paths move).
struct Coverage {
  std::optional<double> found_at;                     // seconds after parastack started, when the ranks were found
  std::optional<double> stasis_since;                 // seconds after the ranks were found: first stasis test possible
  std::optional<double> model_since;                  // ... the S model built
  double watched_seconds = 0, unwatched_seconds = 0;  // between samples, after the ranks were found
  std::string why_unwatched;                          // the latest reason, in words (empty when always watched)
  std::optional<double> paths_read_at;                // the latest sample whose call paths were read (not reported)
  bool ever_watched() const { return stasis_since || model_since; }
};

// Which ranks are behind at a hang (docs/diagnosis.md, "Who is behind"): from the progress
// library's facts (--mpi-progress) when any rank's page could be read, and from the stacks always.
struct BehindAnalysis {
  std::optional<diagnosis::ProgressAnalysis> progress;  // from the library
  int pages_read = 0;                                   // ranks whose page was read
  std::string no_pages_why;                             // none read: the first rank's reason
  diagnosis::StackOrder stacks;
  // The answer: the library's LP ranks when it had facts, else the stacks' (may be empty).
  std::vector<int> least_progressed;
  std::string source;  // "mpi-progress", "stacks" or "none"
};
struct RunReport {
  // The job.
  std::vector<std::string> command;
  int launcher_pid = 0;
  std::string host;
  std::string instance;
  double started_at = 0;  // Unix seconds
  double ended_at = 0;
  std::optional<int> exit_status;  // the launcher's, when it ended by itself
  // What parastack concluded and did.
  JobVerdict verdict = JobVerdict::Undecided;
  Action action = Action::Kill;
  std::string action_taken;  // what was done, in words
  std::optional<stats::HangFinding> finding;
  std::vector<int> faulty_ranks;               // MPI ranks (the finding's are indices into the rank table)
  double detected_at = 0, onset_estimate = 0;  // Unix seconds
  // The model's evidence.
  stats::WatchdogConfig config;
  std::uint64_t observations = 0, samples = 0;
  int alarms = 0, slowdowns = 0;
  std::vector<std::string> slowdown_evidence;
  double interval = 0;
  Coverage coverage;
  // Every rank at detection, and their stacks merged.
  std::vector<node::RankRecord> ranks;
  std::optional<node::StackViews> stacks;
  std::optional<BehindAnalysis> behind;  // at a hang
  std::string trace_path;
  std::vector<std::string> notes;
};

nlohmann::json to_json(const RunReport& report);
// A suspicion threshold's fields as the report and `parastack replay` write them: e, threshold, p, q.
void put_threshold(nlohmann::json& out, const stats::SuspicionThreshold& threshold);
std::string to_text(const RunReport& report);

BehindAnalysis analyse_behind(const std::vector<node::RankRecord>& ranks, int world_size);

// The files of one report: PATH (JSON), and beside it .txt, .dot, .svg and .trace.jsonl.
struct ReportPaths {
  std::string json, text, dot, svg, trace;
};
ReportPaths report_paths(const std::string& json_path);

}  // namespace parastack::watch
