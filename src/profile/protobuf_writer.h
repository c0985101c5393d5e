// The protobuf wire format by hand (protobuf.dev/programming-guides/encoding): varints, tags,
// fixed64 and length-delimited fields, enough to write Perfetto's trace protos without a
// protobuf library. A message is built in a ProtoBuf and nested by appending it as a
// length-delimited field of its parent; nothing here knows any schema.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace trnsim::profile {

enum class WireType : uint8_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

class ProtoBuf {
 public:
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7F) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void tag(uint32_t field, WireType type) {
    varint((static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(type));
  }
  // uint64, uint32, enum and bool fields.
  void uint_field(uint32_t field, uint64_t v) {
    tag(field, WireType::kVarint);
    varint(v);
  }
  // int64 and int32 fields: two's complement as a 64-bit varint (not zigzag: that is sint).
  void int_field(uint32_t field, int64_t v) { uint_field(field, static_cast<uint64_t>(v)); }
  void fixed64_field(uint32_t field, uint64_t v) {
    tag(field, WireType::kFixed64);
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  }
  void double_field(uint32_t field, double v) {
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    fixed64_field(field, bits);
  }
  // string, bytes and embedded-message fields.
  void bytes_field(uint32_t field, std::string_view bytes) {
    tag(field, WireType::kLengthDelimited);
    varint(bytes.size());
    out_.append(bytes);
  }
  void message_field(uint32_t field, const ProtoBuf& m) { bytes_field(field, m.out_); }
  // Bytes already encoded (a cached run of fields).
  void raw(std::string_view encoded) { out_.append(encoded); }

  const std::string& bytes() const { return out_; }
  size_t size() const { return out_.size(); }
  bool empty() const { return out_.empty(); }
  void clear() { out_.clear(); }

 private:
  std::string out_;
};

}  // namespace trnsim::profile
