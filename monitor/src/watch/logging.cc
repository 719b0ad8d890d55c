#include "watch/logging.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace parastack::watch {

std::shared_ptr<spdlog::logger> make_logger(const std::string& file, const std::string& level,
                                            const std::string& prefix) {
  std::shared_ptr<spdlog::logger> logger;
  if (file.empty()) {
    logger = std::make_shared<spdlog::logger>("parastack", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  } else {
    logger = std::make_shared<spdlog::logger>("parastack", std::make_shared<spdlog::sinks::basic_file_sink_mt>(file));
  }
  set_log_prefix(*logger, prefix);
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  return logger;
}

void set_log_prefix(spdlog::logger& logger, const std::string& prefix) {
  logger.set_pattern(prefix + " %H:%M:%S.%e %l: %v");
}

}  // namespace parastack::watch
