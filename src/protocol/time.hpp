// The core's clock type: every protocol part measures time in it, and the caller (runtime or
// simulator) supplies its values, so nothing in src/protocol/ reads a clock.
#pragma once

#include <chrono>

namespace gossip_rdzv::protocol {

/// Time since an arbitrary origin chosen by the caller (the simulator starts at zero).
using Time = std::chrono::microseconds;

}  // namespace gossip_rdzv::protocol
