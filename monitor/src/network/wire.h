// The byte layout of the monitors' requests and replies: integers in the host's byte order,
// length-prefixed strings, nothing else. Both ends are the same build of parastack on the same
// architecture (one mpirun; x86-64 only today), so there is no versioning and no byte swapping. A
// short, long or malformed message throws WireError, which the receiver reports; a count is checked
// against the bytes left before anything is allocated for it.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

namespace parastack::network {

struct WireError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class WireWriter {
 public:
  WireWriter& u8(std::uint8_t v) { return raw(&v, 1); }
  WireWriter& u16(std::uint16_t v) { return raw(&v, sizeof v); }
  WireWriter& u32(std::uint32_t v) { return raw(&v, sizeof v); }
  WireWriter& i32(std::int32_t v) { return raw(&v, sizeof v); }
  WireWriter& u64(std::uint64_t v) { return raw(&v, sizeof v); }
  WireWriter& f64(double v) { return raw(&v, sizeof v); }
  WireWriter& str(std::string_view s) {
    u32(static_cast<std::uint32_t>(s.size()));
    bytes_.append(s);
    return *this;
  }
  const std::string& bytes() const& { return bytes_; }
  std::string bytes() && { return std::move(bytes_); }

 private:
  WireWriter& raw(const void* p, std::size_t n) {
    bytes_.append(static_cast<const char*>(p), n);
    return *this;
  }
  std::string bytes_;
};

class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : bytes_(bytes) {}
  // The reader keeps a view: a temporary message would be gone before the first read.
  explicit WireReader(std::string&& bytes) = delete;
  std::uint8_t u8() { return raw<std::uint8_t>(); }
  std::uint16_t u16() { return raw<std::uint16_t>(); }
  std::uint32_t u32() { return raw<std::uint32_t>(); }
  std::int32_t i32() { return raw<std::int32_t>(); }
  std::uint64_t u64() { return raw<std::uint64_t>(); }
  double f64() { return raw<double>(); }
  std::string str() { return std::string(view(u32())); }
  std::string_view view(std::size_t n) {
    need(n);
    auto v = bytes_.substr(at_, n);
    at_ += n;
    return v;
  }
  // A count of items of at least min_item_bytes each: more than the message can hold is corrupt
  // (and must not become a 4-billion-element allocation).
  std::uint32_t count(std::size_t min_item_bytes) {
    const std::uint32_t n = u32();
    if (min_item_bytes > 0 && n > (bytes_.size() - at_) / min_item_bytes)
      throw WireError("corrupt count in a monitor message");
    return n;
  }
  bool done() const { return at_ == bytes_.size(); }
  // The message must end here: bytes left over mean the two ends disagree on its layout.
  void finish() const {
    if (!done()) throw WireError("monitor message longer than its contents");
  }

 private:
  void need(std::size_t n) const {
    if (bytes_.size() - at_ < n) throw WireError("truncated monitor message");
  }
  template <class T>
  T raw() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  std::string_view bytes_;
  std::size_t at_ = 0;
};

}  // namespace parastack::network
