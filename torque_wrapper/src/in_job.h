// `pbs_parastack --in-job ...`: runs inside the job (in_job.cc). Returns only if the user's script
// could not be started.
#pragma once

#include <string>
#include <vector>

namespace parastack::pbs {

int run_in_job(const std::vector<std::string>& args);

}  // namespace parastack::pbs
