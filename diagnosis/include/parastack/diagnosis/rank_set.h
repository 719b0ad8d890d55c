// A set of MPI ranks as a dense bit vector, the edge label of a call-graph prefix tree.
//
// STATBench (§4.2.2) found that task lists kept as range strings ("1,3-6,9") stop STAT from
// scaling: at 32,768 tasks one edge label grew to 75 KB and merging meant parsing and printing
// them. A bit vector costs one bit per rank and merges with a bitwise OR. We go one step further
// than STAT's full-job vectors: the vector starts at a base word, so a monitor's set covers only
// the ranks that monitor holds and is widened when merged with another. That keeps a 1,024-rank
// monitor's message small in a 1,048,576-rank job, where a full-width vector per edge would not be.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace parastack::diagnosis {

// An MPI rank (MPI_COMM_WORLD). Plain integer: rank sets are the currency here, a rank is an index.
using Rank = std::uint32_t;

class RankSet {
 public:
  static constexpr std::size_t kWordBits = 64;
  // Ranks are below 2^32; a vector never needs more words than that.
  static constexpr std::uint64_t kMaxWords = (std::uint64_t{1} << 32) / kWordBits;

  RankSet() = default;
  RankSet(std::initializer_list<Rank> ranks);

  // {first, ..., last} (inclusive); empty if last < first.
  static RankSet range(Rank first, Rank last);
  // From raw words starting at word index base_word; trims zero words at either end. Returns
  // nullopt if the words would reach past the largest rank.
  static std::optional<RankSet> from_words(std::uint64_t base_word, std::vector<std::uint64_t> words);

  void insert(Rank rank);
  bool contains(Rank rank) const;
  bool empty() const { return words_.empty(); }
  std::size_t size() const;  // population count
  // The lowest and highest rank. Precondition: !empty().
  Rank lowest() const;
  Rank highest() const;

  // Union, by OR; widens this set's vector to cover other's.
  RankSet& operator|=(const RankSet& other);
  friend RankSet operator|(RankSet a, const RankSet& b) { return a |= b; }
  // Whether every rank of this set is in other.
  bool is_subset_of(const RankSet& other) const;

  std::vector<Rank> to_vector() const;
  template <typename F>
  void for_each(F&& visit) const {
    for (std::size_t w = 0; w < words_.size(); ++w) {
      for (std::uint64_t bits = words_[w]; bits != 0; bits &= bits - 1) {
        visit(static_cast<Rank>((base_word_ + w) * kWordBits + static_cast<std::size_t>(__builtin_ctzll(bits))));
      }
    }
  }

  // "0-3,5,7-63"; "" for the empty set.
  std::string to_ranges() const;
  // The inverse of to_ranges. Accepts ranges in any order and overlapping; rejects anything else
  // (spaces, signs, a-b with b < a, ranks >= 2^32) with nullopt.
  static std::optional<RankSet> parse_ranges(std::string_view text);

  // The representation: words_[i] holds ranks (base_word + i) * 64 ... + 63. Never has a zero word
  // at either end, so equal sets have equal representations.
  std::uint64_t base_word() const { return base_word_; }
  std::span<const std::uint64_t> words() const { return words_; }

  bool operator==(const RankSet&) const = default;
  // A total order for stable output: by lowest rank, then by the sorted rank lists.
  friend std::strong_ordering operator<=>(const RankSet& a, const RankSet& b);

 private:
  void widen(std::uint64_t first_word, std::uint64_t end_word);
  void trim();

  std::uint64_t base_word_ = 0;
  std::vector<std::uint64_t> words_;
};

// For unordered containers keyed by rank set (grouping equivalence classes).
struct RankSetHash {
  std::size_t operator()(const RankSet& set) const;
};

}  // namespace parastack::diagnosis
