// A stand-in for a test binary, for TestSupport.ATestBinaryEndedBySigintOrSigtermLeavesNoProcessBehind
// (tests/cli/test_support_test.cc): linked with the test support like every test binary, it starts
// a job as a test would (a ChildProcess), writes the job's pid and its ChildProcess's scratch
// directory (which its death leaves: the test removes it) to $PS_READY_DIR/job, and waits to be
// killed by a signal.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/mpi_job.h"

int main() {
  const char* dir = std::getenv("PS_READY_DIR");
  if (!dir) return 2;
  parastack::testing::ChildProcess job({"sleep", "1000"});
  const std::string ready = std::string(dir) + "/job";
  std::ofstream(ready + ".tmp") << job.pid() << "\n" << job.ready_dir().string() << "\n";
  std::filesystem::rename(ready + ".tmp", ready);
  while (true) ::pause();
}
