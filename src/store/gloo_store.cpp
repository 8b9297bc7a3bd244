#include "store/gloo_store.hpp"

#include <utility>

#include <gloo/common/error.h>

namespace gossip_rdzv {
namespace {

// gloo's own stores report failures as gloo::IoException; keep the store's message (it names
// the operation, the key and its home member), with a hint of where it comes from.
[[noreturn]] void rethrow(const StoreError& error) {
  throw ::gloo::IoException(std::string("gossip_rdzv store: ") + error.what());
}

}  // namespace

GlooStore::GlooStore(gossip_rdzv::Store store, std::string prefix)
    : store_(std::move(store)), prefix_(std::move(prefix)) {}

GlooStore::~GlooStore() = default;

std::vector<std::string> GlooStore::prefixed(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& key : keys) out.push_back(prefix_ + key);
  return out;
}

void GlooStore::set(const std::string& key, const std::vector<char>& data) {
  try {
    store_.set(prefix_ + key, std::string_view(data.data(), data.size()));
  } catch (const StoreError& error) {
    rethrow(error);
  }
}

std::vector<char> GlooStore::get(const std::string& key) {
  try {
    const gossip_rdzv::Store::Bytes value = store_.get(prefix_ + key);
    return std::vector<char>(value.begin(), value.end());
  } catch (const StoreError& error) {
    rethrow(error);
  }
}

void GlooStore::wait(const std::vector<std::string>& keys) {
  try {
    store_.wait(prefixed(keys));
  } catch (const StoreError& error) {
    rethrow(error);
  }
}

void GlooStore::wait(const std::vector<std::string>& keys,
                     const std::chrono::milliseconds& timeout) {
  try {
    // gloo passes kNoTimeout (0) for "no timeout": so does our store (0 waits for ever).
    store_.wait(prefixed(keys), timeout);
  } catch (const StoreError& error) {
    rethrow(error);
  }
}

}  // namespace gossip_rdzv
