// SWIM's round-robin probe target selection (section 4.3 of the SWIM paper; memberlist's
// probeIndex over a shuffled node list): the live peers are probed in passes, each peer once
// per pass in a random order. A member that stops answering is probed within one pass of
// probe periods, where uniform random picks leave it unprobed for a geometric while (with
// two peers, one period in four a node missed it twice in a row).
//
// A pass is the arithmetic progression start, start + stride, ... modulo the number of live
// peers, with a random start and a random stride coprime to that number: a permutation that
// costs no memory, which a simulated cluster of N nodes would otherwise pay N^2 times. A
// change in the number of live peers (a join, a death) starts a new pass.
#pragma once

#include <cstddef>
#include <optional>

#include "prng.hpp"

namespace gossip_rdzv::protocol {

class ProbeOrder {
 public:
  /// Which of `live` peers to probe next (an index into MemberTable::live_peers()), nullopt
  /// when there are none.
  std::optional<std::size_t> next(std::size_t live, Prng& prng);

 private:
  std::size_t size_ = 0;  ///< live peers when this pass began
  std::size_t step_ = 0;  ///< probes of this pass so far
  std::size_t start_ = 0;
  std::size_t stride_ = 1;
};

}  // namespace gossip_rdzv::protocol
