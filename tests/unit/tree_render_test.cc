#include "parastack/diagnosis/render.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace parastack::diagnosis {
namespace {

Frame app(const char* name) { return Frame{name, "app", "", false}; }
Frame mpi(const char* name) { return Frame{name, "libmpi.so", "", true}; }

// STAT's ring example: every rank waits in MPI_Waitall except rank 1, which never reached its send.
PrefixTree ring(Rank ranks) {
  PrefixTree tree;
  for (Rank r = 0; r < ranks; ++r) {
    if (r == 1) {
      tree.add(StackTrace{app("__libc_start_main"), app("main"), app("do_compute")}, r);
    } else {
      tree.add(StackTrace{app("__libc_start_main"), app("main"), mpi("MPI_Waitall"), mpi("opal_progress")}, r);
    }
  }
  return tree;
}

TEST(TreeRender, TextLooksLikeStat) {
  EXPECT_EQ(to_text(ring(8)),
            "2D trace/space: 8 ranks: 0-7, 8 samples, 2 equivalence classes\n"
            "`- __libc_start_main  [8 ranks: 0-7]\n"
            "   `- main  [8 ranks: 0-7]\n"
            "      |- MPI_Waitall  [7 ranks: 0,2-7]  <class 1>\n"
            "      `- do_compute  [1 rank: 1]  <class 2>\n"
            "equivalence classes (representative = lowest rank):\n"
            "  1. rank 0 for 7 ranks: 0,2-7; ends in __libc_start_main > main > MPI_Waitall\n"
            "  2. rank 1 for 1 rank: 1; ends in __libc_start_main > main > do_compute\n");
}

TEST(TreeRender, TextShowsSampleCountsWhenThereIsTime) {
  PrefixTree tree;
  for (int i = 0; i < 3; ++i) tree.add(StackTrace{app("main"), mpi("MPI_Recv")}, 4);
  tree.add(StackTrace{app("main")}, 4);
  const auto text = to_text(tree);
  EXPECT_NE(text.find("2D trace/time: 1 rank: 4, 4 samples"), std::string::npos) << text;
  EXPECT_NE(text.find("`- main  [1 rank: 4] x4  <class 1>"), std::string::npos) << text;
  EXPECT_NE(text.find("`- MPI_Recv  [1 rank: 4] x3  <class 1>"), std::string::npos) << text;
}

TEST(TreeRender, LongRankListsAreCut) {
  EXPECT_EQ(shorten_ranges("0,2,4,6,8,10", 7), "0,2,4,6,...");
  EXPECT_EQ(shorten_ranges("0,2,4,6,8,10", 6), "0,2,4,...");
  EXPECT_EQ(shorten_ranges("0,2,4", 7), "0,2,4");
  EXPECT_EQ(shorten_ranges("0,2,4,6,8,10", 0), "0,2,4,6,8,10");
  EXPECT_EQ(shorten_ranges("123456789", 4), "1234,...");
  PrefixTree tree;
  for (Rank r = 0; r < 100000; r += 2) tree.add(StackTrace{app("main")}, r);
  EXPECT_LT(to_text(tree).size(), 600u);
}

TEST(TreeRender, DotMarksWhereTheHighlightedRanksEnd) {
  RenderOptions options;
  options.highlight = RankSet{3};
  const auto dot = to_dot(ring(8), options);
  // Exactly one node (the call path where rank 3 ends) has the red border and names the rank.
  EXPECT_NE(dot.find("\\nleast progressed: 3\", fillcolor="), std::string::npos) << dot;
  std::size_t marks = 0;
  for (auto at = dot.find("color=\"#d00000\""); at != std::string::npos; at = dot.find("color=\"#d00000\"", at + 1))
    ++marks;
  EXPECT_EQ(marks, 1u) << dot;
  EXPECT_EQ(to_dot(ring(8)).find("#d00000"), std::string::npos);
}

TEST(TreeRender, DotColoursNodesByClass) {
  RenderOptions options;
  options.title = "job 42";
  const auto dot = to_dot(ring(8), options);
  EXPECT_EQ(dot.rfind("digraph prefix_tree {\n", 0), 0u);
  EXPECT_NE(dot.find("label=\"job 42\""), std::string::npos);
  // Shared paths grey; the two classes take the first two palette colours, nodes and edges.
  EXPECT_NE(dot.find("[label=\"main\", fillcolor=\"#e0e0e0\"]"), std::string::npos) << dot;
  EXPECT_NE(dot.find("[label=\"MPI_Waitall\", fillcolor=\"#8dd3c7\", peripheries=2]"), std::string::npos) << dot;
  EXPECT_NE(dot.find("[label=\"do_compute\", fillcolor=\"#ffffb3\"]"), std::string::npos) << dot;
  EXPECT_NE(dot.find("[label=\"7:[0,2-7]\", color=\"#8dd3c7\", penwidth=2]"), std::string::npos) << dot;
  EXPECT_NE(dot.find("class 2</td><td align=\"left\">rank 1 of 1: 1</td>"), std::string::npos) << dot;
  EXPECT_EQ(dot.substr(dot.size() - 2), "}\n");
}

TEST(TreeRender, DotEscapesNames) {
  PrefixTree tree;
  tree.add(StackTrace{app("operator\"\"_x"), app("a\\b")}, 0);
  const auto dot = to_dot(tree);
  EXPECT_NE(dot.find("label=\"operator\\\"\\\"_x\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("label=\"a\\\\b\""), std::string::npos) << dot;
}

TEST(TreeRender, JsonHasTreeAndClasses) {
  const auto j = nlohmann::json::parse(to_json(ring(8)));
  EXPECT_EQ(j["shape"], "2D trace/space");
  ASSERT_EQ(j["classes"].size(), 2u);
  EXPECT_EQ(j["classes"][0]["representative"], 0);
  EXPECT_EQ(j["classes"][0]["ranks"], "0,2-7");
  EXPECT_EQ(j["classes"][1]["paths"][0].back(), "do_compute");
  EXPECT_EQ(j["tree"]["rank_count"], 8);
  EXPECT_EQ(j["tree"]["children"][0]["children"][0]["children"][0]["mpi"], true);
}

}  // namespace
}  // namespace parastack::diagnosis
