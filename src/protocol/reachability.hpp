// Reachability of the others' advertised endpoints. A node whose advertised endpoint does not
// work (loopback, NAT, an inbound firewall) can still send: its messages arrive, ours to it
// vanish. SWIM alone hides this (indirect probes may succeed, or the node is just declared
// dead), so we count what goes unanswered at its endpoint and, when it next talks to us, say
// so over the connection its message came on (Outgoing::reply).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core_context.hpp"

namespace gossip_rdzv::protocol {

class Reachability {
 public:
  /// A probe got no ack within probe_timeout: the direct path failed, whatever the indirect
  /// probes find (gloo needs every pair connected).
  void note_unanswered_probe(const CoreContext& ctx, const std::string& endpoint, Time now);
  /// A Join from `joiner`, about to be answered: one that keeps sending Join after we
  /// answered it, well after the answers had time to arrive, never got them.
  void note_join(const CoreContext& ctx, Time now, const std::string& joiner,
                 std::uint64_t generation);
  /// An ack from the member itself: its endpoint answers.
  void note_answered(const std::string& endpoint) { unanswered_.erase(endpoint); }
  /// Called for every message a peer sends us: if its endpoint does not answer us, tell it
  /// (at most once per probe interval), back over the connection the message came on.
  void maybe_tell(CoreContext& ctx, Time now, const Envelope& env);
  /// A peer tells us that our endpoint does not answer it.
  void on_notice(CoreContext& ctx, const Envelope& env, const Unreachable& notice);
  /// Every peer with unanswered messages, by endpoint (Snapshot::unreachable).
  std::vector<UnreachablePeer> unreachable_peers() const;

 private:
  struct Unanswered {
    std::uint64_t generation = 0;
    std::uint32_t count = 0;
    Time since{0};
    bool heard_meanwhile = false;
    std::optional<Time> last_notice;
  };
  struct JoinSeen {
    std::uint64_t generation = 0;
    std::uint32_t answers = 0;  ///< JoinReplies sent to this joiner process
    Time first_answer_at{0};
  };
  Unanswered& entry(const std::string& endpoint, std::uint64_t generation, Time now);

  std::unordered_map<std::string, Unanswered> unanswered_;
  std::unordered_map<std::string, JoinSeen> joins_answered_;
};

}  // namespace gossip_rdzv::protocol
