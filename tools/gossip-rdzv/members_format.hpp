// Output of `gossip-rdzv members`: the membership table a node reports, for people
// (a fixed-width table) or programs (a JSON array).
#pragma once

#include <string>
#include <vector>

#include "gossip_rdzv/node.hpp"

namespace gossip_rdzv::cli {

/// `text` with control characters replaced by '?': for strings that came from the network
/// (host names, endpoints) on their way to a terminal.
std::string printable(std::string text);

/// Columns ENDPOINT HOSTNAME STATUS LAST_HEARD, one row per member; LAST_HEARD is "1.5s ago"
/// or "-" (never heard directly, or this node itself). Control characters become '?', since
/// host names arrive from the network and must not drive the terminal.
std::string members_table(const std::vector<MemberProgress>& members);

/// [{"endpoint": .., "hostname": .., "status": .., "last_heard_ms": N or null}, ...] and a
/// newline.
std::string members_json(const std::vector<MemberProgress>& members);

}  // namespace gossip_rdzv::cli
