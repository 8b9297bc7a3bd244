// Store values from and to text, for the store's tests.
#pragma once

#include <string>

#include "store/store_types.hpp"

namespace gossip_rdzv::testing_support {

inline store::Bytes b(const std::string& text) {
  return store::Bytes(text.begin(), text.end());
}

inline std::string s(const store::Bytes& bytes) {
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace gossip_rdzv::testing_support
