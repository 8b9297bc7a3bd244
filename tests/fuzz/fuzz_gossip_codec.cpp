// libFuzzer target: protocol::decode on arbitrary bytes. It must never crash, and a message it
// accepts must survive a round trip: encode it again, decode that, and get the same envelope.
#include <cstddef>
#include <cstdint>

#include "protocol/codec.hpp"

using namespace gossip_rdzv::protocol;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const DecodeResult first = decode(data, size);
  if (!first.ok()) return 0;
  const std::vector<std::uint8_t> again = encode(first.envelope());
  const DecodeResult second = decode(again);
  if (!second.ok() || !(second.envelope() == first.envelope())) __builtin_trap();
  return 0;
}
