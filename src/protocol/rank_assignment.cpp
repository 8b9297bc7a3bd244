#include "protocol/rank_assignment.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <map>
#include <optional>
#include <tuple>

#include "protocol/natural_order.hpp"

namespace gossip_rdzv::protocol {
namespace {

// The order free node ranks are handed out in. It is total (endpoints are unique in a
// view), so sorting by it removes any dependence on the order members arrived in.
bool canonical_less(const Announcement& a, const Announcement& b) {
  if (const int c = natural_compare(a.hostname, b.hostname); c != 0) return c < 0;
  if (const int c = natural_compare(a.host, b.host); c != 0) return c < 0;
  if (const int c = natural_compare(a.endpoint, b.endpoint); c != 0) return c < 0;
  return std::tie(a.node_id, a.generation) < std::tie(b.node_id, b.generation);
}

std::string describe(const Announcement& m) {
  return "node '" + m.hostname + "' (" + m.endpoint + ")";
}

AssignmentError error(ErrorCode code, std::string message) {
  return AssignmentError{code, std::move(message)};
}

// Checks what the rest of the function relies on; `members` is already canonically sorted,
// so the first problem found is the same on every node.
std::optional<AssignmentError> check_members(const std::vector<Announcement>& members,
                                             const std::string& self_endpoint) {
  if (members.empty()) return error(ErrorCode::internal, "rank assignment of an empty view");
  std::map<std::string, const Announcement*> by_endpoint;
  std::uint64_t world_size = 0;
  for (const Announcement& m : members) {
    if (!by_endpoint.emplace(m.endpoint, &m).second) {
      return error(ErrorCode::internal,
                   "rank assignment: endpoint " + m.endpoint + " appears twice in the view");
    }
    if (m.nproc == 0) {
      return error(ErrorCode::usage, describe(m) +
                                         " announced --nproc-per-node 0; start every node "
                                         "with --nproc-per-node 1 or more");
    }
    world_size += m.nproc;
  }
  // torch ranks are C ints.
  if (world_size > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max())) {
    return error(ErrorCode::usage, "the world size " + std::to_string(world_size) +
                                       " (sum of --nproc-per-node) does not fit a torch rank");
  }
  if (by_endpoint.count(self_endpoint) == 0) {
    return error(ErrorCode::internal,
                 "rank assignment: this node (" + self_endpoint + ") is not in the view");
  }
  return std::nullopt;
}

// Places hinted members; returns slots (node rank -> member index) with holes for the rest.
std::variant<std::vector<std::optional<std::size_t>>, AssignmentError> place_hints(
    const std::vector<Announcement>& members) {
  std::vector<std::optional<std::size_t>> slots(members.size());
  for (std::size_t i = 0; i < members.size(); ++i) {
    const Announcement& m = members[i];
    if (m.rank_hint < 0) continue;
    const auto hint = static_cast<std::size_t>(m.rank_hint);
    if (hint >= members.size()) {
      return error(ErrorCode::rank_conflict,
                   describe(m) + " asked for --node-rank " + std::to_string(hint) +
                       " but the view has only " + std::to_string(members.size()) +
                       " nodes (valid: 0.." + std::to_string(members.size() - 1) +
                       "); give it a --node-rank below the number of nodes or drop the hint");
    }
    if (slots[hint]) {
      return error(ErrorCode::rank_conflict,
                   describe(members[*slots[hint]]) + " and " + describe(m) +
                       " both asked for --node-rank " + std::to_string(hint) +
                       "; give each node a distinct --node-rank or drop the hint");
    }
    slots[hint] = i;
  }
  return slots;
}

// The members to place after the hinted ones, in that order: the seniors as listed, then
// the others in canonical order (`members` is sorted so). Null on a senior that is no
// member or appears twice.
std::optional<std::vector<std::size_t>> free_order(const std::vector<Announcement>& members,
                                                   const std::vector<std::string>& seniors) {
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < members.size(); ++i) index.emplace(members[i].endpoint, i);
  std::vector<bool> placed(members.size(), false);
  std::vector<std::size_t> order;
  for (const std::string& endpoint : seniors) {
    auto it = index.find(endpoint);
    if (it == index.end() || placed[it->second]) return std::nullopt;
    placed[it->second] = true;
    if (members[it->second].rank_hint < 0) order.push_back(it->second);
  }
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (!placed[i] && members[i].rank_hint < 0) order.push_back(i);
  }
  return order;
}

// Fills the holes with the unhinted members in `order` (free_order).
std::vector<std::size_t> fill_free_ranks(const std::vector<std::size_t>& free,
                                         std::vector<std::optional<std::size_t>> slots) {
  std::size_t next_free = 0;
  for (const std::size_t i : free) {
    while (slots[next_free]) ++next_free;
    slots[next_free] = i;
  }
  std::vector<std::size_t> order;
  order.reserve(slots.size());
  for (const auto& slot : slots) order.push_back(*slot);
  return order;
}

Assignment build(const std::vector<Announcement>& members, const std::vector<std::size_t>& order,
                 const std::string& self_endpoint, const std::string& run_id, std::uint32_t round) {
  Assignment a;
  a.run_id = run_id;
  a.round = round;
  for (std::size_t rank = 0; rank < order.size(); ++rank) {
    const Announcement& m = members[order[rank]];
    NodeEntry e;
    e.node_rank = static_cast<std::uint32_t>(rank);
    e.rank_offset = a.world_size;
    e.nproc = m.nproc;
    e.host = m.host;
    e.endpoint = m.endpoint;
    e.hostname = m.hostname;
    e.node_id = m.node_id;
    e.generation = m.generation;
    a.world_size += m.nproc;
    if (m.endpoint == self_endpoint) a.my_node_rank = e.node_rank;
    a.nodes.push_back(std::move(e));
  }
  const Announcement& master = members[order.front()];
  a.master_addr = master.host;
  a.master_port = master.master_port;
  return a;
}

}  // namespace

std::variant<Assignment, AssignmentError> assign_ranks(std::vector<Announcement> members,
                                                       const std::string& self_endpoint,
                                                       const std::string& run_id,
                                                       std::uint32_t round,
                                                       const std::vector<std::string>& seniors) {
  std::sort(members.begin(), members.end(), canonical_less);
  if (auto problem = check_members(members, self_endpoint)) return *std::move(problem);
  auto placed = place_hints(members);
  if (auto* problem = std::get_if<AssignmentError>(&placed)) return std::move(*problem);
  auto slots = std::get<std::vector<std::optional<std::size_t>>>(std::move(placed));
  const auto free = free_order(members, seniors);
  if (!free) {
    return error(ErrorCode::internal,
                 "rank assignment: the previous round's members named by the view are not "
                 "distinct members of it");
  }
  return build(members, fill_free_ranks(*free, std::move(slots)), self_endpoint, run_id, round);
}

}  // namespace gossip_rdzv::protocol
