#include "key_file.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "gossip_rdzv/error.hpp"
#include "transport/keyring.hpp"

namespace gossip_rdzv::cli {
namespace {

std::string_view trimmed(std::string_view text) {
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return text;
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Keyring::parse's rule: a line that is empty (once trimmed) or starts with '#' is no key.
bool is_key_line(std::string_view line) {
  const std::string_view text = trimmed(line);
  return !text.empty() && text.front() != '#';
}

}  // namespace

KeyFile KeyFile::parse(std::string_view text, const std::string& source) {
  // The keyring's own parser judges the file, so that `keys` accepts exactly what the
  // agents accept and words its errors the same way.
  (void)transport::Keyring::parse(text, source);
  KeyFile file;
  std::vector<std::string> pending;
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    if (!is_key_line(line)) {
      pending.push_back(line);
      continue;
    }
    auto key = key_of(line);
    if (!key) throw Error(ErrorCode::usage, source + ": a line is not a key");  // parse() passed
    key->comments = std::move(pending);
    pending.clear();
    file.keys_.push_back(std::move(*key));
  }
  file.trailer_ = std::move(pending);
  return file;
}

std::optional<KeyFile::Key> KeyFile::key_of(std::string_view text) {
  const std::string_view key = trimmed(text);
  if (!is_key_line(key) || std::any_of(key.begin(), key.end(), [](char c) {
        return std::isspace(static_cast<unsigned char>(c)) != 0;
      })) {
    return std::nullopt;
  }
  try {
    const auto ring = transport::Keyring::parse(key, "KEY");
    if (ring->size() != 1) return std::nullopt;
    return Key{std::string(key), transport::key_id_text(ring->primary_id()), {}};
  } catch (const Error&) {
    return std::nullopt;
  }
}

bool KeyFile::looks_like_id(std::string_view text) {
  return text.size() == 16 && std::all_of(text.begin(), text.end(), [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c)) != 0;
         });
}

std::optional<std::size_t> KeyFile::find(std::string_view key_or_id) const {
  const std::string_view given = trimmed(key_or_id);
  std::string id;
  if (looks_like_id(given)) {
    id = lowercase(given);
  } else if (auto key = key_of(given)) {
    id = key->id;
  } else {
    return std::nullopt;
  }
  for (std::size_t index = 0; index < keys_.size(); ++index) {
    if (keys_[index].id == id) return index;
  }
  return std::nullopt;
}

bool KeyFile::install(Key key, const std::string& comment) {
  if (find(key.id)) return false;
  key.comments = {comment};
  keys_.push_back(std::move(key));
  return true;
}

void KeyFile::use(std::size_t index) {
  std::rotate(keys_.begin(), keys_.begin() + static_cast<std::ptrdiff_t>(index),
              keys_.begin() + static_cast<std::ptrdiff_t>(index) + 1);
}

void KeyFile::remove(std::size_t index) {
  if (index == 0) throw Error(ErrorCode::internal, "KeyFile::remove: the primary key");
  keys_.erase(keys_.begin() + static_cast<std::ptrdiff_t>(index));
}

std::string KeyFile::text() const {
  std::string out;
  for (const auto& key : keys_) {
    for (const auto& line : key.comments) out += line + "\n";
    out += key.text + "\n";
  }
  for (const auto& line : trailer_) out += line + "\n";
  return out;
}

}  // namespace gossip_rdzv::cli
