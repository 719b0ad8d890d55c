#include "parastack/stats/trace.h"

#include <gtest/gtest.h>

namespace parastack::stats {
namespace {

TEST(Trace, RoundTrip) {
  const Observation o{12.5, 1, 3, 10};
  const auto parsed = parse_trace_line(format_trace_line(o));
  ASSERT_TRUE(std::holds_alternative<Observation>(parsed));
  const auto& back = std::get<Observation>(parsed);
  EXPECT_DOUBLE_EQ(back.t, 12.5);
  EXPECT_EQ(back.set, 1);
  EXPECT_EQ(back.n_out, 3);
  EXPECT_EQ(back.n, 10);
}

TEST(Trace, ExtraFieldsAreIgnored) {
  const auto parsed = parse_trace_line(R"({"t":1,"set":0,"n_out":2,"n":10,"ranks":[4,8],"note":"x"})");
  ASSERT_TRUE(std::holds_alternative<Observation>(parsed));
  EXPECT_EQ(std::get<Observation>(parsed).n_out, 2);
}

TEST(Trace, BadLinesSayWhatIsWrong) {
  auto error = [](std::string_view line) {
    const auto parsed = parse_trace_line(line);
    return std::holds_alternative<TraceError>(parsed) ? std::get<TraceError>(parsed).message : "";
  };
  EXPECT_EQ(error("{"), "not valid JSON");
  EXPECT_EQ(error("[1,2]"), "not a JSON object");
  EXPECT_EQ(error(R"({"t":1,"set":0,"n":10})"), "missing field \"n_out\"");
  EXPECT_EQ(error(R"({"t":"now","set":0,"n_out":1,"n":10})"), "field \"t\" must be a finite number");
  EXPECT_EQ(error(R"({"t":1,"set":0.5,"n_out":1,"n":10})"), "field \"set\" must be an integer");
  EXPECT_EQ(error(R"({"t":1,"set":0,"n_out":11,"n":10})"), "needs 0 <= n_out <= n");
}

}  // namespace
}  // namespace parastack::stats
