// ZMTP 3.0 (rfc.zeromq.org/spec/23) with the NULL mechanism, spoken by the transport itself
// over ZeroMQ's raw ZMQ_STREAM sockets, so that it sees every frame as it arrives: libzmq's
// own sockets queue the frames of an unfinished multipart message without any limit (its
// high-water mark counts complete messages, ZMQ_MAXMSGSIZE one frame), which lets one
// connection grow a node's memory without end. Here a message is exactly one frame: a frame
// marked "more", or one over the size limit, ends the connection (docs/wire-format.md,
// "Transport"). On the wire this is what ZeroMQ's DEALER and ROUTER sockets speak, so nodes
// of earlier builds, which use those sockets, interoperate.
//
//   ZmtpReader reader(4 << 20);
//   std::vector<Bytes> messages;
//   if (auto broken = reader.feed(chunk.data(), chunk.size(), messages)) close(*broken);
//   send(zmtp_handshake("DEALER")); send(zmtp_frame(payload));
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gossip_rdzv::transport {

using Bytes = std::vector<std::uint8_t>;

/// The 64-byte greeting (version 3.0, NULL mechanism, as client) followed by the READY
/// command naming `socket_type` ("DEALER" for our connections out, "ROUTER" for the inbox)
/// with an empty Identity.
Bytes zmtp_handshake(std::string_view socket_type);

/// `payload` as one final ZMTP frame (no "more" flag).
Bytes zmtp_frame(const std::uint8_t* payload, std::size_t size);
inline Bytes zmtp_frame(const Bytes& payload) {
  return zmtp_frame(payload.data(), payload.size());
}

/// Parses what one peer sends: its greeting, its READY command, then single-frame messages.
/// Holds at most one frame's bytes (max_frame_bytes + its 9-byte header) plus the unparsed
/// rest of the last chunk fed.
class ZmtpReader {
 public:
  explicit ZmtpReader(std::size_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {}

  /// Appends `size` bytes from the connection and moves every complete message into
  /// `messages`. Returns why the peer broke the rules (the caller closes the connection and
  /// forgets the reader), or nullopt.
  std::optional<std::string> feed(const std::uint8_t* data, std::size_t size,
                                  std::vector<Bytes>& messages);

  /// The peer's greeting and READY command have arrived. libzmq drops a peer that sends a
  /// message before its own READY went out, so a connection out sends none before this.
  bool handshake_done() const { return stage_ == Stage::frames; }

  /// Bytes held, waiting for the rest of a greeting, command or frame.
  std::size_t buffered() const { return buffer_.size(); }
  /// Bytes allocated for them: none between messages.
  std::size_t capacity() const { return buffer_.capacity(); }

 private:
  enum class Stage { greeting, ready, frames };
  /// Parses `stream_size` bytes at `stream` from `parsed` on, advancing `parsed` past every
  /// complete greeting, command and frame; see feed().
  std::optional<std::string> parse(const std::uint8_t* stream, std::size_t stream_size,
                                   std::size_t& parsed, std::vector<Bytes>& messages);

  std::size_t max_frame_bytes_;
  Stage stage_ = Stage::greeting;
  Bytes buffer_;  ///< the unfinished greeting, command or frame, from its first byte
};

}  // namespace gossip_rdzv::transport
