// What a refusal for want of the job's key (transport::AuthRefusal) means, for people: who,
// which keys, and the fix (docs/security.md, docs/troubleshooting.md "Exit 13").
#pragma once

#include <optional>

#include "protocol/core.hpp"
#include "transport/keyring.hpp"
#include "transport/zmq_transport.hpp"

namespace gossip_rdzv::runtime {

/// The refusal as the runtime records it (reason key_mismatch). `ours` is this node's
/// primary key id, if it holds keys. A refused unsealed gossip message is named by the sender
/// it claims (unauthenticated: "10.0.0.7:29400 (from 10.0.0.7)"), anything else by the
/// connection's address.
protocol::PeerRefused key_refusal(const transport::AuthRefusal& refusal,
                                  const std::optional<transport::KeyId>& ours);

/// "authentication failed: peer 10.0.0.7:29400 does not hold this job's key (...); start
/// every node with the same --key-file" for a key_mismatch refusal.
std::string key_refusal_text(const protocol::PeerRefused& refusal);

}  // namespace gossip_rdzv::runtime
