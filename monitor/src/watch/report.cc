#include "watch/report.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <sstream>

#include "parastack/diagnosis/rank_set.h"
#include "parastack/diagnosis/render.h"
#include "parastack/stats/verification.h"
#include "sampler/progress_reader.h"

#include <algorithm>

namespace parastack::watch {
namespace {

std::string format_time(double unix_seconds) {
  const std::time_t whole = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  ::localtime_r(&whole, &tm);
  char buffer[64];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M:%S", &tm);
  char with_ms[80];
  std::snprintf(with_ms, sizeof with_ms, "%s.%03d", buffer, static_cast<int>(std::fmod(unix_seconds, 1.0) * 1000));
  return with_ms;
}

std::string ranks_text(const std::vector<int>& ranks) {
  diagnosis::RankSet set;
  for (int r : ranks) set.insert(static_cast<diagnosis::Rank>(r));
  return set.to_ranges();
}

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

std::vector<int> to_ints(const std::vector<diagnosis::Rank>& ranks) { return {ranks.begin(), ranks.end()}; }

nlohmann::json edges_json(const std::vector<diagnosis::WaitEdge>& edges, std::size_t limit) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < edges.size() && i < limit; ++i) {
    out.push_back(
        {{"from", edges[i].from}, {"to", edges[i].to}, {"collective", edges[i].collective}, {"why", edges[i].why}});
  }
  return out;
}

nlohmann::json behind_json(const BehindAnalysis& b) {
  using nlohmann::json;
  json out{{"ranks", b.least_progressed}, {"source", b.source}, {"pages_read", b.pages_read}};
  if (b.progress) {
    const auto& p = *b.progress;
    json deadlocks = json::array(), cycles = json::array();
    for (const auto& d : p.deadlocks) deadlocks.push_back(to_ints(d));
    for (const auto& c : p.cycles) cycles.push_back(to_ints(c));
    out["mpi_progress"] = {{"least_progressed", to_ints(p.least_progressed)},
                           {"deadlocks", deadlocks},
                           {"cycles", cycles},
                           {"chain", edges_json(p.chain, p.chain.size())},
                           {"edge_count", p.edges.size()},
                           {"edges", edges_json(p.edges, 1000)},
                           {"without_facts", to_ints(p.without_facts)},
                           {"summary", p.summary}};
  } else {
    out["mpi_progress"] = nullptr;
  }
  out["no_pages_why"] = b.no_pages_why;
  json groups = json::array();
  for (const auto& g : b.stacks.groups) {
    groups.push_back({{"ranks", g.ranks.to_ranges()}, {"in_mpi", g.in_mpi}, {"where", g.where}, {"path", g.path}});
  }
  json lp = json::array();
  for (auto g : b.stacks.least_progressed) lp.push_back(b.stacks.groups[g].ranks.to_ranges());
  out["stacks"] = {{"groups", groups}, {"least_progressed", lp}, {"why", b.stacks.why}};
  return out;
}

std::string behind_text(const BehindAnalysis& b) {
  std::ostringstream out;
  out << "\nwho is behind (least-progressed ranks): ";
  if (b.least_progressed.empty()) {
    out << "not found\n";
  } else {
    out << "rank" << (b.least_progressed.size() > 1 ? "s " : " ") << ranks_text(b.least_progressed) << " (from the "
        << (b.source == "mpi-progress" ? "MPI progress library's facts" : "stacks") << ")\n";
  }
  if (b.progress) {
    const auto& p = *b.progress;
    out << "  MPI progress library (" << b.pages_read << " rank(s) read): " << p.summary << "\n";
    if (!p.chain.empty()) {
      out << "  a waiting rank's chain:\n";
      for (const auto& e : p.chain) out << "    rank " << e.from << " waits on rank " << e.to << ": " << e.why << "\n";
    }
  } else if (!b.no_pages_why.empty()) {
    out << "  MPI progress library: no page read (" << b.no_pages_why << ")";
    // The hint is for a job run without the library. With it (a page never initialised: MPI
    // called past its wrappers, as Python's ctypes does, or not Open MPI) the reason is the news.
    if (b.no_pages_why.find(sampler::kNoProgressLibrary) != std::string::npos) {
      out << "; --mpi-progress names the least-progressed ranks of communication hangs";
    }
    out << "\n";
  }
  out << "  stacks: " << b.stacks.why << "\n";
  for (std::size_t g = 0; g < b.stacks.groups.size() && g < 8; ++g) {
    const auto& group = b.stacks.groups[g];
    out << "    " << group.ranks.size() << " rank(s) [" << diagnosis::shorten_ranges(group.ranks.to_ranges(), 60)
        << "] " << (group.in_mpi ? "wait in " : "run outside MPI in ") << group.where << "\n";
  }
  if (b.stacks.groups.size() > 8) out << "    ... " << b.stacks.groups.size() - 8 << " more group(s)\n";
  return out.str();
}

}  // namespace

BehindAnalysis analyse_behind(const std::vector<node::RankRecord>& ranks, int world_size) {
  BehindAnalysis b;
  std::vector<diagnosis::RankProgress> facts;
  std::vector<diagnosis::RankStack> stacks;
  for (const auto& r : ranks) {
    if (r.progress) {
      facts.push_back(*r.progress);
    } else if (b.no_pages_why.empty()) {
      b.no_pages_why =
          r.progress_problem.empty() ? "not read" : "rank " + std::to_string(r.rank) + ": " + r.progress_problem;
    }
    if (!r.path.empty()) {
      const bool in_mpi = r.state == "IN_MPI";
      stacks.push_back({static_cast<diagnosis::Rank>(r.rank), in_mpi, r.path, r.call_sites,
                        in_mpi && stats::is_shutdown_function(r.mpi_function)});
    }
  }
  b.pages_read = static_cast<int>(facts.size());
  b.stacks = diagnosis::order_by_stacks(stacks);
  if (!facts.empty()) {
    b.progress = diagnosis::analyse_progress(facts, world_size);
    b.least_progressed = to_ints(b.progress->least_progressed);
    b.source = "mpi-progress";
    return b;
  }
  for (auto g : b.stacks.least_progressed) {
    for (auto r : b.stacks.groups[g].ranks.to_vector()) b.least_progressed.push_back(static_cast<int>(r));
  }
  std::sort(b.least_progressed.begin(), b.least_progressed.end());
  b.source = b.least_progressed.empty() ? "none" : "stacks";
  return b;
}

std::string_view to_string(Action action) {
  switch (action) {
    case Action::Kill:
      return "kill";
    case Action::Report:
      return "report";
    case Action::Stop:
      return "stop";
  }
  return "?";
}

std::optional<Action> action_from_string(std::string_view word) {
  for (Action a : {Action::Kill, Action::Report, Action::Stop}) {
    if (to_string(a) == word) return a;
  }
  return std::nullopt;
}

std::string_view to_string(JobVerdict verdict) {
  switch (verdict) {
    case JobVerdict::Undecided:
      return "";
    case JobVerdict::Completed:
      return "completed";
    case JobVerdict::Hang:
      return "hang";
    case JobVerdict::MonitoringLost:
      return "monitoring lost";
  }
  return "?";
}

ReportPaths report_paths(const std::string& json_path) {
  std::string base = json_path;
  if (base.size() > 5 && base.ends_with(".json")) base.resize(base.size() - 5);
  return {json_path, base + ".txt", base + ".dot", base + ".svg", base + ".trace.jsonl"};
}

void put_threshold(nlohmann::json& out, const stats::SuspicionThreshold& threshold) {
  out["e"] = threshold.tolerance;
  out["threshold"] = threshold.value;
  out["p"] = threshold.p_hat;
  out["q"] = threshold.q;
}

// Long on purpose: one line per documented field, in the order of docs/report-format.md.
nlohmann::json to_json(const RunReport& r) {
  using nlohmann::json;
  json out{{"schema", kReportSchema},
           {"verdict", to_string(r.verdict)},
           {"command", r.command},
           {"launcher_pid", r.launcher_pid},
           {"host", r.host},
           {"instance", r.instance},
           {"started_at", r.started_at},
           {"ended_at", r.ended_at},
           {"exit_status", r.exit_status ? json(*r.exit_status) : json(nullptr)},
           {"action", to_string(r.action)},
           {"action_taken", r.action_taken},
           {"trace", r.trace_path},
           {"notes", r.notes}};
  const auto& model = r.config.model;
  json evidence{{"alpha", model.alarm.alpha},
                {"budget", std::string(stats::to_string(model.alarm.budget))},
                {"thresholds", std::string(stats::to_string(model.thresholds))},
                {"sampled_ranks", r.config.sampled_ranks},
                {"interval", r.interval},
                {"observations", r.observations},
                {"samples", r.samples},
                {"alarms", r.alarms},
                {"slowdowns", r.slowdowns},
                {"slowdown_evidence", r.slowdown_evidence}};
  const auto& c = r.coverage;
  out["coverage"] = {{"found_at", c.found_at ? json(*c.found_at) : json(nullptr)},
                     {"stasis_since", c.stasis_since ? json(*c.stasis_since) : json(nullptr)},
                     {"model_since", c.model_since ? json(*c.model_since) : json(nullptr)},
                     {"watched_seconds", c.watched_seconds},
                     {"unwatched_seconds", c.unwatched_seconds},
                     {"why_unwatched", c.why_unwatched}};
  evidence["bound"] = std::string(stats::to_string(model.bound));
  evidence["stasis"] = model.stasis.enabled;
  if (r.finding) {
    const auto& d = r.finding->decision;
    out["hang_type"] = std::string(stats::to_string(r.finding->type()));
    evidence["kind"] = std::string(stats::to_string(d.evidence));
    const auto& st = d.stasis;
    evidence["stasis_run"] = {
        {"observations", st.streak},
        {"since", st.streak_onset},
        {"first_bound", st.first_bound},
        {"step_bounds", std::vector<double>(st.step_bounds.begin(), st.step_bounds.begin() + st.steps)},
        {"continue_bound", st.continue_bound},
        {"bound", st.streak_bound},
        {"pairs", st.pairs},
        {"early_observations", st.early_streak},
        {"early_since", st.early_onset},
        {"early_needed", st.early_needed},
        {"early_before_movement", st.early_before_movement}};
    out["faulty_ranks"] = r.faulty_ranks;
    out["detected_at"] = r.detected_at;
    out["onset_estimate"] = r.onset_estimate;
    evidence["set"] = d.observation.set;
    evidence["streak"] = d.streak;
    evidence["k"] = d.required_streak;
    evidence["test_alpha"] = d.test_alpha;
    if (d.threshold) put_threshold(evidence, *d.threshold);
    evidence["model_samples"] = d.model_samples;
    evidence["identification_checks"] = r.finding->checks.size();
  } else {
    out["faulty_ranks"] = json::array();
  }
  out["model"] = evidence;
  json ranks = json::array();
  for (const auto& rank : r.ranks) {
    json entry{{"rank", rank.rank}, {"pid", rank.pid}, {"host", rank.host}, {"state", rank.state}};
    if (!rank.mpi_function.empty()) entry["mpi_function"] = rank.mpi_function;
    if (rank.progress) entry["waits_for"] = diagnosis::describe(*rank.progress);
    ranks.push_back(std::move(entry));
  }
  out["ranks"] = ranks;
  if (r.behind) out["least_progressed"] = behind_json(*r.behind);
  if (r.stacks) {
    out["stacks"] = {{"text", r.stacks->text},
                     {"dot", r.stacks->dot},
                     {"svg", r.stacks->svg.empty() ? json(nullptr) : json(r.stacks->svg)},
                     {"classes", r.stacks->tree["classes"]},
                     {"tree", r.stacks->tree["tree"]}};
  }
  return out;
}

std::string coverage_text(const Coverage& c) {
  std::ostringstream out;
  if (!c.found_at) return "watched:   no MPI rank was found\n";
  out << "watched:   ranks found " << *c.found_at << " s after the start; ";
  if (!c.ever_watched()) {
    out << "never watched\n";
    return out.str();
  }
  if (c.stasis_since) out << "stasis tests from " << *c.stasis_since << " s after that";
  if (c.stasis_since) out << ", ";
  out << (c.model_since ? "S model built at " + std::to_string(*c.model_since) + " s" : "S model never built") << "\n";
  if (c.unwatched_seconds > 0) {
    out << "           unwatched for " << c.unwatched_seconds << " s of " << c.watched_seconds + c.unwatched_seconds
        << " s" << (c.why_unwatched.empty() ? "" : " (" + c.why_unwatched + ")") << "\n";
  }
  return out.str();
}

// Long on purpose: the text report top to bottom, one verdict and one evidence kind per branch.
std::string to_text(const RunReport& r) {
  std::ostringstream out;
  out << "parastack report (" << kReportSchema << ")\n\n";
  out << "command:   " << join(r.command) << "\n";
  out << "host:      " << r.host << ", launcher pid " << r.launcher_pid << "\n";
  out << "watched:   " << format_time(r.started_at) << " to " << format_time(r.ended_at) << "\n";
  if (r.verdict == JobVerdict::Hang && r.finding) {
    out << "verdict:   HANG (" << stats::to_string(r.finding->type())
        << (r.finding->type() == stats::HangType::Undetermined ? " type" : " error") << ")\n";
    out << "detected:  " << format_time(r.detected_at) << "; it began about " << format_time(r.onset_estimate) << "\n";
    if (r.finding->computation_error()) {
      out << "faulty:    rank" << (r.faulty_ranks.size() > 1 ? "s " : " ") << ranks_text(r.faulty_ranks)
          << ": outside MPI in every one of " << r.finding->checks.size()
          << " checks of all ranks, while the others wait in MPI\n";
    } else if (r.finding->type() == stats::HangType::Undetermined) {
      out << "faulty:    not known: the job ended after the hang was confirmed and before all ranks were "
          << "checked (killed by someone else, e.g. a second watchdog on the job, or ended by itself); "
          << r.finding->checks.size() << " check(s) taken\n";
    } else {
      out << "faulty:    none found: every rank waits inside MPI (a deadlock or a lost message)\n";
    }
    const auto& d = r.finding->decision;
    const auto& st = d.stasis;
    switch (d.evidence) {
      case stats::Evidence::EarlyStasis:
        out << "evidence:  no sampled rank moved for " << d.observation.t - st.early_onset << " s (" << st.early_streak
            << " observations; ranks busy-waiting in a polling loop left aside), at most a "
            << "quarter outside MPI; "
            << "the model-free stasis rule needs " << st.early_needed << " s of that"
            << (st.early_before_movement ? " (four times the usual: the job had not shown its ranks moving yet, and a "
                                           "rank stood outside MPI or others waited in MPI_Finalize)"
                                         : "")
            << "\n";
        break;
      case stats::Evidence::Stasis:
        out << "evidence:  " << st.streak << " consecutive observations in which no sampled rank moved; "
            << "healthy, this job does that with probability <= " << stats::bound_formula(st) << " = "
            << st.streak_bound << " (from " << st.pairs << " healthy observation pairs), below the test's alpha\n";
        break;
      default:
        out << "evidence:  " << d.streak << " consecutive samples with at most "
            << (d.threshold ? static_cast<int>(std::lround(d.threshold->value * 100)) : 0)
            << "% of the sampled ranks outside MPI; healthy, that happens with probability <= q = "
            << (d.threshold ? d.threshold->q : 0) << " each, so k = " << d.required_streak << " in a row\n";
    }
    out << "           alpha = " << r.config.model.alarm.alpha << " (" << stats::to_string(r.config.model.alarm.budget)
        << "); I = " << r.interval << " s, " << r.observations << " observations\n";
    if (r.slowdowns > 0) {
      out << "           " << r.slowdowns << " earlier alarm(s) were transient slowdowns, not hangs\n";
    }
  } else if (r.verdict == JobVerdict::MonitoringLost) {
    out << "verdict:   MONITORING LOST: a monitor stopped answering, and the job ran on unwatched from then "
           "on (notes below)\n";
  } else if (!r.coverage.ever_watched()) {
    // Never a plain "completed" for a job nothing could have judged: say so, and why.
    out << "verdict:   ended, NOT WATCHED";
    if (r.exit_status) out << ", exit status " << *r.exit_status;
    out << ": no test could have fired in " << r.observations << " observations ("
        << (r.coverage.why_unwatched.empty() ? "no MPI rank was sampled" : r.coverage.why_unwatched) << ")\n";
  } else {
    out << "verdict:   completed";
    if (r.exit_status) out << ", exit status " << *r.exit_status;
    out << " (" << r.observations << " observations, "
        << (r.alarms == 0 ? std::string("no alarm") : std::to_string(r.alarms) + " alarm(s), all judged slowdowns")
        << ")\n";
  }
  out << coverage_text(r.coverage);
  out << "action:    " << to_string(r.action) << ": " << r.action_taken << "\n";
  if (!r.trace_path.empty()) out << "trace:     " << r.trace_path << " (parastack replay reproduces the decision)\n";
  for (const auto& note : r.notes) out << "note:      " << note << "\n";
  if (!r.ranks.empty()) {
    out << "\nranks at detection:\n";
    out << "  RANK      PID  HOST              STATE\n";
    for (const auto& rank : r.ranks) {
      char line[256];
      // An OUT_MPI rank with an MPI call is at work on one thread while another is in that call.
      const char* in = rank.mpi_function.empty() ? "" : rank.state == "OUT_MPI" ? " (another thread in " : " in ";
      std::snprintf(line, sizeof line, "  %4d %8d  %-16s  %s%s%s%s", rank.rank, rank.pid, rank.host.c_str(),
                    rank.state.c_str(), in, rank.mpi_function.c_str(),
                    !rank.mpi_function.empty() && rank.state == "OUT_MPI" ? ")" : "");
      out << line;
      if (rank.progress) out << " (" << diagnosis::describe(*rank.progress) << ")";
      out << "\n";
    }
  }
  if (r.behind) out << behind_text(*r.behind);
  if (r.stacks) {
    out << "\nmerged stacks of all ranks (call-graph prefix tree; [ranks] on each call path):\n" << r.stacks->text;
  }
  return out.str();
}

}  // namespace parastack::watch
