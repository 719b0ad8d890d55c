#include "node/node_worker.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "node/progress_facts.h"
#include "node/stack_views.h"
#include "os/proc.h"
#include "os/ptrace.h"
#include "os/signal.h"
#include "sampler/progress_reader.h"

namespace parastack::node {

bool NodeShare::takes(int rank, int world_size) const {
  if (count <= 1) return true;
  if (world_size <= 0) return index == 0;  // without a world size nothing can be shared: one takes all
  return static_cast<long long>(rank) * count / world_size == index;
}

// ---- live ranks ----

LiveNodeWorker::LiveNodeWorker(sampler::JobSelector selector, NodeShare share, sampler::SampleOptions options)
    : selector_(std::move(selector)), share_(share), options_(options) {}

std::vector<NodeRank> LiveNodeWorker::discover(const std::vector<std::string>& launches) {
  // A rank that died while a sample held one of its threads may have left it to us to reap; with
  // no rank left to sample here, nothing else would (os/ptrace.h).
  os::reap_dying_tracees();
  selector_.launches = launches;
  const auto discovery = sampler::discover_ranks(selector_);
  for (const auto& problem : discovery.problems) {
    if (problems_logged_.insert(problem).second) spdlog::warn("{}", problem);
  }
  discovered_.clear();
  std::vector<NodeRank> found;
  for (const auto& r : discovery.ranks) {
    if (adopted_.contains(r.instance) || !share_.takes(r.rank, r.world_size)) continue;
    NodeRank rank{r.rank, r.world_size, r.pid.value, r.host, r.instance, r.command, r.start_ticks};
    discovered_[r.instance].push_back(rank);
    found.push_back(std::move(rank));
  }
  return found;
}

void LiveNodeWorker::adopt(const std::string& instance) {
  adopted_.insert(instance);
  auto it = discovered_.find(instance);
  ranks_ = it == discovered_.end() ? std::vector<NodeRank>{} : it->second;
  // Keyed by index in ranks_: the previous program's holds are not this one's ranks'.
  seen_held_.clear();
  seen_stopped_.clear();
  seen_in_kernel_.clear();
  for (const auto& [id, ranks] : discovered_) {
    for (const auto& r : ranks) {  // images and pages of other programs' ranks
      sampler_.forget(os::Pid{r.pid});
      progress_counters_.forget(os::Pid{r.pid});
    }
  }
}

namespace {

os::ProcessIdentity identity_of(const NodeRank& rank) { return {os::Pid{rank.pid}, rank.start_ticks}; }

// Stopped by a signal now (state T), read without stopping it.
bool stopped_now(const os::ProcessIdentity& process) {
  const auto stat = os::read_stat(process.pid);
  return stat && stat->start_ticks == process.start_ticks && stat->state == 'T';
}

}  // namespace

std::vector<sampler::RankSample> LiveNodeWorker::sample_ranks(const std::vector<int>& local,
                                                              const sampler::SampleOptions& options) {
  std::vector<os::ProcessIdentity> processes;
  processes.reserve(local.size());
  for (int index : local) processes.push_back(identity_of(ranks_.at(static_cast<std::size_t>(index))));
  auto samples = sampler_.sample_many(processes, options);
  const auto sampled_at = std::chrono::steady_clock::now();
  samples_taken_ += samples.size();
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto failure = samples[i].failure;
    // Drop the cached image (symbols, unwind state) only of a rank that is gone: a rank held by a
    // debugger for a while would otherwise have its symbols reloaded at every sample.
    if (failure == os::StopFailure::Exited || failure == os::StopFailure::Zombie ||
        failure == os::StopFailure::Replaced) {
      sampler_.forget(processes[i].pid);
      progress_counters_.forget(processes[i].pid);
    }
    // A held rank is remembered with when it was seen (held_ranks), and said so in a debug line
    // with the log's time, worded unlike the alarms' lines, which tests and users look for.
    const char* held = nullptr;
    // One a debugger holds: its peers' stillness is the debugger's doing.
    if (failure == os::StopFailure::AlreadyTraced) {
      seen_held_[local[i]] = sampled_at;
      held = "traced by another process";
    }
    // One waiting in the kernel past a brief wait: a stalled file system holds it, and its peers
    // wait for it without the application being hung.
    if (failure == os::StopFailure::InKernel) {
      seen_in_kernel_[local[i]] = sampled_at;
      held = "in state D";
    }
    // One stopped by a signal: someone paused it (kill -STOP, Ctrl-Z, a suspended job).
    if (samples[i].job_control_stopped) {
      seen_stopped_[local[i]] = sampled_at;
      held = "stopped by a signal";
    }
    if (held) {
      spdlog::debug("sample: rank {} (pid {}): {}", ranks_.at(static_cast<std::size_t>(local[i])).rank,
                    processes[i].pid.value, held);
    }
  }
  return samples;
}

std::vector<stats::RankSnapshot> LiveNodeWorker::snapshot(const std::vector<int>& local) {
  // The progress pages' counts first, read without stopping the ranks: a call completing between
  // a rank's two reads shows as movement in this sample or the next, never as stillness.
  std::vector<std::optional<sampler::ProgressCounters::Counts>> counts;
  counts.reserve(local.size());
  for (int index : local)
    counts.push_back(progress_counters_.read(identity_of(ranks_.at(static_cast<std::size_t>(index)))));
  auto samples = sample_ranks(local, options_);
  std::vector<stats::RankSnapshot> states;
  states.reserve(local.size());
  for (std::size_t i = 0; i < samples.size(); ++i) {
    // A rank that could not be sampled (exited, denied, held) is no evidence either way: Unknown.
    // Nor is a stopped one: a paused job stands still without being hung, and what its samples
    // would teach the model (stillness) is not how it runs.
    if (samples[i].failure || samples[i].job_control_stopped) {
      states.emplace_back();
      continue;
    }
    stats::RankSnapshot snapshot{samples[i].state, std::move(samples[i].mpi_function), samples[i].path};
    snapshot.at_work_outside = samples[i].at_work_outside;
    snapshot.mpi_thread_path = samples[i].mpi_thread_path;
    snapshot.enclosing = samples[i].enclosing;
    if (counts[i]) {
      snapshot.mpi_completed = counts[i]->completed;
      snapshot.mpi_polled = counts[i]->polled;
    }
    states.push_back(std::move(snapshot));
  }
  return states;
}

std::vector<stats::RankState> LiveNodeWorker::all_states() {
  std::vector<int> everyone(ranks_.size());
  for (std::size_t i = 0; i < everyone.size(); ++i) everyone[i] = static_cast<int>(i);
  std::vector<stats::RankState> states;
  states.reserve(everyone.size());
  for (const auto& s : snapshot(everyone)) states.push_back(stats::checked_state(s));
  return states;
}

std::vector<std::optional<stats::WorkCounters>> LiveNodeWorker::work_counters() {
  std::vector<std::optional<stats::WorkCounters>> counters;
  counters.reserve(ranks_.size());
  static const auto page_size = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  for (const auto& r : ranks_) {
    const auto io = os::read_io(os::Pid{r.pid});
    const auto stat = os::read_stat(os::Pid{r.pid});
    const auto sched = os::read_schedstat(os::Pid{r.pid});
    // Read, then make sure they were the rank's: a reused pid's counters are no evidence.
    const bool ours = io && stat && os::has_pid_now(identity_of(r));
    if (!ours) {
      counters.push_back(std::nullopt);
      continue;
    }
    stats::WorkCounters c{.io_bytes = io->read_chars + io->written_chars,
                          .resident_bytes = stat->resident_pages * page_size};
    // Without schedstat (a kernel without CONFIG_SCHED_INFO) or a clock, age 0: starvation unknown.
    // CPU time of every thread (an OpenMP team's too), the run queue of the main one (MPI's).
    if (sched) {
      c.cpu_ns = os::ticks_to_ns(stat->cpu_ticks);
      c.run_delay_ns = sched->run_delay_ns;
      c.age_ns = os::age_ns(stat->start_ticks).value_or(0);
    }
    counters.push_back(c);
  }
  return counters;
}

std::vector<HeldRank> LiveNodeWorker::held_ranks(double within_seconds) {
  // Between samples this monitor traces nobody, so any tracer is someone else's; one that lets go
  // within a moment was sampling (another watchdog), not holding (sampler::lasting_tracers). A rank
  // let go a moment ago counts too: the still samples its peers gave while it was held (the streak
  // that raised the alarm) are no evidence of a hang (bench/faults.sh section 7 saw gdb detach
  // between the streak and this check, and the job was called hung). The same for a rank stopped
  // by a signal: whoever stopped it paused the job (its peers wait for it), and a stop cannot be
  // told from a hang by the stacks alone. And for one waiting in the kernel past a page read (a
  // stalled mount holds it), now or at a sample of the window. A hold before the window (a
  // rank's start-up reads in state D, a debugger let go before the job hung) says nothing of the
  // samples the alarm stands on, and would cost a hang a second streak.
  const auto now = std::chrono::steady_clock::now();
  const auto in_window = [&](const auto& seen, int local) {
    const auto it = seen.find(local);
    if (it == seen.end()) return false;
    return !(within_seconds < 1e9) || std::chrono::duration<double>(now - it->second).count() <= within_seconds;
  };
  std::vector<HeldRank> held;
  std::vector<os::ProcessIdentity> processes;
  processes.reserve(ranks_.size());
  for (const auto& r : ranks_) processes.push_back(identity_of(r));
  const auto tracers = sampler::lasting_tracers(processes, ::getpid());
  const auto in_kernel = sampler::lasting_kernel_waits(processes);
  for (std::size_t i = 0; i < ranks_.size(); ++i) {
    const int local = static_cast<int>(i);
    if (tracers[i] != 0) {
      held.push_back({local, tracers[i]});
    } else if (in_window(seen_held_, local)) {
      held.push_back({local, 0});
    } else if (in_window(seen_stopped_, local) || stopped_now(processes[i])) {
      held.push_back({local, 0, true});
    } else if (in_window(seen_in_kernel_, local) || in_kernel[i]) {
      held.push_back({local, 0, false, true});
    }
  }
  return held;
}

diagnosis::PrefixTree LiveNodeWorker::gather_stacks(std::vector<RankRecord>& records) {
  diagnosis::PrefixTree tree;
  records.clear();
  sampler::SampleOptions with_frames = options_;
  with_frames.frames = true;
  // The pages first: they are read without stopping the ranks.
  for (const auto& r : ranks_) {
    RankRecord record{r.rank, r.pid, r.host, {}, {}, {}, {}, {}, {}};
    if (auto page = sampler::read_progress_page(os::Pid{r.pid}, record.progress_problem)) {
      record.progress = progress_facts(*page);
    }
    records.push_back(std::move(record));
  }
  std::vector<int> everyone(ranks_.size());
  for (std::size_t i = 0; i < everyone.size(); ++i) everyone[i] = static_cast<int>(i);
  const auto samples = sample_ranks(everyone, with_frames);
  for (std::size_t i = 0; i < ranks_.size(); ++i) {
    const NodeRank& r = ranks_[i];
    RankRecord& record = records[i];
    const sampler::RankSample& sample = samples[i];
    // Tests and probes leave the page's call alone: a rank polling in vain (its polls grew across
    // the sample and it completed nothing, or the sample found it in the polling call) is waiting,
    // on somebody the page does not say, and is not "outside MPI".
    if (record.progress && record.progress->activity == diagnosis::RankProgress::Activity::Outside) {
      std::string ignored;
      const auto after = sampler::read_progress_page(os::Pid{r.pid}, ignored);
      const bool polled_in_vain =
          after && after->polls > record.progress->polls && after->completed == record.progress->completed;
      if (polled_in_vain || stats::is_polling_function(sample.mpi_function)) {
        record.progress->activity = diagnosis::RankProgress::Activity::Other;
        record.progress->call =
            "a polling loop (" +
            (sample.mpi_function.empty() ? std::string("MPI_Test, MPI_Iprobe...") : sample.mpi_function) + ")";
      }
    }
    // A rank at work outside MPI beside its thread in MPI is outside MPI here, as in the checks of
    // all ranks (stats::checked_state): where it works is its place in the report, and both its
    // threads are in the tree. mpi_function stays the other thread's call.
    record.state = sample.at_work_outside ? "OUT_MPI" : sample.describe();
    record.mpi_function = sample.mpi_function;
    const auto& own = sample.at_work_outside ? sample.working_frames : sample.frames;
    for (auto f = own.rbegin(); f != own.rend(); ++f) {
      record.path.push_back(f->function);
      record.call_sites.push_back(f->offset);
      if (f->mpi) break;
    }
    tree.add(stack_trace_of(sample), static_cast<diagnosis::Rank>(r.rank));
    if (sample.at_work_outside) tree.add(working_trace_of(sample), static_cast<diagnosis::Rank>(r.rank));
  }
  return tree;
}

void LiveNodeWorker::signal(int signal) {
  // By identity: a rank that has exited may have left its pid to another process.
  for (const auto& r : ranks_) os::send_signal(identity_of(r), signal);
  if (signal != SIGSTOP) return;
  // A signal is delivered when its target next runs: on a busy node a rank waiting for a CPU shows
  // 'R' for a while. "The ranks are stopped, attach a debugger" must be true when we say it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (const auto& r : ranks_) {
    while (std::chrono::steady_clock::now() < deadline) {
      const auto stat = os::read_stat(os::Pid{r.pid});
      if (!stat || stat->start_ticks != r.start_ticks || stat->state == 'T' || stat->state == 'Z') break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

bool LiveNodeWorker::ranks_alive() {
  return std::any_of(ranks_.begin(), ranks_.end(), [](const auto& r) { return os::is_alive(identity_of(r)); });
}

}  // namespace parastack::node
