// The progress library's page (sampler/progress_reader.h) as the diagnosis core's facts: world
// ranks, the call in words, the pending operations, the communicators. Pure.
#pragma once

#include "parastack/diagnosis/progress.h"
#include "parastack/mpi_progress/page.h"

namespace parastack::node {

diagnosis::RankProgress progress_facts(const parastack_progress_page& page);

}  // namespace parastack::node
