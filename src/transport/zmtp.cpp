#include "transport/zmtp.hpp"

#include <algorithm>
#include <cstring>

namespace gossip_rdzv::transport {
namespace {

constexpr std::size_t kGreetingBytes = 64;
constexpr std::size_t kMechanismAt = 12;
constexpr std::size_t kMechanismBytes = 20;
constexpr std::uint8_t kMore = 0x01;
constexpr std::uint8_t kLong = 0x02;
constexpr std::uint8_t kCommand = 0x04;
// READY carries a few properties; PING and the like are smaller still.
constexpr std::size_t kMaxCommandBytes = 64 * 1024;

void append_property(Bytes& out, std::string_view name, std::string_view value) {
  out.push_back(static_cast<std::uint8_t>(name.size()));
  out.insert(out.end(), name.begin(), name.end());
  const auto length = static_cast<std::uint32_t>(value.size());
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back((length >> shift) & 0xffu);
  out.insert(out.end(), value.begin(), value.end());
}

void append_frame(Bytes& out, std::uint8_t flags, const std::uint8_t* body, std::size_t size) {
  if (size > 255) {
    out.push_back(flags | kLong);
    for (int shift = 56; shift >= 0; shift -= 8) {
      out.push_back(static_cast<std::uint8_t>((static_cast<std::uint64_t>(size) >> shift) & 0xffu));
    }
  } else {
    out.push_back(flags);
    out.push_back(static_cast<std::uint8_t>(size));
  }
  out.insert(out.end(), body, body + size);
}

}  // namespace

Bytes zmtp_handshake(std::string_view socket_type) {
  Bytes out(kGreetingBytes, 0);
  out[0] = 0xff;  // signature: 0xff, 8 bytes of padding, 0x7f
  out[8] = 0x01;
  out[9] = 0x7f;
  out[10] = 3;  // version 3.0
  out[11] = 0;
  std::memcpy(out.data() + kMechanismAt, "NULL", 4);
  // out[32] = 0: as-server false; the rest is filler.
  // The command name with its length byte, written in one piece (GCC 12 at -O1 under TSan
  // misreads a push_back followed by an insert as writing past the first byte).
  Bytes ready{5, 'R', 'E', 'A', 'D', 'Y'};
  append_property(ready, "Socket-Type", socket_type);
  append_property(ready, "Identity", "");
  append_frame(out, kCommand, ready.data(), ready.size());
  return out;
}

Bytes zmtp_frame(const std::uint8_t* payload, std::size_t size) {
  Bytes out;
  out.reserve(size + 9);
  append_frame(out, 0, payload, size);
  return out;
}

// A connection's reader holds memory only while a message is unfinished: what arrives
// whole is parsed straight from the chunk, and the buffer is released once everything in it
// is parsed. A node has a reader per connection (a hundred or more in a large job), and
// each would otherwise keep the capacity of the largest chunk or message it ever saw.
std::optional<std::string> ZmtpReader::feed(const std::uint8_t* data, std::size_t size,
                                            std::vector<Bytes>& messages) {
  if (buffer_.empty()) {
    std::size_t used = 0;
    auto broken = parse(data, size, used, messages);
    if (!broken && used < size) buffer_.assign(data + used, data + size);
    return broken;
  }
  buffer_.insert(buffer_.end(), data, data + size);
  std::size_t used = 0;
  auto broken = parse(buffer_.data(), buffer_.size(), used, messages);
  if (used == buffer_.size()) {
    Bytes().swap(buffer_);
  } else {
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(used));
  }
  return broken;
}

std::optional<std::string> ZmtpReader::parse(const std::uint8_t* stream, std::size_t stream_size,
                                             std::size_t& parsed, std::vector<Bytes>& messages) {
  while (true) {
    const std::uint8_t* at = stream + parsed;
    const std::size_t left = stream_size - parsed;
    if (stage_ == Stage::greeting) {
      // The signature is checked as soon as it is there: anything else is not ZMTP.
      if (left >= 1 && at[0] != 0xff) return "not a ZeroMQ peer (bad greeting)";
      if (left >= 10 && (at[9] & 0x01) == 0) return "not a ZeroMQ peer (bad greeting)";
      if (left >= 11 && at[10] < 3) return "ZMTP version before 3.0";
      if (left < kGreetingBytes) return std::nullopt;
      const char null_mechanism[kMechanismBytes] = "NULL";
      if (std::memcmp(at + kMechanismAt, null_mechanism, kMechanismBytes) != 0) {
        return "security mechanism other than NULL";
      }
      parsed += kGreetingBytes;
      stage_ = Stage::ready;
      continue;
    }
    if (left < 2) return std::nullopt;
    const std::uint8_t flags = at[0];
    if ((flags & ~(kMore | kLong | kCommand)) != 0) return "frame with unknown flags";
    const std::size_t header = (flags & kLong) != 0 ? 9 : 2;
    if (left < header) return std::nullopt;
    std::uint64_t length = at[1];
    if (header == 9) {
      length = 0;
      for (std::size_t i = 1; i < 9; ++i) length = (length << 8) | at[i];
    }
    const bool command = (flags & kCommand) != 0;
    if (command && length > kMaxCommandBytes) return "command frame over 64 KiB";
    if (!command && length > max_frame_bytes_) {
      return "message of " + std::to_string(length) + " bytes, the limit is " +
             std::to_string(max_frame_bytes_);
    }
    // Refused when its flag arrives, before any of its bytes are held.
    if (!command && (flags & kMore) != 0) return "multipart message (a frame marked 'more')";
    if (stage_ == Stage::ready && !command) return "message before the READY command";
    if (left - header < length) return std::nullopt;
    const std::uint8_t* body = at + header;
    const auto size = static_cast<std::size_t>(length);
    parsed += header + size;
    if (stage_ == Stage::ready) {
      const std::string_view ready = "READY";
      if (size < 1 + ready.size() || body[0] != ready.size() ||
          std::memcmp(body + 1, ready.data(), ready.size()) != 0) {
        return "handshake without a READY command";
      }
      stage_ = Stage::frames;
      continue;
    }
    if (!command) messages.emplace_back(body, body + size);
    // Commands after the handshake (PING, ...) need nothing from a peer without heartbeats.
  }
}

}  // namespace gossip_rdzv::transport
