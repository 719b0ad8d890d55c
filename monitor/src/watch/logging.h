// The watchdog's log: one spdlog logger to stderr or a file, flushed at info so a killed leader
// leaves its verdict behind.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace parastack::watch {

// `prefix` starts every line ("parastack", "parastack monitor 3"). An empty `file` logs to stderr.
// Throws spdlog::spdlog_ex when the file cannot be opened or the level is unknown.
std::shared_ptr<spdlog::logger> make_logger(const std::string& file, const std::string& level,
                                            const std::string& prefix);

// A new `prefix` for every line from now on (a monitor learns its number only after MPI_Init,
// and opens its log before it, so that a file it cannot open ends it without an MPI job).
void set_log_prefix(spdlog::logger& logger, const std::string& prefix);

}  // namespace parastack::watch
