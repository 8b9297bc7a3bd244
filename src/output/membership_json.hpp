// The agreed membership for people and programs: JSON (--membership-file) and a table (CLI).
#pragma once

#include <string>
#include <string_view>

#include "gossip_rdzv/assignment.hpp"

namespace gossip_rdzv {

/// JSON string literal for `text`, quotes included: '"' and '\' are escaped, control
/// characters become \u00XX, and bytes that are not valid UTF-8 become U+FFFD so the
/// document always parses (host names arrive from the network).
std::string json_string(std::string_view text);

/// The assignment as a JSON object (schema in docs/env-vars.md):
///   {"run_id", "round", "world_size", "master_addr", "master_port", "nnodes",
///    "nodes": [{"node_rank", "rank_offset", "nproc", "host", "endpoint", "hostname",
///               "node_id", "generation"}, ...]}
/// `node_id` is a decimal string: a u64 does not survive JavaScript numbers. Nodes are in
/// node-rank order. Ends with a newline.
std::string membership_json(const Assignment& assignment);

/// A fixed-width table, one row per node in node-rank order, with the columns
/// NODE_RANK RANKS HOST ENDPOINT HOSTNAME NPROC (RANKS is "first-last" or a single rank).
/// Control characters in names are shown as '?' so a peer cannot send terminal escapes.
std::string assignment_table(const Assignment& assignment);

/// Writes membership_json(assignment) to `path`, atomically like the env files (parent
/// directories created, temporary file, fsync, rename).
/// Throws Error(io_error) naming the path, the OS error and the fix.
void write_membership_file(const std::string& path, const Assignment& assignment);

}  // namespace gossip_rdzv
