#include "probe_order.hpp"

#include <numeric>

namespace gossip_rdzv::protocol {

std::optional<std::size_t> ProbeOrder::next(std::size_t live, Prng& prng) {
  if (live == 0) return std::nullopt;
  if (live != size_ || step_ >= size_) {
    size_ = live;
    step_ = 0;
    start_ = static_cast<std::size_t>(prng.below(live));
    stride_ = 1;
    if (live > 2) {
      // Coprime strides are common (at least 6/pi^2 of them for large N): a few draws.
      do {
        stride_ = 1 + static_cast<std::size_t>(prng.below(live - 1));
      } while (std::gcd(stride_, live) != 1);
    }
  }
  // start + step * stride, modulo size, without overflow for any table size.
  const auto index =
      static_cast<std::size_t>((static_cast<unsigned __int128>(step_) * stride_ + start_) % size_);
  ++step_;
  return index;
}

}  // namespace gossip_rdzv::protocol
