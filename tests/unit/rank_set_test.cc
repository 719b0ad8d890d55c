#include "parastack/diagnosis/rank_set.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

namespace parastack::diagnosis {
namespace {

std::vector<Rank> sorted(const std::set<Rank>& reference) { return {reference.begin(), reference.end()}; }

// Reference ranges from a std::set, written the obvious way.
std::string reference_ranges(const std::set<Rank>& reference) {
  std::string out;
  for (auto it = reference.begin(); it != reference.end();) {
    const Rank first = *it;
    Rank last = first;
    for (++it; it != reference.end() && *it == last + 1; ++it) last = *it;
    if (!out.empty()) out += ',';
    out += std::to_string(first);
    if (last != first) out += "-" + std::to_string(last);
  }
  return out;
}

TEST(RankSet, RangesAtTheEdges) {
  EXPECT_EQ(RankSet{}.to_ranges(), "");
  EXPECT_EQ(RankSet{0}.to_ranges(), "0");
  EXPECT_EQ((RankSet{0, 1}).to_ranges(), "0-1");
  EXPECT_EQ(RankSet{63}.to_ranges(), "63");
  EXPECT_EQ(RankSet{64}.to_ranges(), "64");
  EXPECT_EQ((RankSet{63, 64}).to_ranges(), "63-64");
  EXPECT_EQ((RankSet{62, 65}).to_ranges(), "62,65");
  EXPECT_EQ(RankSet::range(0, 63).to_ranges(), "0-63");
  EXPECT_EQ(RankSet::range(0, 64).to_ranges(), "0-64");
  EXPECT_EQ(RankSet::range(64, 127).to_ranges(), "64-127");
  EXPECT_EQ(RankSet::range(1, 62).to_ranges(), "1-62");
  EXPECT_EQ(RankSet::range(5, 4).to_ranges(), "");
  // The example: every rank of a 64-rank job but 4 and 6.
  RankSet job = RankSet::range(0, 3) | RankSet{5} | RankSet::range(7, 63);
  EXPECT_EQ(job.to_ranges(), "0-3,5,7-63");
  // All ranks of a job, first and last rank of the job, single ranks around word edges.
  EXPECT_EQ(RankSet::range(0, 1048575).to_ranges(), "0-1048575");
  EXPECT_EQ((RankSet{0, 1048575}).to_ranges(), "0,1048575");
  EXPECT_EQ((RankSet{0, 2, 4}).to_ranges(), "0,2,4");
  // The largest rank there is.
  const Rank top = std::numeric_limits<Rank>::max();
  EXPECT_EQ(RankSet{top}.to_ranges(), std::to_string(top));
  EXPECT_EQ(RankSet::range(top - 1, top).to_ranges(), std::to_string(top - 1) + "-" + std::to_string(top));
  EXPECT_EQ(RankSet{top}.highest(), top);
}

TEST(RankSet, ParseRoundTripsAndAcceptsAnyOrder) {
  for (const char* text : {"", "0", "0-3,5,7-63", "63-64", "4294967295", "1,3-6,9", "0-1048575"}) {
    const auto parsed = RankSet::parse_ranges(text);
    ASSERT_TRUE(parsed.has_value()) << text;
    EXPECT_EQ(parsed->to_ranges(), text);
  }
  EXPECT_EQ(RankSet::parse_ranges("9,5,0-3,2-6")->to_ranges(), "0-6,9");
}

TEST(RankSet, ParseRejectsMalformedText) {
  for (const char* text : {"a", "1-", "-1", "3-1", "1,,2", "1 ,2", " 1", "1,", ",", "4294967296", "1-4294967296", "+1",
                           "1-2-3", "0x10", "99999999999999999999"}) {
    EXPECT_FALSE(RankSet::parse_ranges(text).has_value()) << '"' << text << '"';
  }
}

TEST(RankSet, MatchesAStdSetReference) {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 300; ++round) {
    // Ranks drawn from a window at a random place, so sets start and end anywhere in a word.
    const Rank base = static_cast<Rank>(rng() % 5000);
    const Rank width = 1 + static_cast<Rank>(rng() % 400);
    std::set<Rank> ref_a, ref_b;
    RankSet a, b;
    const int count_a = static_cast<int>(rng() % 60), count_b = static_cast<int>(rng() % 60);
    for (int i = 0; i < count_a; ++i) {
      const Rank r = base + static_cast<Rank>(rng() % width);
      ref_a.insert(r);
      a.insert(r);
    }
    for (int i = 0; i < count_b; ++i) {
      const Rank r = static_cast<Rank>(rng() % 6000);
      ref_b.insert(r);
      b.insert(r);
    }
    ASSERT_EQ(a.to_vector(), sorted(ref_a));
    ASSERT_EQ(a.size(), ref_a.size());
    ASSERT_EQ(a.empty(), ref_a.empty());
    if (!ref_a.empty()) {
      EXPECT_EQ(a.lowest(), *ref_a.begin());
      EXPECT_EQ(a.highest(), *ref_a.rbegin());
    }
    for (Rank r = 0; r < 6000; r += 7) ASSERT_EQ(a.contains(r), ref_a.count(r) == 1) << r;
    ASSERT_EQ(a.to_ranges(), reference_ranges(ref_a));
    ASSERT_EQ(*RankSet::parse_ranges(a.to_ranges()), a);

    std::set<Rank> ref_union = ref_a;
    ref_union.insert(ref_b.begin(), ref_b.end());
    const RankSet u = a | b;
    ASSERT_EQ(u.to_vector(), sorted(ref_union));
    ASSERT_EQ(u, b | a);  // same representation whichever side widens
    const bool subset = std::includes(ref_b.begin(), ref_b.end(), ref_a.begin(), ref_a.end());
    EXPECT_EQ(a.is_subset_of(b), subset);
    EXPECT_TRUE(a.is_subset_of(u));
    EXPECT_TRUE(b.is_subset_of(u));
  }
}

TEST(RankSet, RepresentationIsCanonical) {
  // Built in different orders and ways, equal sets compare and hash equal.
  RankSet forwards, backwards;
  for (Rank r = 100; r < 300; r += 3) forwards.insert(r);
  for (Rank r = 298; r >= 100; r -= 3) backwards.insert(r);
  EXPECT_EQ(forwards, backwards);
  EXPECT_EQ(RankSetHash{}(forwards), RankSetHash{}(backwards));
  const auto padded = RankSet::from_words(0, {0, 0, 0b101, 0, 0});
  ASSERT_TRUE(padded.has_value());
  EXPECT_EQ(*padded, (RankSet{128, 130}));
  EXPECT_EQ(padded->base_word(), 2u);
  EXPECT_EQ(padded->words().size(), 1u);
  EXPECT_EQ(*RankSet::from_words(7, {0, 0}), RankSet{});
  EXPECT_FALSE(RankSet::from_words(RankSet::kMaxWords, {1}).has_value());
}

TEST(RankSet, OrderIsByLowestRankThenRankList) {
  EXPECT_LT((RankSet{0, 9}), (RankSet{1}));
  EXPECT_LT((RankSet{0, 2}), (RankSet{0, 3}));
  EXPECT_LT((RankSet{0}), (RankSet{0, 3}));
  EXPECT_EQ((RankSet{4, 5}) <=> (RankSet{4, 5}), std::strong_ordering::equal);
}

}  // namespace
}  // namespace parastack::diagnosis
