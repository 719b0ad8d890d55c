#include "parastack/diagnosis/rank_set.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <limits>

namespace parastack::diagnosis {

RankSet::RankSet(std::initializer_list<Rank> ranks) {
  for (Rank rank : ranks) insert(rank);
}

RankSet RankSet::range(Rank first, Rank last) {
  RankSet set;
  if (last < first) return set;
  const std::uint64_t first_word = first / kWordBits, last_word = last / kWordBits;
  set.base_word_ = first_word;
  set.words_.assign(last_word - first_word + 1, ~std::uint64_t{0});
  set.words_.front() &= ~std::uint64_t{0} << (first % kWordBits);
  set.words_.back() &= ~std::uint64_t{0} >> (kWordBits - 1 - last % kWordBits);
  return set;
}

std::optional<RankSet> RankSet::from_words(std::uint64_t base_word, std::vector<std::uint64_t> words) {
  if (base_word > kMaxWords || words.size() > kMaxWords - base_word) return std::nullopt;
  RankSet set;
  set.base_word_ = base_word;
  set.words_ = std::move(words);
  set.trim();
  return set;
}

void RankSet::trim() {
  const auto first = std::find_if(words_.begin(), words_.end(), [](auto w) { return w != 0; });
  if (first == words_.end()) {
    words_.clear();
    base_word_ = 0;
    return;
  }
  auto last = words_.end();
  while (*(last - 1) == 0) --last;
  words_.erase(last, words_.end());
  base_word_ += static_cast<std::uint64_t>(first - words_.begin());
  words_.erase(words_.begin(), first);
}

// Makes the vector cover words [first_word, end_word) besides what it covers already.
void RankSet::widen(std::uint64_t first_word, std::uint64_t end_word) {
  if (words_.empty()) {
    base_word_ = first_word;
    words_.assign(end_word - first_word, 0);
    return;
  }
  if (first_word < base_word_) {
    words_.insert(words_.begin(), base_word_ - first_word, 0);
    base_word_ = first_word;
  }
  // resize grows the capacity geometrically, so merging monitors in rank order stays linear.
  if (end_word > base_word_ + words_.size()) words_.resize(end_word - base_word_, 0);
}

void RankSet::insert(Rank rank) {
  const std::uint64_t word = rank / kWordBits;
  widen(word, word + 1);
  words_[word - base_word_] |= std::uint64_t{1} << (rank % kWordBits);
}

bool RankSet::contains(Rank rank) const {
  const std::uint64_t word = rank / kWordBits;
  if (word < base_word_ || word >= base_word_ + words_.size()) return false;
  return (words_[word - base_word_] >> (rank % kWordBits) & 1) != 0;
}

std::size_t RankSet::size() const {
  std::size_t count = 0;
  for (auto w : words_) count += static_cast<std::size_t>(__builtin_popcountll(w));
  return count;
}

Rank RankSet::lowest() const {
  return static_cast<Rank>(base_word_ * kWordBits + static_cast<std::uint64_t>(__builtin_ctzll(words_.front())));
}

Rank RankSet::highest() const {
  return static_cast<Rank>((base_word_ + words_.size() - 1) * kWordBits + kWordBits - 1 -
                           static_cast<std::uint64_t>(__builtin_clzll(words_.back())));
}

RankSet& RankSet::operator|=(const RankSet& other) {
  if (other.words_.empty()) return *this;
  if (words_.empty()) return *this = other;
  widen(other.base_word_, other.base_word_ + other.words_.size());
  // Both sets are trimmed, so the union is too: its end words come from one of them.
  std::uint64_t* out = words_.data() + (other.base_word_ - base_word_);
  for (std::size_t i = 0; i < other.words_.size(); ++i) out[i] |= other.words_[i];
  return *this;
}

bool RankSet::is_subset_of(const RankSet& other) const {
  for (std::size_t i = 0; i < words_.size(); ++i) {
    const std::uint64_t word = base_word_ + i;
    const std::uint64_t theirs = word >= other.base_word_ && word < other.base_word_ + other.words_.size()
                                     ? other.words_[word - other.base_word_]
                                     : 0;
    if ((words_[i] & ~theirs) != 0) return false;
  }
  return true;
}

std::vector<Rank> RankSet::to_vector() const {
  std::vector<Rank> ranks;
  ranks.reserve(size());
  for_each([&ranks](Rank r) { ranks.push_back(r); });
  return ranks;
}

std::string RankSet::to_ranges() const {
  std::string out;
  char buffer[32];
  auto append = [&](std::uint64_t value) {
    const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
    out.append(buffer, end);
  };
  // Walks runs of one bits word by word, so a long run costs one step per word, not per rank.
  const std::uint64_t end_bit = (base_word_ + words_.size()) * kWordBits;
  auto bit_at = [&](std::uint64_t bit) { return (words_[bit / kWordBits - base_word_] >> (bit % kWordBits) & 1) != 0; };
  auto next_with = [&](std::uint64_t bit, bool value) {
    while (bit < end_bit) {
      const std::uint64_t word = words_[bit / kWordBits - base_word_];
      const std::uint64_t masked = (value ? word : ~word) >> (bit % kWordBits);
      if (masked != 0) return bit + static_cast<std::uint64_t>(__builtin_ctzll(masked));
      bit = (bit / kWordBits + 1) * kWordBits;
    }
    return end_bit;
  };
  if (words_.empty()) return out;
  std::uint64_t bit = base_word_ * kWordBits;
  if (!bit_at(bit)) bit = next_with(bit, true);
  while (bit < end_bit) {
    const std::uint64_t run_end = next_with(bit, false);  // one past the run
    if (!out.empty()) out += ',';
    append(bit);
    if (run_end - 1 > bit) {
      out += '-';
      append(run_end - 1);
    }
    bit = next_with(run_end, true);
  }
  return out;
}

std::optional<RankSet> RankSet::parse_ranges(std::string_view text) {
  RankSet set;
  if (text.empty()) return set;
  const char* p = text.data();
  const char* const end = text.data() + text.size();
  auto number = [&](std::uint64_t& value) {
    if (p == end || *p < '0' || *p > '9') return false;
    const auto [next, error] = std::from_chars(p, end, value);
    if (error != std::errc{} || value > std::numeric_limits<Rank>::max()) return false;
    p = next;
    return true;
  };
  while (true) {
    std::uint64_t first = 0, last = 0;
    if (!number(first)) return std::nullopt;
    last = first;
    if (p != end && *p == '-') {
      ++p;
      if (!number(last) || last < first) return std::nullopt;
    }
    if (first == last) {
      set.insert(static_cast<Rank>(first));
    } else {
      set |= range(static_cast<Rank>(first), static_cast<Rank>(last));
    }
    if (p == end) return set;
    if (*p != ',') return std::nullopt;
    ++p;
  }
}

std::strong_ordering operator<=>(const RankSet& a, const RankSet& b) {
  if (a == b) return std::strong_ordering::equal;
  const auto va = a.to_vector(), vb = b.to_vector();
  return std::lexicographical_compare_three_way(va.begin(), va.end(), vb.begin(), vb.end());
}

std::size_t RankSetHash::operator()(const RankSet& set) const {
  // FNV-1a over the base and the words; the representation is canonical (trimmed).
  std::uint64_t h = 1469598103934665603ULL ^ set.base_word();
  for (auto w : set.words()) h = (h ^ w) * 1099511628211ULL;
  return static_cast<std::size_t>(h ^ (h >> 29));
}

}  // namespace parastack::diagnosis
