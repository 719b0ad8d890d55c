// parastack stack --pid PID: one rank's frames and state, like pstack.
#include <cstdio>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "os/proc.h"
#include "sampler/stack_sampler.h"

namespace parastack::cli {
namespace {

struct StackOptions {
  int pid = 0;
  bool json = false;
  std::string threads = "auto";
};

int run_stack(const StackOptions& options) {
  if (!os::identify(os::Pid{options.pid})) {  // not "pid 999999: exited", as if it had just ended
    std::cerr << "parastack stack: no process has pid " << options.pid << "\n";
    return kExitUsage;
  }
  sampler::StackSampler stack_sampler;
  sampler::SampleOptions sample_options;
  sample_options.frames = true;
  sample_options.threads = options.threads == "main"  ? sampler::ThreadRule::MainThread
                           : options.threads == "any" ? sampler::ThreadRule::AnyThread
                                                      : sampler::ThreadRule::Auto;
  const auto sample = stack_sampler.sample(os::Pid{options.pid}, sample_options);
  if (options.json) {
    nlohmann::json frames = nlohmann::json::array();
    for (const auto& f : sample.frames) {
      char address[32];
      std::snprintf(address, sizeof address, "0x%llx", static_cast<unsigned long long>(f.address));
      frames.push_back({{"address", address}, {"function", f.function}, {"module", f.module}});
    }
    nlohmann::json out{{"pid", options.pid},
                       {"state", sample.describe()},
                       {"threads_sampled", sample.threads_sampled},
                       {"thread_multiple", sample.thread_multiple},
                       {"stopped_us", static_cast<double>(sample.stopped.count()) / 1000},
                       {"frames", frames}};
    if (!sample.mpi_function.empty()) out["mpi_function"] = sample.mpi_function;
    if (!sample.note.empty()) out["note"] = sample.note;
    if (sample.job_control_stopped) out["stopped_by_signal"] = true;
    std::cout << out.dump(2) << "\n";
  } else {
    std::printf("pid %d: %s%s%s (stopped %.1f us)\n", options.pid, sample.describe().c_str(),
                sample.mpi_function.empty() ? "" : " in ", sample.mpi_function.c_str(),
                static_cast<double>(sample.stopped.count()) / 1000);
    if (!sample.note.empty() && !sample.failure) std::printf("note: %s\n", sample.note.c_str());
    if (sample.job_control_stopped) std::printf("note: %s\n", kStoppedBySignal);
    if (sample.failure == os::StopFailure::InKernel) std::printf("note: %s\n", kInKernel);
    for (std::size_t i = 0; i < sample.frames.size(); ++i) {
      const auto& f = sample.frames[i];
      std::printf("#%-3zu 0x%016llx %s (%s)\n", i, static_cast<unsigned long long>(f.address),
                  f.function.empty() ? "??" : f.function.c_str(), f.module.empty() ? "?" : f.module.c_str());
    }
  }
  return sample.failure ? kExitUsage : kExitOk;
}

}  // namespace

std::function<int()> add_stack_command(CLI::App& app) {
  auto options = std::make_shared<StackOptions>();
  auto* command = app.add_subcommand("stack",
                                     "Print one process's stack and its IN_MPI / OUT_MPI state, like pstack. It is "
                                     "stopped only while its registers and stack top are copied.");
  command->add_option("--pid", options->pid, "The process")
      ->required()
      ->check(whole_number_from(1, std::numeric_limits<int>::max()));
  command
      ->add_option("--threads", options->threads, "auto: every thread if the rank runs MPI_THREAD_MULTIPLE; main; any")
      ->check(CLI::IsMember({"auto", "main", "any"}))
      ->capture_default_str();
  command->add_flag("--json", options->json, "JSON output");
  return [options] { return run_stack(*options); };
}

}  // namespace parastack::cli
