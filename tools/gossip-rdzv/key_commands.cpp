#include "key_commands.hpp"

#include <iostream>
#include <string>
#include <utility>

#include "key_file.hpp"
#include "option_values.hpp"

namespace gossip_rdzv::cli {
namespace {

void add_keygen_options(CLI::App& app, RawOptions& raw) {
  app.add_option("PATH", raw.keygen_path,
                 "Write a new key file there, mode 0600, and print its key\n"
                 "id (default: print the key alone on stdout)")
      ->type_name("");
  app.add_flag("--force", raw.force, "Replace the regular file at PATH if there is one");
}

void add_keys_action(CLI::App& app, RawOptions& raw, const char* key_help) {
  add_key_file(app, std::string("Required. The key file to ") +
                        (key_help != nullptr ? "change" : "list") +
                        "\n(default: $GOSSIP_RDZV_KEY_FILE)");
  if (key_help != nullptr) app.add_option("KEY", raw.key_argument, key_help)->type_name("");
}

const char* kKeygenDetails =
    "keygen makes a new random job key (32 bytes). Copy the file to every\n"
    "node (scp, a secret store) and give each the same --key-file, or add\n"
    "the printed key to a running job's key files with `keys install`.\n";

const char* kKeysDetails =
    "keys rotates a running job's key with no downtime: install the new key\n"
    "in every node's key file, make it primary with use (nodes then seal\n"
    "with it and still accept the old one), then remove the old key. Each\n"
    "step rewrites the file atomically, mode 0600; every agent, and every\n"
    "worker's store client, picks the change up within 1 s. Finish a step on\n"
    "every machine before the next. See docs/security.md.\n";

const char* kKeygenFooter =
    "Exit codes: 0 ok, 2 usage (PATH exists, or is not a regular file),\n"
    "10 I/O error.\n"
    "See docs/security.md.";

const char* kKeysFooter =
    "Exit codes: 0 ok, 2 usage (a bad KEY, a key file that cannot be read,\n"
    "or a change refused), 10 I/O error.\n"
    "See docs/security.md.";

}  // namespace

KeyCommands add_key_commands(CLI::App& app, RawOptions& raw) {
  KeyCommands k;
  auto& keygen = k.keygen;
  auto& keys = k.keys;
  auto& key_actions = k.key_actions;
  keygen = app.add_subcommand("keygen", "Write a new job key file, or print a new key.");
  keys = app.add_subcommand(
      "keys", "Rotate the keys of a key file: install, use (make primary), remove, list.");
  keys->require_subcommand(0, 1);
  const std::pair<const char*, const char*> actions[] = {
      {"install", "Add KEY to the key file, after its keys."},
      {"use", "Make KEY the primary: the key this node seals with."},
      {"remove", "Remove KEY from the key file (not the primary)."},
      {"list", "Print the key ids of the key file, the primary first."}};
  for (const auto& [name, description] : actions) {
    key_actions.push_back(keys->add_subcommand(name, description));
  }
  for (auto* sub : {keygen, keys, key_actions[0], key_actions[1], key_actions[2], key_actions[3]}) {
    sub->formatter(app.get_formatter());
    sub->allow_extras();
    sub->footer(sub == keygen ? std::string(kKeygenDetails) + "\n" + kKeygenFooter
                : sub == keys ? std::string(kKeysDetails) + "\n" + kKeysFooter
                              : kKeysFooter);
  }
  add_keygen_options(*keygen, raw);
  add_keys_action(
      *key_actions[0], raw,
      "The key to add: base64 of 32 bytes, as\n`gossip-rdzv keygen` prints it, or - to read "
      "it\nfrom stdin (a key file's first key), which keeps\nit out of the process list");
  add_keys_action(*key_actions[1], raw, "The key, or its key id (16 hex digits)");
  add_keys_action(*key_actions[2], raw, "The key, or its key id (16 hex digits)");
  add_keys_action(*key_actions[3], raw, nullptr);
  return k;
}

CliOptions build_keygen(const RawOptions& raw) {
  CliOptions options;
  options.command = Command::keygen;
  if (raw.keygen_path_given) check_path("PATH", raw.keygen_path);
  if (raw.force && raw.keygen_path.empty()) {
    throw UsageError{"--force needs PATH: it replaces the file there"};
  }
  options.keygen_path = raw.keygen_path;
  options.force = raw.force;
  return options;
}

// KEY is never quoted back: it may be a secret, nearly right.
CliOptions build_keys(const RawOptions& raw, KeysAction action) {
  std::string key_argument = raw.key_argument;  // "-": read from stdin below
  CliOptions options;
  options.command = Command::keys;
  options.keys_action = action;
  if (raw.key_file.empty()) {
    throw UsageError{raw.key_file_given ? "--key-file '': empty path (expected a file path)"
                                        : "--key-file is required (expected the key file's "
                                          "path; GOSSIP_RDZV_KEY_FILE may name it instead)"};
  }
  options.config.key_file = raw.key_file;
  if (action == KeysAction::list) return options;
  if (action == KeysAction::install && key_argument == "-") {
    // A key given on the command line is readable by every user in /proc/PID/cmdline: read
    // it from stdin instead, as a key file's first key (`keys install --key-file PATH - <
    // new.key`).
    std::string line;
    key_argument.clear();
    while (key_argument.empty() && std::getline(std::cin, line)) {
      const auto first = line.find_first_not_of(" \t\r");
      if (first == std::string::npos || line[first] == '#') continue;
      const auto last = line.find_last_not_of(" \t\r");
      key_argument = line.substr(first, last - first + 1);
    }
    if (key_argument.empty())
      throw UsageError{
          "KEY '-': stdin holds no key (give a key file there: keys install --key-file "
          "PATH - < new.key)"};
  }
  const std::string key = "KEY (" + std::to_string(key_argument.size()) + " characters)";
  const std::string a_key = "base64 of 32 bytes, as `gossip-rdzv keygen` prints it";
  if (key_argument.empty()) {
    throw UsageError{action == KeysAction::install
                         ? "KEY is required (expected " + a_key + ")"
                         : "KEY is required (expected a key or its key id, 16 hex digits)"};
  }
  if (action == KeysAction::install && !KeyFile::key_of(key_argument)) {
    throw UsageError{key + " is not a key (expected " + a_key + ")"};
  }
  if (action != KeysAction::install && !KeyFile::key_of(key_argument) &&
      !KeyFile::looks_like_id(key_argument)) {
    throw UsageError{key + " is neither a key nor a key id (expected " + a_key +
                     ", or its key id: 16 hex digits, as `gossip-rdzv keys list` prints)"};
  }
  options.key_argument = key_argument;
  return options;
}

}  // namespace gossip_rdzv::cli
