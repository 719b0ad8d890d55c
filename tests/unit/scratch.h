// A private directory for one test on the real file system (mkdtemp), removed with what is in it.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace parastack::testing {

class Scratch {
 public:
  explicit Scratch(const std::string& name = "parastack-test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (name + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data())) path_ = pattern;
  }
  ~Scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  const std::filesystem::path& path() const { return path_; }  // empty if mkdtemp failed

 private:
  std::filesystem::path path_;
};

}  // namespace parastack::testing
