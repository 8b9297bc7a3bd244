// Rank assignment: the agreed view turned into node ranks, global rank offsets and a master
// endpoint. A pure function of the member *set*, so every node computes the same result.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "gossip_rdzv/assignment.hpp"
#include "gossip_rdzv/error.hpp"
#include "protocol/messages.hpp"

namespace gossip_rdzv::protocol {

/// Why no assignment could be computed; `message` names the cause and the fix.
struct AssignmentError {
  ErrorCode code = ErrorCode::internal;
  std::string message;
};

/// Assigns node ranks to `members` (in any order; the result does not depend on it):
///  - a member with rank_hint >= 0 gets that node rank;
///  - the others fill the free node ranks: first the `seniors` (endpoints: the members of the
///    previous round's outcome, in their node-rank order there, ViewClaim::seniors), in that
///    order, then the rest in natural order of (hostname, host, endpoint), so node7 < node66
///    < node100; node_id, then generation, break exact ties. So across rounds survivors keep
///    their relative order and newcomers come after them; in round 0 `seniors` is empty;
///  - rank_offset is the sum of nproc over lower node ranks, world_size the sum of all;
///  - master_addr / master_port are node rank 0's host and master_port.
/// `self_endpoint` selects my_node_rank; `run_id` and `round` are copied into the result.
///
/// Errors (never throws):
///  - rank_conflict: two members hint the same node rank (names both and the fix), or a hint
///    is >= the number of members (names the member, its hint and the view size);
///  - usage: a member announced nproc 0, or the total world size does not fit a rank;
///  - internal: `members` is empty, has a duplicate endpoint, or lacks `self_endpoint`; a
///    senior is no member or appears twice.
/// When several problems exist, the one reported is the same on every node.
std::variant<Assignment, AssignmentError> assign_ranks(
    std::vector<Announcement> members, const std::string& self_endpoint, const std::string& run_id,
    std::uint32_t round, const std::vector<std::string>& seniors = {});

}  // namespace gossip_rdzv::protocol
