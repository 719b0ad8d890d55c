// The wire format of a prefix tree: what a monitor sends up the monitor tree (and STATBench's
// emulated daemons send to their parents).
//
// Binary, version 1 (docs/diagnosis.md has the byte layout): "PSPT", a version byte, an encoding
// byte, a string table of node names (each name once), then the nodes in pre-order with
// LEB128 varints for counts. A rank set is a bit vector (base word, word count, little-endian
// 64-bit words) or, for the STATBench comparison, a range string ("0-3,5").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "parastack/diagnosis/prefix_tree.h"

namespace parastack::diagnosis {

inline constexpr std::uint8_t kWireVersion = 1;

enum class RankEncoding : std::uint8_t {
  BitVector = 0,    // words from the set's base word: what a monitor holds, not the whole job
  RangeString = 1,  // "0-3,5,7-63": STAT's prototype task lists, kept to measure against
};

struct EncodeOptions {
  RankEncoding encoding = RankEncoding::BitVector;
  // With BitVector: if > 0, every set is written from rank 0 to this job size, as STAT's first bit
  // vectors were (one bit per task of the job on every edge). For the benchmark only.
  Rank full_width_ranks = 0;
};

std::string serialize(const PrefixTree& tree, const EncodeOptions& options = {});

struct DecodeError {
  std::string message;
  std::size_t offset = 0;  // where in the input the problem was found
};

// Rejects anything that is not a well-formed version-1 message: bad magic, unknown version or
// encoding, truncation, an out-of-range name index, children out of order or repeated, a malformed
// range string, ranks beyond 2^32, a wrong node count, trailing bytes.
std::variant<PrefixTree, DecodeError> deserialize(std::string_view bytes, TreeOptions options = {});

}  // namespace parastack::diagnosis
