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

TEST(Trace, StasisEvidenceRoundTripsAndOldTracesStillParse) {
  const Observation o{3.25, 0, 1, 4, 0xfedcba9876543210ULL, true};
  const auto line = format_trace_line(o);
  EXPECT_NE(line.find(R"("path":"fedcba9876543210")"), std::string::npos) << line;
  const auto back = std::get<Observation>(parse_trace_line(line));
  EXPECT_EQ(back.path, 0xfedcba9876543210ULL);
  EXPECT_TRUE(back.polling);
  // A line of the old format: no stasis evidence.
  const auto old = std::get<Observation>(parse_trace_line(R"({"t":1,"set":0,"n_out":2,"n":10})"));
  EXPECT_EQ(old.path, 0u);
  EXPECT_FALSE(old.polling);
  EXPECT_EQ(format_trace_line(old).find("path"), std::string::npos);
}

TEST(Trace, ActiveSignaturesRoundTripAndOldTracesGetThemFromThePath) {
  Observation o{3.25, 0, 2, 4, 0x1234, true, kEveryoneWaiting, 0};
  auto back = std::get<Observation>(parse_trace_line(format_trace_line(o)));
  EXPECT_EQ(back.active_path, kEveryoneWaiting);
  o.active_path = 0xabc;
  o.active_out = 1;
  o.active_ranks = 2;
  back = std::get<Observation>(parse_trace_line(format_trace_line(o)));
  EXPECT_EQ(back.active_path, 0xabcu);
  EXPECT_EQ(back.active_out, 1);
  EXPECT_EQ(back.active_ranks, 2);
  EXPECT_FALSE(back.counted);
  EXPECT_EQ(format_trace_line(o).find("counted"), std::string::npos);
  o.counted = true;  // the progress library's counts
  back = std::get<Observation>(parse_trace_line(format_trace_line(o)));
  EXPECT_TRUE(back.counted);
  EXPECT_TRUE(std::holds_alternative<TraceError>(
      parse_trace_line(R"({"t":1,"set":0,"n_out":1,"n":4,"path":"ff","active":"ff","counted":1})")));
  EXPECT_FALSE(back.progressed);
  EXPECT_EQ(format_trace_line(o).find("progressed"), std::string::npos);
  o.progressed = true;  // a rank completed an MPI call
  back = std::get<Observation>(parse_trace_line(format_trace_line(o)));
  EXPECT_TRUE(back.progressed);
  EXPECT_TRUE(
      std::holds_alternative<TraceError>(parse_trace_line(R"({"t":1,"set":0,"n_out":1,"n":4,"progressed":"yes"})")));
  o.progressed = false;
  o.counted = false;
  o.active_path = 0;  // too few ranks known: written as 0, not guessed from the path on replay
  o.active_out = 0;
  back = std::get<Observation>(parse_trace_line(format_trace_line(o)));
  EXPECT_EQ(back.active_path, 0u);
  // Before active signatures: nobody polling means every known rank was active.
  back = std::get<Observation>(parse_trace_line(R"({"t":1,"set":0,"n_out":1,"n":4,"path":"ff"})"));
  EXPECT_EQ(back.active_path, 0xffu);
  EXPECT_EQ(back.active_out, 1);
  back = std::get<Observation>(parse_trace_line(R"({"t":1,"set":0,"n_out":1,"n":4,"path":"ff","polling":true})"));
  EXPECT_EQ(back.active_path, 0u);
  EXPECT_TRUE(std::holds_alternative<TraceError>(
      parse_trace_line(R"({"t":1,"set":0,"n_out":1,"n":4,"path":"ff","active":"ff","active_out":2})")));
  EXPECT_TRUE(std::holds_alternative<TraceError>(parse_trace_line(
      R"({"t":1,"set":0,"n_out":1,"n":4,"path":"ff","active":"ff","active_out":1,"active_ranks":0})")));
}

// Ranks in MPI_Finalize (Observation::finished) and the job's serial end: written only when there
// are some, read back, absent in traces written before them, and never more than the set has.
TEST(Trace, FinishedRanksAndTheSerialEndRoundTripAndOldTracesHaveNone) {
  Observation o{3.25, 0, 0, 4, 0, false, 0xabc, 0, 1};
  EXPECT_EQ(format_trace_line(o).find("finished"), std::string::npos);
  EXPECT_EQ(format_trace_line(o).find("serial_end"), std::string::npos);
  o.finished = 3;
  auto back = std::get<Observation>(parse_trace_line(format_trace_line(o)));
  EXPECT_EQ(back.finished, 3);
  EXPECT_FALSE(back.serial_end);
  EXPECT_EQ(back.active_ranks, 1);
  o = Observation{3.35, 0, 1, 4};  // rank 0 at work, the others finished: no signature at all
  o.finished = 3;
  o.serial_end = true;
  back = std::get<Observation>(parse_trace_line(format_trace_line(o)));
  EXPECT_EQ(back.finished, 3);
  EXPECT_TRUE(back.serial_end);
  const auto old =
      std::get<Observation>(parse_trace_line(R"({"t":1,"set":0,"n_out":0,"n":4,"active":"abc","active_ranks":1})"));
  EXPECT_EQ(old.finished, 0);
  EXPECT_FALSE(old.serial_end);
  // Once the watchdog has found the job in its serial end, a set without finished ranks (a
  // straggler's) is in it too.
  EXPECT_TRUE(
      std::get<Observation>(parse_trace_line(R"({"t":1,"set":1,"n_out":1,"n":4,"serial_end":true})")).serial_end);
  for (const char* bad :
       {R"({"t":1,"set":0,"n_out":0,"n":4,"active":"abc","active_ranks":1,"finished":4})",
        R"({"t":1,"set":0,"n_out":0,"n":4,"finished":-1})", R"({"t":1,"set":0,"n_out":0,"n":4,"finished":"3"})",
        R"({"t":1,"set":0,"n_out":1,"n":4,"finished":3,"serial_end":1})"}) {
    EXPECT_TRUE(std::holds_alternative<TraceError>(parse_trace_line(bad))) << bad;
  }
}

// Busy-waiting ranks seen outside MPI: written only when there were some, read back, never more
// than the ranks outside MPI that are not active.
TEST(Trace, WaitingRanksOutsideMpiRoundTripAndOldTracesHaveNone) {
  Observation o{3.25, 0, 2, 4, 0x9, true, 0xabc, 1, 1};
  EXPECT_EQ(format_trace_line(o).find("waiting_out"), std::string::npos);
  o.waiting_out = 1;
  EXPECT_EQ(std::get<Observation>(parse_trace_line(format_trace_line(o))).waiting_out, 1);
  EXPECT_EQ(std::get<Observation>(parse_trace_line(R"({"t":1,"set":0,"n_out":2,"n":4})")).waiting_out, 0);
  for (const char* bad : {R"({"t":1,"set":0,"n_out":2,"n":4,"active":"abc","active_out":1,"waiting_out":2})",
                          R"({"t":1,"set":0,"n_out":2,"n":4,"waiting_out":-1})",
                          R"({"t":1,"set":0,"n_out":2,"n":4,"waiting_out":"1"})"}) {
    EXPECT_TRUE(std::holds_alternative<TraceError>(parse_trace_line(bad))) << bad;
  }
}

// Ranks in MPI at work on another thread: written only when there were some, read back, never more
// than the ranks in MPI.
TEST(Trace, RanksAtWorkBesideMpiRoundTripAndOldTracesHaveNone) {
  Observation o{3.25, 0, 1, 4, 0x9, false, 0xabc, 1, 4};
  EXPECT_EQ(format_trace_line(o).find("at_work_outside"), std::string::npos);
  o.at_work_outside = 3;
  EXPECT_EQ(std::get<Observation>(parse_trace_line(format_trace_line(o))).at_work_outside, 3);
  EXPECT_EQ(std::get<Observation>(parse_trace_line(R"({"t":1,"set":0,"n_out":1,"n":4})")).at_work_outside, 0);
  for (const char* bad : {R"({"t":1,"set":0,"n_out":1,"n":4,"at_work_outside":4})",
                          R"({"t":1,"set":0,"n_out":1,"n":4,"at_work_outside":-1})",
                          R"({"t":1,"set":0,"n_out":1,"n":4,"at_work_outside":true})"}) {
    EXPECT_TRUE(std::holds_alternative<TraceError>(parse_trace_line(bad))) << bad;
  }
}

// How late an observation came: written only when it was, read back, and never negative.
TEST(Trace, LatenessRoundTripsAndOldTracesAreOnTime) {
  Observation o{3.25, 0, 1, 4};
  EXPECT_EQ(format_trace_line(o).find("late_by"), std::string::npos);
  o.late_by = 20.5;
  EXPECT_EQ(std::get<Observation>(parse_trace_line(format_trace_line(o))).late_by, 20.5);
  EXPECT_EQ(std::get<Observation>(parse_trace_line(R"({"t":1,"set":0,"n_out":1,"n":4})")).late_by, 0);
  EXPECT_TRUE(std::holds_alternative<TraceError>(parse_trace_line(R"({"t":1,"set":0,"n_out":1,"n":4,"late_by":-1})")));
  EXPECT_TRUE(
      std::holds_alternative<TraceError>(parse_trace_line(R"({"t":1,"set":0,"n_out":1,"n":4,"late_by":"late"})")));
}

TEST(Trace, ABadPathIsRefused) {
  EXPECT_TRUE(std::holds_alternative<TraceError>(parse_trace_line(R"({"t":1,"set":0,"n_out":2,"n":10,"path":12})")));
  EXPECT_TRUE(std::holds_alternative<TraceError>(parse_trace_line(R"({"t":1,"set":0,"n_out":2,"n":10,"path":"xyz"})")));
  EXPECT_TRUE(std::holds_alternative<TraceError>(
      parse_trace_line(R"({"t":1,"set":0,"n_out":2,"n":10,"path":"11112222333344445"})")));
  EXPECT_TRUE(std::holds_alternative<TraceError>(parse_trace_line(R"({"t":1,"set":0,"n_out":2,"n":10,"polling":1})")));
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
