// A key file as `gossip-rdzv keys` edits it: its keys in order (the first is the primary,
// transport/keyring.hpp), each with the comment and blank lines written above it, so that
// making a key primary or removing it moves or removes its comments too. Pure: the command
// (keys_command.cpp) reads and writes the file.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gossip_rdzv::cli {

class KeyFile {
 public:
  struct Key {
    std::string text;                   ///< the key line: base64 of 32 bytes
    std::string id;                     ///< its key id, 16 lowercase hex digits
    std::vector<std::string> comments;  ///< the comment and blank lines above it
  };

  /// Parses a key file's text as Keyring::parse does (its errors: Error(usage) naming
  /// `source`, the line and the fix).
  static KeyFile parse(std::string_view text, const std::string& source);

  /// The key `text` is (trimmed), with its id; nullopt unless it is base64 of 32 bytes.
  static std::optional<Key> key_of(std::string_view text);
  /// Whether `text` has the form of a key id: 16 hex digits.
  static bool looks_like_id(std::string_view text);

  const std::vector<Key>& keys() const { return keys_; }
  /// Where the key given as its text or as its id (any case) is, nullopt when absent.
  std::optional<std::size_t> find(std::string_view key_or_id) const;

  /// Appends `key` after the others (a secondary), with `comment` above it; false, changing
  /// nothing, when the file holds it already.
  bool install(Key key, const std::string& comment);
  /// Moves the key at `index` first: the primary.
  void use(std::size_t index);
  /// Removes the key at `index`, which must not be the primary (0).
  void remove(std::size_t index);

  /// The file's text: each key after its comments, then what followed the last key.
  std::string text() const;

 private:
  std::vector<Key> keys_;
  std::vector<std::string> trailer_;  ///< comment and blank lines after the last key
};

}  // namespace gossip_rdzv::cli
