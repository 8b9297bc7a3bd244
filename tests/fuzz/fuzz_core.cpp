// libFuzzer target: one protocol core fed the messages of a fuzzed byte stream (layout in
// fuzz_input.hpp). Each message that decodes is delivered with on_message; time advances by
// the step's amount and on_tick runs when the step asks for it or the core's wakeup is due.
// The core's invariants (its agreement's included) are checked after every step; a broken one
// aborts. Outgoing messages and events are drained so the queues stay empty.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.hpp"
#include "protocol/codec.hpp"

using namespace gossip_rdzv;
using protocol::Time;

namespace {

void drain(protocol::Core& core) {
  while (core.poll_send()) {
  }
  while (core.poll_event()) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  protocol::Core core(fuzz::core_config());
  Time now{1'000'000};
  core.start(now);
  core.check_invariants();
  drain(core);
  std::size_t at = 0;
  while (size - at >= fuzz::kStepHeaderBytes) {
    const std::uint8_t flags = data[at];
    now += std::chrono::milliseconds(data[at + 1]);
    std::size_t length = data[at + 2] | (static_cast<std::size_t>(data[at + 3]) << 8);
    at += fuzz::kStepHeaderBytes;
    if (length > size - at) length = size - at;
    const protocol::DecodeResult message = protocol::decode(data + at, length);
    at += length;
    if (message.ok()) {
      core.on_message(now, message.envelope());
    } else if (message.error().kind == protocol::DecodeError::Kind::version_mismatch) {
      const protocol::Header& header = *message.error().header;
      core.on_version_mismatch(now, header.sender, header.version);
    }
    core.check_invariants();
    drain(core);
    if ((flags & fuzz::kTickAfter) != 0 || core.next_wakeup() <= now) {
      core.on_tick(now);
      core.check_invariants();
      drain(core);
    }
  }
  return 0;
}
