// The store (docs/store.md) beside a node: a runtime::Sidecar that shares the gossip socket,
// serving the keys this node is home for and the requests of its local workers.
#pragma once

#include <memory>
#include <string>

#include "runtime/runtime.hpp"

namespace gossip_rdzv::runtime {

/// The store service of the node at `endpoint` ("host:port") in run `run_id`, ready to hand
/// to Runtime: it claims store messages, forwards requests to their home member, and logs
/// the service's warnings.
std::unique_ptr<Sidecar> make_store_sidecar(const std::string& endpoint, const std::string& run_id);

}  // namespace gossip_rdzv::runtime
