#include "sampler/stack_sampler.h"

#include <libunwind-ptrace.h>
#include <sys/user.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <optional>
#include <span>
#include <thread>

#include "os/proc.h"
#include "os/remote_memory.h"
#include "parastack/stats/random.h"
#include "sampler/copied_memory.h"
#include "sampler/path_signature.h"
#include "sampler/process_image.h"

// Exported by libunwind (libunwind-ptrace calls it), declared in none of its headers.
extern "C" int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t, unw_word_t, unw_dyn_info_t*, unw_proc_info_t*, int,
                                                  void*);

namespace parastack::sampler {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kMaxFrames = 256;  // bad unwind info must not walk forever

// What is copied while a thread is stopped (or, blocked in a call a stop would break, as it waits).
struct Capture {
  user_regs_struct regs{};
  std::vector<std::uint8_t> stack;
  std::uint64_t stack_start = 0;
  bool only_sp_and_pc = false;  // the other registers are unknown: read from /proc, not stopped
};

// libunwind hands its accessors the `arg` of whoever called them, and _UPT_find_proc_info passes
// its own UPT handle down to access_mem. So the capture being unwound cannot travel in `arg`: it is
// this thread's current one, set for the duration of unwind_copy().
struct UnwindContext {
  ProcessImage* image;
  const Capture* capture;
  void* upt;
  unw_word_t vdso_start;
  std::span<const std::uint8_t> vdso_image;
  std::optional<unw_dyn_info_t> vdso_table;  // a copy: libunwind's search takes it non-const
};
thread_local UnwindContext* current_unwind = nullptr;

int copy_find_proc_info(unw_addr_space_t space, unw_word_t ip, unw_proc_info_t* info, int need_unwind_info, void*) {
  // _UPT looks for a file to read the unwind table from, and the vdso has none: its table is
  // searched where it lies in the process (read from our copy of the image, see access_mem).
  // dwarf_search_unwind_table is not in libunwind's headers but exported for libunwind-ptrace,
  // which calls it the same way; perf does this for the vdso too.
  if (auto& vdso = current_unwind->vdso_table; vdso && ip >= vdso->start_ip && ip < vdso->end_ip) {
    return UNW_OBJ(dwarf_search_unwind_table)(space, ip, &*vdso, info, need_unwind_info, current_unwind->upt);
  }
  // A file's table as the process image knows it, searched the same way; _UPT_find_proc_info reads
  // the maps and maps the file again for it. It is still asked where that table has no entry for
  // ip (it also reads .debug_frame) and for code in no mapping the image knows.
  if (const unw_dyn_info_t* known = current_unwind->image->unwind_table_at(ip)) {
    unw_dyn_info_t table = *known;  // libunwind's search takes it non-const
    const int found =
        UNW_OBJ(dwarf_search_unwind_table)(space, ip, &table, info, need_unwind_info, current_unwind->upt);
    if (found != -UNW_ENOINFO) return found;
  }
  return _UPT_find_proc_info(space, ip, info, need_unwind_info, current_unwind->upt);
}

void copy_put_unwind_info(unw_addr_space_t space, unw_proc_info_t* info, void*) {
  _UPT_put_unwind_info(space, info, current_unwind->upt);
}

int copy_get_dyn_info_list_addr(unw_addr_space_t, unw_word_t*, void*) { return -UNW_ENOINFO; }

int copy_access_mem(unw_addr_space_t, unw_word_t address, unw_word_t* value, int write, void*) {
  if (write) return -UNW_EINVAL;
  const Capture& c = *current_unwind->capture;
  if (copy_holds(address, sizeof(unw_word_t), c.stack_start, c.stack.size())) {
    std::memcpy(value, &c.stack[address - c.stack_start], sizeof(unw_word_t));
    return 0;
  }
  const auto vdso_offset = address - current_unwind->vdso_start;
  if (copy_holds(address, sizeof(unw_word_t), current_unwind->vdso_start, current_unwind->vdso_image.size())) {
    std::memcpy(value, &current_unwind->vdso_image[vdso_offset], sizeof(unw_word_t));
    return 0;
  }
  // Outside the copies: unwind tables and other static data, of the running process.
  return current_unwind->image->read_memory(address, value, sizeof(unw_word_t)) ? 0 : -UNW_EINVAL;
}

int copy_access_reg(unw_addr_space_t, unw_regnum_t reg, unw_word_t* value, int write, void*) {
  if (write) return -UNW_EINVAL;
  const user_regs_struct& r = current_unwind->capture->regs;
  // An unwind that needs another register (a frame whose unwind rule is based on rbp) ends there.
  if (current_unwind->capture->only_sp_and_pc && reg != UNW_X86_64_RSP && reg != UNW_X86_64_RIP) return -UNW_EBADREG;
  switch (reg) {
    case UNW_X86_64_RAX:
      *value = r.rax;
      break;
    case UNW_X86_64_RDX:
      *value = r.rdx;
      break;
    case UNW_X86_64_RCX:
      *value = r.rcx;
      break;
    case UNW_X86_64_RBX:
      *value = r.rbx;
      break;
    case UNW_X86_64_RSI:
      *value = r.rsi;
      break;
    case UNW_X86_64_RDI:
      *value = r.rdi;
      break;
    case UNW_X86_64_RBP:
      *value = r.rbp;
      break;
    case UNW_X86_64_RSP:
      *value = r.rsp;
      break;
    case UNW_X86_64_R8:
      *value = r.r8;
      break;
    case UNW_X86_64_R9:
      *value = r.r9;
      break;
    case UNW_X86_64_R10:
      *value = r.r10;
      break;
    case UNW_X86_64_R11:
      *value = r.r11;
      break;
    case UNW_X86_64_R12:
      *value = r.r12;
      break;
    case UNW_X86_64_R13:
      *value = r.r13;
      break;
    case UNW_X86_64_R14:
      *value = r.r14;
      break;
    case UNW_X86_64_R15:
      *value = r.r15;
      break;
    case UNW_X86_64_RIP:
      *value = r.rip;
      break;
    default:
      return -UNW_EBADREG;
  }
  return 0;
}

int copy_access_fpreg(unw_addr_space_t, unw_regnum_t, unw_fpreg_t*, int, void*) { return -UNW_EBADREG; }

int copy_resume(unw_addr_space_t, unw_cursor_t*, void*) { return -UNW_EINVAL; }

int copy_get_proc_name(unw_addr_space_t, unw_word_t, char*, size_t, unw_word_t*, void*) {
  return -UNW_ENOINFO;  // names come from our own symbol tables
}

std::chrono::nanoseconds thread_cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

struct Unwound {
  std::vector<std::uint64_t> frames;
  bool complete = false;
  std::string problem;     // why it could not even start (the stack copy failed)
  bool unstopped = false;  // taken as the thread waited (sample_without_stopping): sp and pc only
};

Unwound walk(unw_cursor_t& cursor) {
  Unwound result;
  for (int depth = 0; depth < kMaxFrames; ++depth) {
    unw_word_t ip = 0;
    if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0) break;
    result.frames.push_back(ip);
    const int step = unw_step(&cursor);
    if (step == 0) {
      result.complete = true;
      break;
    }
    if (step < 0) break;
  }
  return result;
}

Unwound unwind_copy(ProcessImage& image, const Capture& capture) {
  UnwindContext context{&image, &capture, image.upt(), image.vdso().start, image.vdso_image(), std::nullopt};
  if (const unw_dyn_info_t* vdso = image.vdso_unwind_table()) context.vdso_table = *vdso;
  current_unwind = &context;
  Unwound result;
  unw_cursor_t cursor;
  if (unw_init_remote(&cursor, image.copy_address_space(), nullptr) == 0) result = walk(cursor);
  current_unwind = nullptr;
  return result;
}

struct ThreadResult {
  std::optional<os::StopFailure> failure;
  Unwound unwound;
  std::chrono::nanoseconds stopped{0};
  bool job_control_stopped = false;
  bool was_running = false;  // state R just before the stop (never for one sampled without a stop: it waits)
};

// Copies the stack from capture.stack_start into capture.stack (up to its size); a failure that is
// the thread's (gone, not ours) goes to result.failure, any other to result.unwound.problem.
void copy_stack(os::Pid pid, Capture& capture, ThreadResult& result) {
  const auto read = os::read_remote(pid, capture.stack_start, capture.stack.data(), capture.stack.size());
  capture.stack.resize(read.bytes);
  if (read.bytes == 0 && read.status == os::PtraceStatus::Failed) {
    result.unwound.problem = "stack not readable at the stack pointer: " + std::string(std::strerror(read.error));
  }
  // Killed while stopped, or not ours after all: say so, rather than "incomplete unwind".
  if (read.status == os::PtraceStatus::Gone) result.failure = os::StopFailure::Exited;
  if (read.status == os::PtraceStatus::Denied) result.failure = os::StopFailure::Denied;
}

// A thread blocked in a call that a stop would break (os::stop_interrupts: epoll_wait returns
// EINTR to a program that was only looked at) is sampled as it waits, never stopped: its stack
// pointer and pc are in /proc, and its stack does not change until the call returns, which a
// second look after the copy rules out. Only those two registers are known, so an unwind that
// needs another (a frame built to unwind through rbp) stops there and the sample is Unknown,
// rather than a stop that breaks the wait. Only a thread asleep (state S) and traced by no one:
// one stopped by a signal or a tracer still shows the call it was in when it stopped, and a stop
// tells what it is (job_control_stopped; already traced) and breaks nothing, the wait being
// broken already. nullopt: not in such a wait (or it kept moving), stop it.
std::optional<ThreadResult> sample_without_stopping(ProcessImage& image, os::Tid tid, const SampleOptions& options) {
  for (int look = 0; look < 3; ++look) {
    const auto wait = os::read_thread_wait(image.pid(), tid);
    if (!wait || !os::stop_interrupts(wait->syscall)) return std::nullopt;
    const auto status = os::read_thread_status(image.pid(), tid);
    if (!status || status->state != 'S' || status->tracer != 0) return std::nullopt;
    ThreadResult result;
    Capture capture;
    capture.only_sp_and_pc = true;
    capture.regs.rsp = wait->stack_pointer;
    capture.regs.rip = wait->pc;
    capture.stack_start = wait->stack_pointer;
    capture.stack.resize(options.stack_bytes);
    copy_stack(image.pid(), capture, result);
    if (result.failure) return result;
    if (os::read_thread_wait(image.pid(), tid) != wait) continue;  // it returned meanwhile: look again
    if (result.unwound.problem.empty()) result.unwound = unwind_copy(image, capture);
    result.unwound.unstopped = true;
    return result;
  }
  return std::nullopt;
}

// Stops one thread, takes what the path needs, resumes it.
ThreadResult sample_thread(ProcessImage& image, os::Tid tid, const SampleOptions& options) {
  if (options.path == SamplePath::Fast) {
    if (auto waiting = sample_without_stopping(image, tid, options)) return std::move(*waiting);
  }
  ThreadResult result;
  Capture capture;
  {
    const os::TerminationSignalsHeld held;  // a SIGTERM now is delivered after the detach
    const auto begin = Clock::now();
    auto stopped = os::StoppedThread::stop(image.identity(), tid);
    if (auto* failure = std::get_if<os::StopFailure>(&stopped)) {
      result.failure = *failure;
      return result;
    }
    auto& thread = std::get<os::StoppedThread>(stopped);
    result.job_control_stopped = thread.job_control_stopped();
    result.was_running = thread.was_running();
    if (os::ptrace_get_regs(tid, capture.regs) != os::PtraceStatus::Ok) {
      result.failure = os::StopFailure::Exited;
      return result;  // thread's destructor detaches
    }
    if (options.path == SamplePath::Fast) {
      capture.stack.resize(options.stack_bytes);
      capture.stack_start = capture.regs.rsp;
      copy_stack(image.pid(), capture, result);
      if (result.failure) return result;  // thread's destructor detaches
    } else if (options.path == SamplePath::Naive) {
      // Unwind through ptrace while stopped, naming every frame as we go: the slow way.
      void* upt = _UPT_create(tid.value);
      unw_cursor_t cursor;
      if (upt && unw_init_remote(&cursor, image.ptrace_address_space(), upt) == 0) {
        for (int depth = 0; depth < kMaxFrames; ++depth) {
          unw_word_t ip = 0, offset = 0;
          char name[256];
          if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0) break;
          result.unwound.frames.push_back(ip);
          unw_get_proc_name(&cursor, name, sizeof name, &offset);
          const int step = unw_step(&cursor);
          if (step == 0) {
            result.unwound.complete = true;
            break;
          }
          if (step < 0) break;
        }
      }
      if (upt) _UPT_destroy(upt);
    }
    thread.detach();
    result.stopped = Clock::now() - begin;
  }
  if (options.path == SamplePath::Fast && result.unwound.problem.empty()) result.unwound = unwind_copy(image, capture);
  return result;
}

}  // namespace

unw_accessors_t copy_accessors = {copy_find_proc_info, copy_put_unwind_info, copy_get_dyn_info_list_addr,
                                  copy_access_mem,     copy_access_reg,      copy_access_fpreg,
                                  copy_resume,         copy_get_proc_name};

std::string RankSample::describe() const {
  // The note names the file and errno of a failure that is neither "gone" nor "not ours".
  if (failure)
    return os::to_string(*failure) + (*failure == os::StopFailure::Failed && !note.empty() ? ": " + note : "");
  if (state == stats::RankState::Unknown) return "unknown" + (note.empty() ? "" : ": " + note);
  return std::string(stats::to_string(state));
}

StackSampler::StackSampler() = default;
StackSampler::~StackSampler() = default;

void StackSampler::forget(os::Pid pid) { images_.erase(pid.value); }

ProcessImage* StackSampler::image_for(const os::ProcessIdentity& process, std::optional<os::StopFailure>& failure,
                                      std::string& problem) {
  const os::Pid pid = process.pid;
  auto stat = os::read_stat(pid);
  if (!stat || (process.start_ticks != 0 && stat->start_ticks != process.start_ticks)) {
    images_.erase(pid.value);
    failure = stat ? os::StopFailure::Replaced : os::StopFailure::Exited;
    problem = os::to_string(*failure);
    return nullptr;
  }
  auto it = images_.find(pid.value);
  if (it != images_.end() && it->second->start_ticks() != stat->start_ticks) {
    images_.erase(it);  // the pid was reused by another process
    it = images_.end();
  }
  if (it == images_.end()) {
    os::StopFailure load_failure = os::StopFailure::Failed;
    auto image = ProcessImage::load(pid, load_failure, problem);
    if (!image) {
      failure = load_failure;
      return nullptr;
    }
    it = images_.emplace(pid.value, std::move(image)).first;
  }
  return it->second.get();
}

namespace {

// A thread that was running outside MPI (or could not be read) when sampled.
struct ThreadAtWork {
  os::Tid tid{0};
  Unwound unwound;
  Classification decision;
};

// The thread that decides a rank's state (the first found in MPI, else the first sampled), whether
// some other thread could not be unwound, and the threads that were at work outside MPI.
struct Deciding {
  os::Tid tid{0};
  std::optional<Unwound> unwound;
  std::optional<Classification> decision;
  bool unknown = false;
  std::vector<ThreadAtWork> at_work;
};

// Whether some frame of a thread is the application's: not the C runtime's, nor the MPI runtime's.
bool runs_application_code(ProcessImage& image, const Unwound& unwound) {
  for (std::size_t i = 0; i < unwound.frames.size(); ++i) {
    const std::uint64_t code = unwound.frames[i] - (i > 0 ? 1 : 0);
    if (!image.in_c_runtime(code) && !image.in_mpi_runtime(code)) return true;
  }
  return false;
}

// Every thread is sampled, also after one in MPI has decided: another one may be at work outside
// MPI (running at the look before its stop, not asleep as MPI's own helper threads are), and then
// the rank is at work there too (describe_rank).
Deciding sample_threads(ProcessImage& image, os::Pid pid, const std::vector<os::Tid>& threads,
                        const SampleOptions& options, RankSample& sample) {
  Deciding deciding;
  for (const os::Tid tid : threads) {
    ThreadResult thread = sample_thread(image, tid, options);
    sample.stopped += thread.stopped;
    sample.job_control_stopped |= thread.job_control_stopped;
    if (thread.failure) {
      // A helper thread that exits is no news; the main thread failing is the sample's failure. A
      // helper waiting in the kernel might have come from MPI: the rank is not seen outside it.
      if (tid == os::main_thread(pid)) sample.failure = thread.failure;
      deciding.unknown |= thread.failure == os::StopFailure::InKernel;
      continue;
    }
    ++sample.threads_sampled;
    if (options.path == SamplePath::Bare) continue;
    const auto c = classify_by_address(thread.unwound.frames, thread.unwound.complete, image.mpi_code());
    deciding.unknown |= c.state == stats::RankState::Unknown;
    // Running and not in MPI: at work (or unreadable, which may be work too), unless all it runs is
    // the MPI runtime's own code (its progress or PMIx thread, woken by an event: Open MPI's helper
    // threads have no MPI call in their stacks). Only one beside a thread in MPI matters, but which
    // thread decides is known only at the end.
    if (threads.size() > 1 && thread.was_running && c.state != stats::RankState::InMpi &&
        runs_application_code(image, thread.unwound)) {
      deciding.at_work.push_back({tid, thread.unwound, c});
    }
    if (deciding.decision && deciding.decision->state == stats::RankState::InMpi) continue;
    if (c.state == stats::RankState::InMpi || !deciding.unwound) {  // one thread in MPI decides
      deciding.tid = tid;
      deciding.unwound = std::move(thread.unwound);
      deciding.decision = c;
    }
  }
  if (!deciding.decision || deciding.decision->state != stats::RankState::InMpi) deciding.at_work.clear();
  return deciding;
}

// The rank's state, MPI call, path signature and (when asked) named frames, from its deciding thread.
void describe_rank(RankSample& sample, ProcessImage& image, os::Tid tid, const Unwound& unwound,
                   const Classification& decision, bool other_unknown, const std::vector<ThreadAtWork>& at_work,
                   const SampleOptions& options) {
  sample.state = decision.state;
  if (sample.state == stats::RankState::OutMpi && other_unknown) {
    sample.state = stats::RankState::Unknown;  // a thread we could not unwind might be in MPI
  }
  if (sample.state == stats::RankState::Unknown) {
    sample.note = !unwound.problem.empty() ? unwound.problem
                                           : "incomplete unwind (" + std::to_string(unwound.frames.size()) + " frames)";
    if (unwound.unstopped && unwound.problem.empty()) {
      sample.note += ", taken without stopping it: it waits in a call that a stop would break";
    }
  }
  if (decision.entry_frame) {
    const std::size_t i = *decision.entry_frame;
    sample.mpi_function = image.describe(unwound.frames[i] - (i > 0 ? 1 : 0)).function;
  }
  // A thread's place: where its frames are, as path_signature reads them; a Python thread's place
  // is its Python stack (python_stack.h), read now that it runs again. Without the vdso's unwind
  // table (its image could not be read) the frames past a pc there (clock_gettime, often, in a
  // timed loop) are guesses, so the place of such a sample stays unknown rather than a made-up one.
  ProcessImage* in = &image;
  const auto place_of = [&](const Unwound& frames, stats::RankState state, const Classification& classification,
                            const std::vector<PythonFrame>& python) {
    const bool guessed_frames =
        !frames.frames.empty() && in->vdso().contains(frames.frames[0]) && !in->vdso_unwind_table();
    if (guessed_frames) return Place{};
    return place_signature(
        frames.frames, frames.complete, {state, classification.entry_frame},
        state == stats::RankState::InMpi ? sample.mpi_function : std::string(),
        [in](std::uint64_t address) { return in->function_start(address); },
        [in](std::uint64_t address) { return in->in_c_runtime(address); },
        [in](std::uint64_t address) { return in->in_mpi_wrapper(address); },
        [in](std::uint64_t address) { return in->in_openmp_runtime(address); },
        [in](std::uint64_t address) { return in->in_python_interpreter(address); }, python_places(python));
  };
  const std::vector<PythonFrame> python_frames =
      image.runs_python() ? image.python_stack(tid) : std::vector<PythonFrame>{};
  // The rank's final state, not the deciding thread's: Unknown when another thread might be in MPI.
  const Place place = place_of(unwound, sample.state, decision, python_frames);
  sample.path = place.path;
  sample.enclosing = place.enclosing;
  // In MPI on one thread (the paper's IN_MPI, §6) while another runs outside it: the rank works
  // there. A comm thread polling with MPI_Iprobe beside a main thread deep in a long computation
  // would otherwise stand still at the poll, on every rank, for as long as the computation lasts,
  // and be confirmed hung (measured: a healthy job killed 38 s into such a phase). So the rank is
  // at work outside MPI for stillness, and its place is all those threads' places: the poll and
  // where the computation is. One unknown place makes it unknown, which is never "not moved".
  // With one such thread, the places around it are mixed in the same way (a comm thread's poll
  // beside a main thread spinning through helpers stands at the poll and the loop); with more,
  // there are none.
  if (sample.state == stats::RankState::InMpi && !at_work.empty()) {
    sample.at_work_outside = true;
    const std::uint64_t deciding = sample.path;
    sample.mpi_thread_path = deciding;
    const auto beside = [](std::uint64_t own, std::uint64_t working, os::Tid worker) {
      return own == 0 || working == 0 ? std::uint64_t{0} : stats::mix64(own ^ stats::mix64(working ^ worker.value));
    };
    sample.enclosing = {};
    for (const ThreadAtWork& thread : at_work) {
      if (sample.path == 0) break;
      const std::vector<PythonFrame> python =
          image.runs_python() ? image.python_stack(thread.tid) : std::vector<PythonFrame>{};
      const Place working = place_of(thread.unwound, thread.decision.state, thread.decision, python);
      sample.path = beside(sample.path, working.path, thread.tid);
      if (at_work.size() == 1) {
        for (std::size_t j = 0; j < working.enclosing.size(); ++j) {
          sample.enclosing[j] = beside(deciding, working.enclosing[j], thread.tid);
        }
      }
    }
  }
  if (!options.frames) return;
  const auto name_frames = [&](const Unwound& frames, std::vector<SampledFrame>& named) {
    for (std::size_t i = 0; i < frames.frames.size(); ++i) {
      const std::uint64_t looked_up = frames.frames[i] - (i > 0 ? 1 : 0);
      SampledFrame frame = image.describe(looked_up);
      frame.address = frames.frames[i];
      if (const auto start = image.function_start(looked_up)) frame.offset = frame.address - *start;
      frame.mpi = std::any_of(image.mpi_code().begin(), image.mpi_code().end(),
                              [&](const CodeRange& code) { return code.contains(looked_up); });
      named.push_back(std::move(frame));
    }
  };
  name_frames(unwound, sample.frames);
  // The working thread a report shows beside the deciding one: the first whose stack was read whole.
  if (sample.at_work_outside) {
    const auto readable = std::find_if(at_work.begin(), at_work.end(), [](const ThreadAtWork& thread) {
      return thread.decision.state == stats::RankState::OutMpi;
    });
    name_frames((readable != at_work.end() ? *readable : at_work.front()).unwound, sample.working_frames);
  }
  if (python_frames.empty()) return;
  sample.frames = interleave_python_frames(
      std::move(sample.frames), python_frames,
      [&](const SampledFrame& frame) {
        return frame.function == "_PyEval_EvalFrameDefault" && image.in_python_interpreter(frame.address);
      },
      [&](std::size_t i) {
        const PythonFrame& python = python_frames[i];
        SampledFrame frame;
        frame.function = image.describe_python(python);
        if (frame.function.empty()) frame.function = "?? (Python)";
        frame.module = "Python";
        frame.offset =
            python.instruction != 0 ? python.instruction - python.code : 0;  // orders two calls in one function
        return frame;
      });
}

}  // namespace

RankSample StackSampler::sample(os::Pid pid, const SampleOptions& options) { return sample({pid, 0}, options); }

RankSample StackSampler::sample(const os::ProcessIdentity& process, const SampleOptions& options) {
  const auto cpu_begin = thread_cpu_now();
  const os::Pid pid = process.pid;
  RankSample sample;
  sample.pid = pid;
  std::string problem;
  ProcessImage* image = image_for(process, sample.failure, problem);
  if (!image) {
    sample.note = problem;
    sample.monitor_cpu = thread_cpu_now() - cpu_begin;
    return sample;
  }
  image->begin_sample();
  sample.mpi_library_found = image->has_mpi();
  if (!sample.mpi_library_found) sample.note = "no MPI library mapped";
  sample.thread_multiple = image->thread_multiple();
  const bool any_thread =
      options.threads == ThreadRule::AnyThread || (options.threads == ThreadRule::Auto && sample.thread_multiple);
  const std::vector<os::Tid> threads = any_thread ? os::list_threads(pid) : std::vector<os::Tid>{os::main_thread(pid)};

  const Deciding deciding = sample_threads(*image, pid, threads, options, sample);
  if (!sample.failure && options.path != SamplePath::Bare && deciding.decision) {
    describe_rank(sample, *image, deciding.tid, *deciding.unwound, *deciding.decision, deciding.unknown,
                  deciding.at_work, options);
  }
  sample.monitor_cpu = thread_cpu_now() - cpu_begin;
  return sample;
}

namespace {

// Takes again (`again(i)`) every item i that is `held(i)` after pauses of 1, 2, 4 ... ms, until none
// is or `longest` has passed: another watchdog's sample lets go of a rank within microseconds.
template <class Held, class Again>
void wait_out_brief_holds(std::size_t count, Held held, Again again, std::chrono::milliseconds longest = kBriefHold) {
  auto any_held = [&] {
    for (std::size_t i = 0; i < count; ++i) {
      if (held(i)) return true;
    }
    return false;
  };
  for (auto pause = std::chrono::milliseconds(1); pause < longest && any_held(); pause *= 2) {
    std::this_thread::sleep_for(pause);
    for (std::size_t i = 0; i < count; ++i) {
      if (held(i)) again(i);
    }
  }
}

}  // namespace

std::vector<RankSample> StackSampler::sample_many(const std::vector<os::ProcessIdentity>& processes,
                                                  const SampleOptions& options) {
  std::vector<RankSample> samples;
  samples.reserve(processes.size());
  for (const auto& process : processes) samples.push_back(sample(process, options));
  const auto again = [&](std::size_t i) { samples[i] = sample(processes[i], options); };
  wait_out_brief_holds(
      samples.size(), [&](std::size_t i) { return samples[i].failure == os::StopFailure::AlreadyTraced; }, again);
  wait_out_brief_holds(
      samples.size(), [&](std::size_t i) { return samples[i].failure == os::StopFailure::InKernel; }, again,
      kBriefKernelWait);
  return samples;
}

std::vector<pid_t> lasting_tracers(const std::vector<os::ProcessIdentity>& processes, pid_t self) {
  auto tracer = [self](const os::ProcessIdentity& process) -> pid_t {
    const auto status = os::read_status(process.pid);
    if (!status || status->tracer == 0 || status->tracer == self || !os::has_pid_now(process)) return 0;
    return status->tracer;
  };
  std::vector<pid_t> tracers;
  tracers.reserve(processes.size());
  for (const auto& process : processes) tracers.push_back(tracer(process));
  wait_out_brief_holds(
      tracers.size(), [&](std::size_t i) { return tracers[i] != 0; },
      [&](std::size_t i) { tracers[i] = tracer(processes[i]); });
  return tracers;
}

std::vector<bool> lasting_kernel_waits(const std::vector<os::ProcessIdentity>& processes) {
  auto in_kernel = [](const os::ProcessIdentity& process) {
    const auto stat = os::read_stat(process.pid);
    return stat && stat->start_ticks == process.start_ticks && stat->state == 'D';
  };
  std::vector<bool> waiting;
  waiting.reserve(processes.size());
  for (const auto& process : processes) waiting.push_back(in_kernel(process));
  wait_out_brief_holds(
      waiting.size(), [&](std::size_t i) { return waiting[i]; },
      [&](std::size_t i) { waiting[i] = in_kernel(processes[i]); }, kBriefKernelWait);
  return waiting;
}

}  // namespace parastack::sampler
