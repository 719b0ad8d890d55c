// Monte Carlo campaigns: many synthetic jobs per workload shape, each watched by the real
// HangModel and the real verification helpers exactly as a monitor would, with the outcome
// compared against the truth the simulator knows.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "parastack/sim/workload.h"
#include "parastack/stats/hang_model.h"
#include "parastack/stats/observation.h"

namespace parastack::sim {

struct CampaignConfig {
  std::uint64_t seed = 1;
  double healthy_hours_per_shape = 1300;
  int hangs_per_shape = 150;
  double min_job_hours = 1, max_job_hours = 48;  // healthy job length, log-uniform
  double latest_onset_seconds = 7200;            // hang onset uniform in [0, this)
  double max_detection_wait_seconds = 3600;      // a hang not confirmed by then is missed
  int sampled_ranks = 10;                        // C, per set
  bool every_set_each_time = true;               // stats::WatchdogConfig
  int sample_every_rank_up_to = 20;              // stats::WatchdogConfig
  stats::ModelConfig model;
  int identification_rounds = 5;  // checks of all ranks after a hang (§4)
  double identification_spacing_seconds = 0.2;
  double computation_fault_share = 0.7;  // the rest are deadlocks
  int max_faulty_ranks = 3;
  int threads = 0;  // 0: one per core
};

struct JobOutcome {
  int shape = 0;
  bool hang_job = false;
  double healthy_seconds = 0;  // time watched before any hang onset
  std::uint64_t observations = 0;
  int healthy_alarms = 0;    // model alarms on healthy time (before verification)
  int healthy_rejected = 0;  // of which the verification found progress (slowdowns)
  int hang_rejected = 0;     // alarms during a hang that verification judged slowdowns
  bool false_alarm = false;  // a hang verdict on a healthy job (or before the onset)
  double false_alarm_at = 0;
  std::optional<double> ready_at;  // model built (every set can test)
  FaultKind fault = FaultKind::None;
  bool hang_after_ready = false;
  bool detected = false;
  double delay = 0;             // confirmation time minus onset
  bool type_correct = false;    // computation vs communication
  bool faulty_found = false;    // every injected faulty rank reported (AC_f)
  double faulty_precision = 0;  // share of reported ranks that are faulty (PR_f)
  // Where the delay went (they add up to it): from the fault's onset to the start of the evidence
  // that fired (negative when it began just before the onset; for a computation hang, mostly the
  // other ranks finishing their step before they block), the evidence itself (to the alarm), and
  // verification with the checks of all ranks (to the confirmation).
  double evidence_began = 0;
  double evidence_seconds = 0;
  double checks_seconds = 0;
  stats::Evidence evidence = stats::Evidence::None;  // the test that fired
};

// A job the watchdog got wrong, with what it takes to watch it again alone (`parastack simulate
// --trace-out` with this seed, duration and fault records the same job and the same decisions).
struct FailedJob {
  std::uint64_t seed = 0;
  double duration = 0;
  Fault fault;               // kind None: a healthy job
  bool false_alarm = false;  // else a hang never confirmed
  double at = 0;             // the false alarm's confirmation time
};

struct ShapeSummary {
  std::string name;
  std::string description;
  int ranks = 0;
  double healthy_hours = 0;  // healthy jobs plus the healthy part of hang jobs
  int false_alarms = 0;
  int healthy_alarms = 0;    // model alarms on healthy time, before verification
  int healthy_rejected = 0;  // of which verification found progress
  int hang_rejected = 0;     // alarms on hung jobs that verification wrongly rejected
  int hangs = 0, hangs_after_ready = 0, detected_after_ready = 0, detected = 0;
  int computation_detected = 0, faulty_found = 0;
  double precision_sum = 0;
  int type_correct = 0;
  std::vector<double> delays;      // detected hangs after model building
  std::vector<double> all_delays;  // every detected hang
  // JobOutcome's parts of each detected hang's delay, and how many each test fired.
  std::vector<double> evidence_began, evidence_seconds, checks_seconds;
  int fired_by_fraction = 0, fired_by_stasis = 0, fired_by_early_stasis = 0;
  std::vector<double> ready_times;
  std::vector<FailedJob> failures;  // every false alarm and missed hang, in plan order

  void merge(const ShapeSummary& other);  // adds other's counts and samples (for a total row)
};

// Runs one job to its end, its false alarm, or its hang's confirmation.
JobOutcome run_job(const WorkloadShape& shape, int shape_index, const CampaignConfig& config, std::uint64_t job_seed,
                   double duration_seconds, Fault fault);

// The sample trace a monitor would record watching this job for its whole duration, carrying on
// after alarms as with the `report` action (each alarm is resumed as if judged a slowdown).
std::vector<stats::Observation> record_trace(const WorkloadShape& shape, const CampaignConfig& config,
                                             std::uint64_t job_seed, double duration_seconds, Fault fault);

std::vector<ShapeSummary> run_campaign(const std::vector<WorkloadShape>& shapes, const CampaignConfig& config);

double percentile(std::vector<double> values, double fraction);

// A Markdown table, one row per shape plus a total row.
std::string format_summary_table(const std::vector<ShapeSummary>& summaries);
// Where each shape's detection delay goes (medians of JobOutcome's parts), and which test fired.
std::string format_delay_table(const std::vector<ShapeSummary>& summaries);

}  // namespace parastack::sim
