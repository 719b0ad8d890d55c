#include "parastack/diagnosis/serialize.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <vector>

namespace parastack::diagnosis {
namespace {

constexpr char kMagic[4] = {'P', 'S', 'P', 'T'};
constexpr std::uint8_t kFlagMpi = 1;

class Writer {
 public:
  void bytes(const void* data, std::size_t size) { out_.append(static_cast<const char*>(data), size); }
  void byte(std::uint8_t value) { out_.push_back(static_cast<char>(value)); }
  void varint(std::uint64_t value) {
    while (value >= 0x80) {
      byte(static_cast<std::uint8_t>(value | 0x80));
      value >>= 7;
    }
    byte(static_cast<std::uint8_t>(value));
  }
  void string(std::string_view text) {
    varint(text.size());
    out_.append(text);
  }
  void word(std::uint64_t value) {
    char le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<char>(value >> (8 * i));
    out_.append(le, 8);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

void write_ranks(Writer& out, const RankSet& set, const EncodeOptions& options) {
  if (options.encoding == RankEncoding::RangeString) {
    out.string(set.to_ranges());
    return;
  }
  const auto words = set.words();
  if (options.full_width_ranks == 0) {
    out.varint(set.base_word());
    out.varint(words.size());
    for (const auto w : words) out.word(w);
    return;
  }
  const std::uint64_t width = (options.full_width_ranks + RankSet::kWordBits - 1) / RankSet::kWordBits;
  const std::uint64_t end = std::max<std::uint64_t>(width, set.base_word() + words.size());
  out.varint(0);
  out.varint(end);
  for (std::uint64_t w = 0; w < end; ++w) {
    const bool inside = w >= set.base_word() && w < set.base_word() + words.size();
    out.word(inside ? words[w - set.base_word()] : 0);
  }
}

// Reads with bounds checks; the first failure is kept and every later read returns zeros.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  bool failed() const { return error_.has_value(); }
  DecodeError error() const { return *error_; }
  std::size_t offset() const { return at_; }
  std::size_t remaining() const { return in_.size() - at_; }
  void fail(std::string message) {
    if (!error_) error_ = DecodeError{std::move(message), at_};
  }

  std::uint8_t byte() {
    if (failed()) return 0;
    if (remaining() < 1) {
      fail("truncated: expected a byte");
      return 0;
    }
    return static_cast<std::uint8_t>(in_[at_++]);
  }
  std::uint64_t varint() {
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (failed()) return 0;
      if (remaining() < 1) {
        fail("truncated: varint runs past the end");
        return 0;
      }
      const auto b = static_cast<std::uint8_t>(in_[at_++]);
      value |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return value;
    }
    fail("varint longer than 64 bits");
    return 0;
  }
  std::string_view bytes(std::uint64_t count, const char* what) {
    if (failed()) return {};
    if (count > remaining()) {
      fail(std::string("truncated: ") + what + " runs past the end");
      return {};
    }
    const auto view = in_.substr(at_, count);
    at_ += count;
    return view;
  }
  std::string_view string(const char* what) { return bytes(varint(), what); }

 private:
  std::string_view in_;
  std::size_t at_ = 0;
  std::optional<DecodeError> error_;
};

RankSet read_ranks(Reader& in, RankEncoding encoding) {
  if (encoding == RankEncoding::RangeString) {
    const auto text = in.string("range string");
    if (in.failed()) return {};
    auto set = RankSet::parse_ranges(text);
    if (!set) {
      in.fail("malformed range string");
      return {};
    }
    return std::move(*set);
  }
  const std::uint64_t base = in.varint();
  const std::uint64_t count = in.varint();
  if (in.failed()) return {};
  if (base > RankSet::kMaxWords || count > RankSet::kMaxWords - base) {
    in.fail("bit vector reaches past rank 2^32");
    return {};
  }
  const auto raw = in.bytes(count * 8, "bit vector");
  if (in.failed()) return {};
  std::vector<std::uint64_t> words(count);
  for (std::size_t w = 0; w < count; ++w) {
    std::uint64_t value = 0;
    for (int i = 0; i < 8; ++i) {
      value |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(raw[w * 8 + i])) << (8 * i);
    }
    words[w] = value;
  }
  return std::move(*RankSet::from_words(base, std::move(words)));
}

}  // namespace

std::string serialize(const PrefixTree& tree, const EncodeOptions& options) {
  // Names in pre-order of first use, so the decoder can check the table as it goes.
  std::vector<NodeId> order;
  order.reserve(tree.node_count());
  std::vector<NodeId> stack{PrefixTree::kRoot};
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    order.push_back(id);
    const auto& children = tree.node(id).children;
    for (auto it = children.rbegin(); it != children.rend(); ++it) stack.push_back(*it);
  }
  std::unordered_map<std::string_view, std::uint64_t> index;
  std::vector<std::string_view> names;
  for (const NodeId id : order) {
    if (id == PrefixTree::kRoot) continue;
    const std::string_view name = tree.node(id).name;
    if (index.emplace(name, names.size()).second) names.push_back(name);
  }

  Writer out;
  out.bytes(kMagic, sizeof kMagic);
  out.byte(kWireVersion);
  out.byte(static_cast<std::uint8_t>(options.encoding));
  out.varint(names.size());
  for (const auto name : names) out.string(name);
  out.varint(order.size());
  for (const NodeId id : order) {
    const auto& node = tree.node(id);
    if (id != PrefixTree::kRoot) out.varint(index.at(node.name));
    out.byte(node.mpi ? kFlagMpi : 0);
    out.varint(node.children.size());
    out.varint(node.samples);
    write_ranks(out, node.ranks, options);
    if (!node.children.empty()) write_ranks(out, node.ends, options);
  }
  return out.take();
}

std::variant<PrefixTree, DecodeError> deserialize(std::string_view bytes, TreeOptions options) {
  Reader in(bytes);
  const auto magic = in.bytes(sizeof kMagic, "magic");
  if (in.failed() || std::memcmp(magic.data(), kMagic, sizeof kMagic) != 0) {
    return DecodeError{"not a prefix tree message (bad magic)", 0};
  }
  const auto version = in.byte();
  if (!in.failed() && version != kWireVersion) {
    in.fail("unsupported version " + std::to_string(version) + " (this build reads " + std::to_string(kWireVersion) +
            ")");
  }
  const auto encoding_byte = in.byte();
  if (!in.failed() && encoding_byte > static_cast<std::uint8_t>(RankEncoding::RangeString)) {
    in.fail("unknown rank encoding " + std::to_string(encoding_byte));
  }
  const auto encoding = static_cast<RankEncoding>(encoding_byte);
  const std::uint64_t name_count = in.varint();
  // Every name costs at least its length byte: a larger count is a lie, not a reason to allocate.
  if (!in.failed() && name_count > in.remaining()) in.fail("name count larger than the message");
  std::vector<std::string_view> names;
  if (!in.failed()) names.reserve(name_count);
  for (std::uint64_t i = 0; i < name_count && !in.failed(); ++i) names.push_back(in.string("name"));
  const std::uint64_t node_count = in.varint();
  if (!in.failed() && (node_count == 0 || node_count > in.remaining())) {
    in.fail("node count " + std::to_string(node_count) + " impossible for the message size");
  }
  if (in.failed()) return in.error();

  PrefixTree tree(options);
  std::uint64_t decoded = 0;
  // Reads one node's fields into id; returns its child count.
  auto read_node = [&](NodeId id) -> std::uint64_t {
    const auto flags = in.byte();
    if (!in.failed() && (flags & ~kFlagMpi) != 0) in.fail("unknown node flags");
    const std::uint64_t children = in.varint();
    if (!in.failed() && children > node_count - decoded) in.fail("more children than nodes");
    auto& node = tree.mutable_node(id);
    node.mpi = (flags & kFlagMpi) != 0;
    node.samples = in.varint();
    node.ranks = read_ranks(in, encoding);
    if (children > 0) node.ends = read_ranks(in, encoding);
    ++decoded;
    return children;
  };

  // Pre-order with an explicit stack, so a hostile message cannot overflow the call stack.
  struct Pending {
    NodeId id;
    std::uint64_t children_left;
    std::string_view last_child_name;
    bool has_child = false;
  };
  std::vector<Pending> stack;
  const auto root_children = read_node(PrefixTree::kRoot);
  if (root_children > 0) stack.push_back({PrefixTree::kRoot, root_children, {}});
  while (!stack.empty() && !in.failed()) {
    auto& top = stack.back();
    if (top.children_left == 0) {
      stack.pop_back();
      continue;
    }
    --top.children_left;
    const std::uint64_t name_index = in.varint();
    if (in.failed()) break;
    if (name_index >= names.size()) {
      in.fail("name index " + std::to_string(name_index) + " out of range");
      break;
    }
    const auto name = names[name_index];
    if (top.has_child && !(top.last_child_name < name)) {
      in.fail("children out of order or repeated");
      break;
    }
    top.has_child = true;
    top.last_child_name = name;
    const NodeId parent = top.id;
    const NodeId child = tree.append_child(parent, std::string(name), false);
    const auto grandchildren = read_node(child);
    if (grandchildren > 0) stack.push_back({child, grandchildren, {}});
  }
  if (!in.failed() && decoded != node_count) {
    in.fail("node count says " + std::to_string(node_count) + " but the tree has " + std::to_string(decoded));
  }
  if (!in.failed() && in.remaining() != 0) in.fail("trailing bytes after the tree");
  if (in.failed()) return in.error();
  return tree;
}

}  // namespace parastack::diagnosis
