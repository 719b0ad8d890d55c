// The batch jobs' held sample trace: bounded, whole lines, the newest kept.
#include "watch/held_trace.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace parastack::watch {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(HeldTrace, UnderItsLimitItHoldsEveryLine) {
  HeldTrace trace(1000);
  for (int i = 0; i < 10; ++i) trace.add("line " + std::to_string(i));
  EXPECT_EQ(lines_of(trace.text()).size(), 10u);
  EXPECT_EQ(trace.dropped_lines(), 0u);
  EXPECT_EQ(trace.text().substr(0, 7), "line 0\n");
}

TEST(HeldTrace, PastItsLimitTheOldestGoWholeLinesAtATimeAndAreCounted) {
  const std::size_t limit = 4096;
  HeldTrace trace(limit);
  const int total = 100000;
  for (int i = 0; i < total; ++i) {
    trace.add("{\"t\":" + std::to_string(i) + "}");
    ASSERT_LE(trace.text().size(), limit) << "after line " << i;
  }
  const auto lines = lines_of(trace.text());
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(trace.text().back(), '\n');
  // Consecutive, newest last, and the count says exactly how many went before them.
  EXPECT_EQ(lines.back(), "{\"t\":" + std::to_string(total - 1) + "}");
  EXPECT_EQ(lines.front(), "{\"t\":" + std::to_string(trace.dropped_lines()) + "}");
  EXPECT_EQ(trace.dropped_lines() + lines.size(), static_cast<std::size_t>(total));
  EXPECT_GE(trace.text().size(), limit / 2 - 20) << "it keeps at least about half its limit";
}

}  // namespace
}  // namespace parastack::watch
