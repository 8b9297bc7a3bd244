#include "suspicion.hpp"

#include <algorithm>
#include <cmath>

namespace gossip_rdzv::protocol {

Time SuspicionClock::deadline(std::uint32_t confirmations) const {
  if (expected == 0 || confirmations >= expected || max <= min) return start + min;
  const double fraction = std::log(static_cast<double>(confirmations) + 1.0) /
                          std::log(static_cast<double>(expected) + 1.0);
  const auto span = static_cast<double>((max - min).count());
  const Time timeout = max - Time(static_cast<Time::rep>(std::floor(fraction * span)));
  return start + std::max(timeout, min);
}

}  // namespace gossip_rdzv::protocol
