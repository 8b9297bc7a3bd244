// gossip_rdzv::Store(const Node&): the store of the node running in this process. Defined
// here, in the runtime, so that the store client (src/store/store_client.cpp) knows nothing
// of Node: the runtime may use the store client, never the other way (docs/architecture.md).
#include "gossip_rdzv/node.hpp"
#include "gossip_rdzv/store.hpp"

namespace gossip_rdzv {
namespace {

StoreOptions options_of(const Node& node, std::chrono::milliseconds timeout) {
  const auto assignment = node.try_assignment();
  if (!assignment) {
    throw StoreError(StoreErrorCode::usage,
                     "Store(node) needs a node that has committed its assignment: call "
                     "node.wait() first");
  }
  // The node's own key file: its agent refuses requests that are not sealed with the key.
  return StoreOptions{node.endpoint(), assignment->run_id, timeout, node.key_file()};
}

}  // namespace

Store::Store(const Node& node, std::chrono::milliseconds timeout)
    : Store(options_of(node, timeout)) {}

}  // namespace gossip_rdzv
