// libFuzzer target: transport::ZmtpReader, which parses the raw bytes of every inbound TCP
// connection before anything else checks them. The input's first byte chooses how the rest
// is cut into chunks (as TCP and ZeroMQ's 8 KiB reads cut a stream anywhere). It must never
// crash; a stream fed in chunks must give exactly what it gives fed whole (the same messages,
// the same refusal or none); no message exceeds the frame limit; between feeds the reader
// holds at most one unfinished greeting, command or frame, and no memory when it holds none.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "transport/zmtp.hpp"

using gossip_rdzv::transport::Bytes;
using gossip_rdzv::transport::ZmtpReader;

namespace {

constexpr std::size_t kMaxFrame = 1024;  // small, so that the limit is reached
constexpr std::size_t kMaxHeld = 9 + (std::size_t{64} << 10);  // a command of at most 64 KiB

struct Outcome {
  std::vector<Bytes> messages;
  std::optional<std::string> refusal;
};

Outcome feed_in_chunks(const std::uint8_t* data, std::size_t size, std::size_t step) {
  ZmtpReader reader(kMaxFrame);
  Outcome out;
  for (std::size_t at = 0; at < size; at += step) {
    const std::size_t n = size - at < step ? size - at : step;
    out.refusal = reader.feed(data + at, n, out.messages);
    if (out.refusal) return out;  // the transport closes the connection here
    if (reader.buffered() > kMaxHeld) __builtin_trap();
    if (reader.buffered() == 0 && reader.capacity() != 0) __builtin_trap();
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t step = std::size_t{data[0]} % 97 + 1;  // 1..97 bytes a chunk
  ++data, --size;
  const Outcome whole = feed_in_chunks(data, size, size == 0 ? 1 : size);
  const Outcome chunked = feed_in_chunks(data, size, step);
  for (const Bytes& message : whole.messages)
    if (message.size() > kMaxFrame) __builtin_trap();
  if (whole.refusal != chunked.refusal) __builtin_trap();
  if (whole.messages != chunked.messages) __builtin_trap();
  return 0;
}
