// The result of a rendezvous: the agreed view turned into ranks and a master endpoint.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gossip_rdzv {

/// One node of the agreed view, in node-rank order.
struct NodeEntry {
  std::uint32_t node_rank = 0;    ///< GROUP_RANK / NODE_RANK of this node
  std::uint32_t rank_offset = 0;  ///< global rank of its local rank 0
  std::uint32_t nproc = 1;        ///< its --nproc-per-node (LOCAL_WORLD_SIZE)
  std::string host;               ///< advertised address (MASTER_ADDR when node_rank == 0)
  std::string endpoint;           ///< gossip endpoint "host:port", the node's key in the view
  std::string hostname;           ///< the machine's host name, for people
  std::uint64_t node_id = 0;      ///< random per process start
  std::uint64_t generation = 0;   ///< grows each time a node with this endpoint restarts
};

/// What every member of one round computes identically from the agreed view.
struct Assignment {
  std::string run_id;
  std::uint32_t round = 0;         ///< TORCHELASTIC_RESTART_COUNT
  std::uint32_t world_size = 0;    ///< sum of nproc over all nodes
  std::string master_addr;         ///< node rank 0's advertised address
  std::uint16_t master_port = 0;   ///< a port node rank 0 found free (or the one fixed by the user)
  std::vector<NodeEntry> nodes;    ///< ordered by node_rank
  std::uint32_t my_node_rank = 0;  ///< index into `nodes` of the node that computed this

  const NodeEntry& me() const { return nodes.at(my_node_rank); }
  std::uint32_t nnodes() const { return static_cast<std::uint32_t>(nodes.size()); }
};

}  // namespace gossip_rdzv
