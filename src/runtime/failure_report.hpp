// What a failed or slow rendezvous tells its user: the errors that name the cause and the
// fix (join timeout with who joined, who went silent and who cannot be reached; refusals by
// another run or version; not admitted), and the rows of the progress report. Pure text from
// the runtime's state; used by gossip_rdzv::Node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gossip_rdzv/config.hpp"
#include "gossip_rdzv/error.hpp"
#include "gossip_rdzv/node.hpp"
#include "protocol/core.hpp"
#include "runtime/runtime.hpp"
#include "runtime/seed_resolver.hpp"

namespace gossip_rdzv::runtime {

/// "0.4 s", "12 s".
std::string seconds_text(milliseconds duration);
/// "4" or "2:4", as --nnodes is written.
std::string sizes_text(std::uint32_t min_nodes, std::uint32_t max_nodes);
/// "alive", "suspect", "dead".
const char* status_text(protocol::MemberStatus status);
/// The seeds' endpoints, or "none (this node is the seed)".
std::string seed_list_text(const std::vector<SeedAddress>& seeds);

/// run_id_mismatch, version_mismatch or (a key_mismatch refusal) auth_failed, naming the peer, both
/// sides' values and the fix. `subject` is who was refused: "this node", or "the query" for
/// query_members.
Error refusal_error(const protocol::PeerRefused& wire_refusal, const std::string& run_id,
                    const std::string& subject = "this node");
/// The refusals that settle "will this seed ever let us in": it refused us, or it speaks a
/// version we cannot read.
std::vector<protocol::PeerRefused> decisive_refusals(const RuntimeState& state);
/// Before joining we only talk to seeds: once as many seeds have refused as we have, waiting
/// longer cannot help.
bool refused_by_every_seed(const RuntimeState& state, std::size_t seed_count);
/// refused_by_every_seed, each seed for another run id or another job key: possibly a previous
/// job's node still staying on a seed's port (Node::wait lets one stay pass before it
/// believes them).
bool refused_by_seeds_of_another_job(const RuntimeState& state, std::size_t seed_count);
/// What peers told this node about its own endpoint `self`, or "" when nobody did.
std::string told_unreachable_text(const RuntimeState& state, const std::string& self);
/// The nodes this node refused because they belong to another run id, with that run id, or
/// "" when there were none: a node started with a mistyped --run-id is one of the missing.
std::string refused_runs_text(const RuntimeState& state, const std::string& run_id);
/// The peers this node refused for want of the job's key, or "" when there were none.
std::string refused_keys_text(const RuntimeState& state);
/// join_timeout: how many of MIN:MAX joined and which, how many are missing and how to start
/// them, who was seen and then went silent (last heard, via whom), whose advertised address
/// gets no answer from here, and `told` (told_unreachable_text).
Error join_timeout_error(const Config& config, const protocol::Snapshot& snapshot,
                         protocol::Time now, const std::string& told);
/// not_admitted: the round closed without this node (too many nodes for MAX), or was agreed
/// with its previous process.
Error not_admitted_error(const Config& config, const protocol::NotAdmitted& event);
/// What this node knows of messages to `endpoint` that got no answer, or nullptr.
const protocol::UnreachablePeer* unanswered_at(const protocol::Snapshot& snapshot,
                                               const std::string& endpoint);
/// It runs (it keeps sending) but does not answer at its advertised endpoint.
bool reachable_only_one_way(const protocol::UnreachablePeer& peer);
/// One row per member for Node::progress().
std::vector<MemberProgress> progress_rows(const protocol::Snapshot& snapshot, protocol::Time now);

}  // namespace gossip_rdzv::runtime
