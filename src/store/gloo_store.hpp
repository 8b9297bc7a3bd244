// gloo without a master: gloo::rendezvous::Store over gossip_rdzv::Store, so
// gloo::rendezvous::Context::connectFullMesh exchanges the ranks' addresses through the
// store over the agreed view (each key on its home member) instead of a TCPStore, FileStore
// or Redis (docs/store.md, "gloo").
//
//   gossip_rdzv::Assignment a = node.wait();
//   gossip_rdzv::GlooStore store(gossip_rdzv::Store(node));
//   auto device = gloo::transport::tcp::CreateDevice(a.me().host.c_str());
//   auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
//   context->connectFullMesh(store, device);
//
// Built only when CMake finds Gloo (option GOSSIP_RDZV_WITH_GLOO); the target is
// gossip_rdzv_gloo.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "gossip_rdzv/store.hpp"

namespace gossip_rdzv {

class GlooStore : public ::gloo::rendezvous::Store {
 public:
  /// Wraps `store`; every key gloo uses is stored as `prefix + key`, so several gloo
  /// contexts (or runs of the same example) can share one store. set() and get() use the
  /// store's timeout (store.timeout()), wait() the one gloo passes (or the store's).
  explicit GlooStore(gossip_rdzv::Store store, std::string prefix = {});
  ~GlooStore() override;

  /// Throws gloo::IoException carrying the store's message (which names the key and its
  /// home member) when the store fails.
  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  gossip_rdzv::Store& store() { return store_; }
  const std::string& prefix() const { return prefix_; }

 private:
  std::vector<std::string> prefixed(const std::vector<std::string>& keys) const;

  gossip_rdzv::Store store_;
  std::string prefix_;
};

}  // namespace gossip_rdzv
