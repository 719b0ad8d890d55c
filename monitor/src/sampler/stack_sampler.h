// Samples one rank: stops its thread(s) as briefly as the hardware allows, classifies IN_MPI or
// OUT_MPI, and names the MPI call it is in.
//
// Fast path (default): PTRACE_SEIZE + INTERRUPT, copy the registers and the top of the stack
// (process_vm_readv), detach, and only then unwind the copy with libunwind. The target is stopped
// for the copy alone; the unwind reads the stack from the copy and static data (unwind tables)
// from the running process, which does not change them. The naive path (unwind through ptrace with
// unw_get_proc_name while stopped) and the bare stop (interrupt, getregs, detach) exist for the
// benchmark that justifies this (docs/sampler.md).
//
// We seize and detach around every sample rather than staying attached: staying seized blocks
// debuggers (gdb, STAT get EPERM), turns every signal to the rank into a stop we must forward, and
// mishandles job-control stops, for a saving of 1-3 us.
//
// A rank someone else traces is waited for, briefly (sample_many): another watchdog sampling the
// same job (`parastack run` inside a `--parastack` job) holds a rank for the microseconds of its own
// sample, a debugger for as long as a person looks. Only a hold that outlasts kBriefHold is
// "already traced", and so, for the model, a debugger's (node_worker.h, held_ranks).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "os/ids.h"
#include "os/stopped_thread.h"
#include "parastack/stats/verification.h"
#include "sampler/sampled_frame.h"

namespace parastack::sampler {

class ProcessImage;

// How long a tracer may hold a rank before it counts as a debugger: waited for in pauses of 1, 2,
// 4 ... ms, far longer than any sample's stop (tens of microseconds) on a loaded node. One wait for
// a whole batch: a debugger that holds every rank (STAT) costs a call kBriefHold, not one each.
inline constexpr std::chrono::milliseconds kBriefHold{255};
// How long a rank waiting uninterruptibly in the kernel (os::StopFailure::InKernel) is waited for:
// a page read from disk or a file system call takes milliseconds; a stalled mount does not end.
inline constexpr std::chrono::milliseconds kBriefKernelWait{31};

// For each process, the tracer (TracerPid) that still traces it after up to kBriefHold of
// waiting, or 0: untraced now, released within kBriefHold, traced by `self`, or gone.
std::vector<pid_t> lasting_tracers(const std::vector<os::ProcessIdentity>& processes, pid_t self);
// For each process, whether it is still waiting in the kernel (state D) after up to
// kBriefKernelWait: a page read from disk is over by then, a stalled mount is not.
std::vector<bool> lasting_kernel_waits(const std::vector<os::ProcessIdentity>& processes);

enum class SamplePath {
  Fast,   // copy while stopped, unwind afterwards (default)
  Naive,  // unwind through ptrace and name frames while stopped
  Bare,   // stop, read registers, resume: the floor, no classification
};

enum class ThreadRule {
  Auto,        // all threads if the rank runs MPI_THREAD_MULTIPLE (Open MPI tells), else main thread
  MainThread,  // only the main thread can be in MPI (SINGLE, FUNNELED)
  AnyThread,   // IN_MPI if any thread is in MPI (§6, SERIALIZED and MULTIPLE)
};

struct SampleOptions {
  SamplePath path = SamplePath::Fast;
  ThreadRule threads = ThreadRule::Auto;
  bool frames = false;                  // also return the deciding thread's named frames
  std::size_t stack_bytes = 32 * 1024;  // copied from the stack pointer up
};

struct RankSample {
  os::Pid pid;
  stats::RankState state = stats::RankState::Unknown;
  std::optional<os::StopFailure> failure;  // the rank could not be stopped
  std::string note;                        // why Unknown, or anything unusual
  std::string mpi_function;                // the MPI call the application made (when IN_MPI)
  std::uint64_t path = 0;                  // call-path signature (path_signature.h); 0: unknown
  // The places of the functions around the innermost one, one to three calls out (Place::enclosing):
  // a loop calling helpers on every pass stands there. 0: none.
  stats::EnclosingPlaces enclosing{};
  // IN_MPI on one thread while another thread was running outside MPI (sampled thread by thread):
  // IN_MPI for S (the paper's rule, §6), but for stillness a rank at work outside MPI, as a
  // single-threaded rank computing is; `path` is then the place of all those threads.
  bool at_work_outside = false;
  std::uint64_t mpi_thread_path = 0;         // with at_work_outside: the thread in MPI's own path
  std::vector<SampledFrame> working_frames;  // with SampleOptions::frames, such a working thread's
  std::vector<SampledFrame> frames;          // with SampleOptions::frames
  std::size_t threads_sampled = 0;
  bool mpi_library_found = false;
  bool thread_multiple = false;
  // Found stopped by a signal (kill -STOP, Ctrl-Z, a suspended job), and left so: its state is
  // where it was stopped, not where it is going.
  bool job_control_stopped = false;
  std::chrono::nanoseconds stopped{0};      // how long the target was stopped, all threads
  std::chrono::nanoseconds monitor_cpu{0};  // the monitor's CPU time for this sample

  // "IN_MPI", "OUT_MPI", or the failure / unknown reason.
  std::string describe() const;
};

class StackSampler {
 public:
  StackSampler();
  ~StackSampler();
  StackSampler(const StackSampler&) = delete;
  StackSampler& operator=(const StackSampler&) = delete;

  // Samples `process` and only it: a pid that now names another process is not touched (failure
  // Replaced). Keep the identity from discovery; a bare pid means whatever process has it now.
  RankSample sample(const os::ProcessIdentity& process, const SampleOptions& options = {});
  RankSample sample(os::Pid pid, const SampleOptions& options = {});
  // Samples each process in turn, then takes again, after a pause, the samples another tracer
  // prevented, until they succeed or kBriefHold has passed; the same for a rank waiting in the
  // kernel, for up to kBriefKernelWait.
  std::vector<RankSample> sample_many(const std::vector<os::ProcessIdentity>& processes,
                                      const SampleOptions& options = {});

  // Forget what is cached about processes that are gone.
  void forget(os::Pid pid);

 private:
  ProcessImage* image_for(const os::ProcessIdentity& process, std::optional<os::StopFailure>& failure,
                          std::string& problem);
  std::unordered_map<pid_t, std::unique_ptr<ProcessImage>> images_;
};

}  // namespace parastack::sampler
