// A batch job's sample trace, held in memory until a hang (a healthy job's directory gets no file)
// and bounded: the monitor's memory is charged to the job (its cgroup), and at about 100 bytes a
// line and up to ten lines a second an unbounded trace of a week-long job would take hundreds of
// megabytes. Past the limit the oldest half is dropped: what a hang's reader wants most is the
// end, the run that led to the verdict.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace parastack::watch {

class HeldTrace {
 public:
  static constexpr std::size_t kDefaultLimit = std::size_t{64} << 20;
  explicit HeldTrace(std::size_t limit_bytes = kDefaultLimit) : limit_(limit_bytes) {}

  // One line, without its newline.
  void add(std::string_view line) {
    text_.append(line);
    text_.push_back('\n');
    if (text_.size() <= limit_) return;
    // Cut at a line's end at or past the middle: whole lines only.
    const auto cut = text_.find('\n', text_.size() / 2);
    for (std::size_t at = 0; at <= cut; at = text_.find('\n', at) + 1) ++dropped_lines_;
    text_.erase(0, cut + 1);
  }
  const std::string& text() const { return text_; }
  // Lines dropped from the front so far (0: the trace is whole).
  std::size_t dropped_lines() const { return dropped_lines_; }

 private:
  std::size_t limit_;
  std::string text_;
  std::size_t dropped_lines_ = 0;
};

}  // namespace parastack::watch
