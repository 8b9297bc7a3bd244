// Key rotation without a restart: a running agent (and a worker's store client) re-reads its
// key file when the file changes, at most once per `interval` (docs/security.md, "Rotating
// a key"). A change is noticed by the file's identity, size and modification time, so an
// atomic replace (`gossip-rdzv keys ...`, or any editor writing a new file) is seen.
//
//   KeyFileWatch watch(path, std::chrono::seconds(1));
//   if (auto change = watch.poll(std::chrono::steady_clock::now())) {
//     if (change->keyring) transport.set_keyring(change->keyring);   // else: change->problem
//   }
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "transport/keyring.hpp"

namespace gossip_rdzv::transport {

class KeyFileWatch {
 public:
  struct Change {
    std::shared_ptr<const Keyring> keyring;  ///< the new keys; null when they could not be read
    std::string problem;                     ///< why not (the old keys stay in use)
  };

  /// Watches `path`, as it is now (the caller loaded it already).
  KeyFileWatch(std::string path, std::chrono::milliseconds interval);

  /// At most once per interval: whether the file changed since it was last read, and what it
  /// now holds. nullopt when unchanged or not yet time to look.
  std::optional<Change> poll(std::chrono::steady_clock::time_point now);

  const std::string& path() const { return path_; }

 private:
  struct Stamp {
    bool exists = false;
    unsigned long long device = 0, inode = 0, size = 0;
    long long mtime_ns = 0;
    bool operator==(const Stamp&) const = default;
  };
  Stamp stamp() const;

  std::string path_;
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point next_{};
  Stamp last_;
};

}  // namespace gossip_rdzv::transport
