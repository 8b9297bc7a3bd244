#include "transport/key_file_watch.hpp"

#include <sys/stat.h>

#include "gossip_rdzv/error.hpp"

namespace gossip_rdzv::transport {

KeyFileWatch::KeyFileWatch(std::string path, std::chrono::milliseconds interval)
    : path_(std::move(path)), interval_(interval), last_(stamp()) {}

KeyFileWatch::Stamp KeyFileWatch::stamp() const {
  struct stat info {};
  Stamp out;
  if (::stat(path_.c_str(), &info) != 0) return out;
  out.exists = true;
  out.device = info.st_dev;
  out.inode = info.st_ino;
  out.size = static_cast<unsigned long long>(info.st_size);
  out.mtime_ns =
      static_cast<long long>(info.st_mtim.tv_sec) * 1'000'000'000LL + info.st_mtim.tv_nsec;
  return out;
}

std::optional<KeyFileWatch::Change> KeyFileWatch::poll(std::chrono::steady_clock::time_point now) {
  if (now < next_) return std::nullopt;
  next_ = now + interval_;
  const Stamp current = stamp();
  if (current == last_) return std::nullopt;
  last_ = current;
  Change change;
  try {
    change.keyring = Keyring::load_file(path_);
  } catch (const Error& error) {
    change.problem = error.what();
  }
  return change;
}

}  // namespace gossip_rdzv::transport
