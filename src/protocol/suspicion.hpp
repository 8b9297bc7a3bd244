// Lifeguard's dynamic suspicion (memberlist's suspicion.go): how long a suspect has to
// refute depends on how many members suspect it independently. A suspicion that only one
// member holds may be that member's own slowness (a starved process misses acks that were
// sent in time), so it lasts `max`; every further member that suspects the same incarnation
// on its own shortens it, logarithmically, down to `min` after `expected` confirmations. A
// member that is really gone is probed by many and reaches `min` quickly; a slow accuser's
// mistake leaves its target several times longer to answer.
#pragma once

#include <cstdint>

#include "time.hpp"

namespace gossip_rdzv::protocol {

struct SuspicionClock {
  Time start{0};               ///< when this node started suspecting
  Time min{0};                 ///< the timeout once `expected` confirmations arrived
  Time max{0};                 ///< the timeout with no confirmation
  std::uint32_t expected = 0;  ///< confirmations that bring the timeout down to `min`

  /// When the suspect is declared dead after `confirmations` members other than the first
  /// accuser suspected it too: start + max - log(c + 1) / log(expected + 1) * (max - min),
  /// never before start + min. With expected == 0: start + min.
  Time deadline(std::uint32_t confirmations) const;

  /// A suspicion that ends at `deadline` whatever the confirmations.
  static SuspicionClock fixed(Time deadline) {
    return SuspicionClock{Time{0}, deadline, deadline, 0};
  }
};

}  // namespace gossip_rdzv::protocol
