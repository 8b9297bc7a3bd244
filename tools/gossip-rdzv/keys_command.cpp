// `gossip-rdzv keygen` and `gossip-rdzv keys`: the job's key file (docs/security.md). A key
// file is a secret: it is only ever created with mode 0600, new (O_EXCL) or renamed into
// place complete, so no other user can read it and no agent reads half of one.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "commands.hpp"
#include "gossip_rdzv/error.hpp"
#include "key_file.hpp"
#include "output/atomic_file.hpp"
#include "transport/keyring.hpp"

namespace gossip_rdzv::cli {
namespace {

constexpr unsigned kKeyFileMode = 0600;

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link that leads nowhere";
  return "not a regular file";
}

// A new file, never an existing one, and never through a link planted at PATH
// (output::write_new_file). Nothing is left behind on failure.
void create_key_file(const std::string& path, std::string_view text) {
  if (!output::write_new_file(path, text, "key file", "keygen", kKeyFileMode)) {
    throw Error(ErrorCode::usage, "keygen: '" + path + "' appeared while it was being created");
  }
}

// Replacing a key file locks out every node that holds only its key, so it takes --force;
// only a regular file (or a link to one) is ever replaced.
void write_new_key_file(const std::string& path, std::string_view text, bool force) {
  struct stat own {};
  if (::lstat(path.c_str(), &own) != 0) {
    create_key_file(path, text);
    return;
  }
  struct stat target {};
  const bool regular =
      S_ISREG(own.st_mode) ||
      (S_ISLNK(own.st_mode) && ::stat(path.c_str(), &target) == 0 && S_ISREG(target.st_mode));
  if (!regular) {
    const mode_t kind =
        S_ISLNK(own.st_mode) && ::stat(path.c_str(), &target) == 0 ? target.st_mode : own.st_mode;
    throw Error(ErrorCode::usage,
                "keygen: '" + path + "' is " + kind_of(kind) +
                    ", not a regular file: give PATH the path of a key file to create");
  }
  if (!force) {
    throw Error(ErrorCode::usage,
                "keygen: '" + path +
                    "' exists; refusing to replace it (nodes holding only its key would be "
                    "locked out): give another PATH, add a key to it with `gossip-rdzv keys "
                    "install`, or replace it with --force");
  }
  output::write_file_atomically(path, text, "key file", "PATH", kKeyFileMode);
}

std::string read_text(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file.is_open()) {
    throw Error(ErrorCode::usage, "cannot read key file '" + path + "': " + std::strerror(errno) +
                                      "; check --key-file");
  }
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// The id of KEY|ID as given, for messages: a key is never printed, only its id.
std::string id_of(const std::string& key_or_id) {
  if (const auto key = KeyFile::key_of(key_or_id)) return key->id;
  std::string id = key_or_id;
  for (char& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return id;
}

std::size_t index_in(const KeyFile& file, const CliOptions& options, const char* action) {
  const auto index = file.find(options.key_argument);
  if (index) return *index;
  throw Error(
      ErrorCode::usage,
      std::string("keys ") + action + ": key " + id_of(options.key_argument) + " is not in " +
          options.config.key_file + " (`gossip-rdzv keys list` shows its keys)" +
          (std::string(action) == "use" ? "; install it first with `gossip-rdzv keys install`"
                                        : ""));
}

void save(const KeyFile& file, const std::string& path) {
  output::write_file_atomically(path, file.text(), "key file", "--key-file", kKeyFileMode);
}

int list_keys(const KeyFile& file) {
  for (std::size_t index = 0; index < file.keys().size(); ++index) {
    std::cout << file.keys()[index].id << (index == 0 ? "  primary\n" : "  secondary\n");
  }
  return 0;
}

int install_key(KeyFile& file, const CliOptions& options) {
  const std::string& path = options.config.key_file;
  auto key = KeyFile::key_of(options.key_argument);
  if (!key) throw Error(ErrorCode::usage, "keys install: KEY is not a key");  // parser checked
  const std::string id = key->id;
  if (!file.install(std::move(*key),
                    "# key id " + id + ", installed by gossip-rdzv keys install")) {
    std::cout << "key " << id << " is already in " << path << "; nothing changed\n";
    return 0;
  }
  save(file, path);
  std::cout << "installed key " << id << " in " << path
            << " as a secondary: accepted from now on; once it is in every node's key file, "
               "make it primary with `gossip-rdzv keys use`\n";
  return 0;
}

int use_key(KeyFile& file, const CliOptions& options) {
  const std::string& path = options.config.key_file;
  const std::size_t index = index_in(file, options, "use");
  const std::string id = file.keys()[index].id;
  if (index == 0) {
    std::cout << "key " << id << " is already the primary of " << path << "; nothing changed\n";
    return 0;
  }
  const std::string previous = file.keys().front().id;
  file.use(index);
  save(file, path);
  std::cout << "key " << id << " is now the primary of " << path << " (was " << previous
            << ", still accepted); once every node uses it, remove " << previous
            << " with `gossip-rdzv keys remove`\n";
  return 0;
}

int remove_key(KeyFile& file, const CliOptions& options) {
  const std::string& path = options.config.key_file;
  const std::size_t index = index_in(file, options, "remove");
  const std::string id = file.keys()[index].id;
  if (file.keys().size() == 1) {
    throw Error(ErrorCode::usage, "keys remove: key " + id + " is the only key of " + path +
                                      ", which needs one: install and use another key first");
  }
  if (index == 0) {
    throw Error(ErrorCode::usage,
                "keys remove: key " + id + " is the primary of " + path +
                    ", which this node seals with: make another key primary first "
                    "(`gossip-rdzv keys use`) on every node, then remove this one");
  }
  file.remove(index);
  save(file, path);
  std::cout << "removed key " << id << " from " << path << "\n";
  return 0;
}

}  // namespace

int run_keygen(const CliOptions& options) {
  const std::string line = transport::Keyring::generate_key_line();
  if (options.keygen_path.empty()) {
    std::cout << line << "\n" << std::flush;
    return 0;
  }
  const auto key = KeyFile::key_of(line);
  if (!key) throw Error(ErrorCode::internal, "keygen made a key that the key file parser refuses");
  write_new_key_file(options.keygen_path,
                     "# key id " + key->id + ", made by gossip-rdzv keygen\n" + line + "\n",
                     options.force);
  std::cout << "key id " << key->id << " written to " << options.keygen_path << "\n";
  return 0;
}

int run_keys(const CliOptions& options) {
  const std::string& path = options.config.key_file;
  // The keyring's own reader first: its errors name the file, the line and the fix.
  (void)transport::Keyring::load_file(path);
  KeyFile file = KeyFile::parse(read_text(path), path);
  switch (options.keys_action) {
    case KeysAction::install:
      return install_key(file, options);
    case KeysAction::use:
      return use_key(file, options);
    case KeysAction::remove:
      return remove_key(file, options);
    case KeysAction::list:
      break;
  }
  return list_keys(file);
}

}  // namespace gossip_rdzv::cli
