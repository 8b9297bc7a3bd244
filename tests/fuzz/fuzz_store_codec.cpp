// libFuzzer target: store::decode_store on arbitrary bytes. It must never crash, and a message
// it accepts must survive a round trip: encode it again, decode that, and get the same
// message. is_store_message must say yes to every message decode_store accepts.
#include <cstddef>
#include <cstdint>
#include <variant>

#include "store/store_codec.hpp"

using namespace gossip_rdzv::store;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const StoreDecodeResult first = decode_store(data, size);
  const auto* message = std::get_if<StoreMessage>(&first);
  if (message == nullptr) return 0;
  if (!is_store_message(data, size)) __builtin_trap();
  const std::vector<std::uint8_t> again = encode(*message);
  const StoreDecodeResult second = decode_store(again.data(), again.size());
  const auto* round_trip = std::get_if<StoreMessage>(&second);
  if (round_trip == nullptr || !(*round_trip == *message)) __builtin_trap();
  return 0;
}
