#include "parastack/diagnosis/serialize.h"

#include <gtest/gtest.h>

#include <random>

namespace parastack::diagnosis {
namespace {

PrefixTree random_tree(std::mt19937_64& rng, int samples, Rank max_rank) {
  static const char* kNames[] = {"main", "solve", "exchange", "compute", "MPI_Wait", "opal_progress"};
  PrefixTree tree(TreeOptions{.expand_mpi = true});
  for (int i = 0; i < samples; ++i) {
    StackTrace trace{{"main", "app", "", false}};
    const int depth = static_cast<int>(rng() % 6);
    for (int d = 0; d < depth; ++d) {
      const auto pick = rng() % 6;
      trace.push_back({kNames[pick], "", "", pick >= 4});
    }
    tree.add(trace, static_cast<Rank>(rng() % max_rank));
  }
  return tree;
}

PrefixTree decoded(const std::string& bytes) {
  auto result = deserialize(bytes);
  if (auto* error = std::get_if<DecodeError>(&result)) {
    ADD_FAILURE() << "decode failed at " << error->offset << ": " << error->message;
    return PrefixTree{};
  }
  return std::get<PrefixTree>(std::move(result));
}

std::string decode_error(std::string_view bytes) {
  auto result = deserialize(bytes);
  const auto* error = std::get_if<DecodeError>(&result);
  return error ? error->message : "";
}

TEST(TreeSerialize, RoundTripsInEveryEncoding) {
  std::mt19937_64 rng(3);
  for (int round = 0; round < 100; ++round) {
    const auto tree = random_tree(rng, static_cast<int>(rng() % 40), round % 2 ? 100 : 5000);
    for (const EncodeOptions options :
         {EncodeOptions{}, EncodeOptions{RankEncoding::RangeString, 0}, EncodeOptions{RankEncoding::BitVector, 5000}}) {
      const auto bytes = serialize(tree, options);
      const auto back = decoded(bytes);
      ASSERT_TRUE(back == tree) << "round " << round;
      // Canonical: encoding the decoded tree gives the same bytes.
      ASSERT_EQ(serialize(back, options), bytes);
    }
  }
}

TEST(TreeSerialize, EmptyTreeRoundTrips) {
  const PrefixTree empty;
  const auto bytes = serialize(empty);
  // magic 4, version, encoding, no names, 1 node: flags, no children, no samples, empty set (2)
  EXPECT_EQ(bytes.size(), 13u);
  EXPECT_TRUE(decoded(bytes) == empty);
}

TEST(TreeSerialize, BitVectorsCoverOnlyTheMonitorsRanks) {
  // A monitor holding ranks 1,048,000-1,048,063 of a million-rank job sends one word per set.
  PrefixTree tree;
  for (Rank r = 1048000; r < 1048064; ++r) tree.add(StackTrace{{"main", "", "", false}}, r);
  EXPECT_LT(serialize(tree).size(), 60u);
  EXPECT_GT(serialize(tree, {RankEncoding::BitVector, 1048576}).size(), 2 * 131072u);
}

TEST(TreeSerialize, RejectsEveryTruncation) {
  std::mt19937_64 rng(5);
  const auto bytes = serialize(random_tree(rng, 30, 300));
  for (std::size_t length = 0; length < bytes.size(); ++length) {
    const auto message = decode_error(std::string_view(bytes).substr(0, length));
    EXPECT_FALSE(message.empty()) << "accepted a message cut to " << length << " bytes";
  }
  const auto ranges = serialize(random_tree(rng, 30, 300), {RankEncoding::RangeString, 0});
  for (std::size_t length = 0; length < ranges.size(); ++length) {
    EXPECT_FALSE(decode_error(std::string_view(ranges).substr(0, length)).empty()) << length;
  }
}

TEST(TreeSerialize, RejectsCorruptHeadersAndTrailingBytes) {
  PrefixTree tree;
  tree.add(StackTrace{{"main", "", "", false}}, 0);
  const auto good = serialize(tree);
  auto with = [&](std::size_t at, char value) {
    std::string bad = good;
    bad[at] = value;
    return decode_error(bad);
  };
  EXPECT_EQ(with(0, 'X'), "not a prefix tree message (bad magic)");
  EXPECT_EQ(with(4, 2), "unsupported version 2 (this build reads 1)");
  EXPECT_EQ(with(5, 7), "unknown rank encoding 7");
  EXPECT_EQ(decode_error(good + '\0'), "trailing bytes after the tree");
  EXPECT_EQ(decode_error(""), "not a prefix tree message (bad magic)");
}

// Messages written by hand, to reach the checks an encoder never trips.
std::string message(std::initializer_list<std::string_view> names, std::string_view nodes, char encoding = 0) {
  std::string out = "PSPT";
  out += '\x01';
  out += encoding;
  out += static_cast<char>(names.size());
  for (const auto name : names) {
    out += static_cast<char>(name.size());
    out += name;
  }
  out += nodes;
  return out;
}

TEST(TreeSerialize, RejectsInconsistentStructure) {
  using namespace std::string_literals;
  // A rank set {0}: base word 0, one word, bit 0.
  const std::string set0 = "\x00\x01\x01\x00\x00\x00\x00\x00\x00\x00"s;
  const std::string empty_set = "\x00\x00"s;
  // root (2 children, 2 samples), child "a", child "a" again: out of order.
  const std::string root2 = "\x00\x02\x02"s + set0 + empty_set;
  const std::string leaf_a = "\x00\x00\x00\x01"s + set0;
  EXPECT_EQ(decode_error(message({"a"}, "\x03"s + root2 + leaf_a + leaf_a)), "children out of order or repeated");
  // A name index past the table.
  EXPECT_EQ(decode_error(message({"a"}, "\x03"s + root2 + leaf_a + "\x05\x00\x00\x01"s + set0)),
            "name index 5 out of range");
  // The node count disagrees with the tree.
  const std::string root1 = "\x00\x01\x01"s + set0 + empty_set;
  EXPECT_EQ(decode_error(message({"a"}, "\x03"s + root1 + leaf_a)), "node count says 3 but the tree has 2");
  EXPECT_EQ(decode_error(message({"a"}, "\x00"s + root1 + leaf_a)), "node count 0 impossible for the message size");
  // Unknown flag bits.
  EXPECT_EQ(decode_error(message({"a"}, "\x02"s + root1 + "\x00\x80\x00\x01"s + set0)), "unknown node flags");
  // More children than the message has nodes.
  EXPECT_EQ(decode_error(message({"a"}, "\x02\x00\x09\x01"s + set0 + empty_set)), "more children than nodes");
  // A bit vector past rank 2^32: base word 2^26.
  EXPECT_EQ(decode_error(message({}, "\x01\x00\x00\x01\x80\x80\x80\x20\x01"s)), "bit vector reaches past rank 2^32");
  // A malformed range string.
  EXPECT_EQ(decode_error(message({}, "\x01\x00\x00\x01\x03"s + "1-x", 1)), "malformed range string");
  // A name count larger than the message.
  EXPECT_EQ(decode_error("PSPT\x01\x00\x7f"s), "name count larger than the message");
  // A varint that never ends.
  EXPECT_EQ(decode_error("PSPT\x01\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"s), "varint longer than 64 bits");
  // And the hand-written good message is accepted, so the checks above are the only problem.
  const auto ok = deserialize(message({"a"}, "\x02"s + root1 + leaf_a));
  ASSERT_TRUE(std::holds_alternative<PrefixTree>(ok));
  EXPECT_EQ(std::get<PrefixTree>(ok).node(1).name, "a");
}

TEST(TreeSerialize, RandomCorruptionNeverCrashes) {
  std::mt19937_64 rng(9);
  const auto good = serialize(random_tree(rng, 40, 1000));
  int rejected = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string bad = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i) bad[rng() % bad.size()] = static_cast<char>(rng());
    auto result = deserialize(bad);  // must return, whatever the bytes
    if (std::holds_alternative<DecodeError>(result)) ++rejected;
  }
  EXPECT_GT(rejected, 1000);
}

}  // namespace
}  // namespace parastack::diagnosis
