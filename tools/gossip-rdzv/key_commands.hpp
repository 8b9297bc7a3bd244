// `keygen` and `keys` on the command line: their subcommands, help text and checks, kept out
// of cli_options.cpp (the other commands) as the commands themselves are (keys_command.cpp).
#pragma once

#include <vector>

#include "cli_options.hpp"
#include "raw_options.hpp"

namespace gossip_rdzv::cli {

/// The subcommands CLI11 parses into `raw`.
struct KeyCommands {
  CLI::App* keygen = nullptr;
  CLI::App* keys = nullptr;
  /// The actions of keys, in KeysAction's order.
  std::vector<CLI::App*> key_actions;
};

/// Adds keygen and keys (with install, use, remove, list) to `app`, with `app`'s formatter.
KeyCommands add_key_commands(CLI::App& app, RawOptions& raw);

/// The options of `keygen` from what was given; throws UsageError.
CliOptions build_keygen(const RawOptions& raw);
/// The options of `keys ACTION`; reads KEY from stdin for `install -`. Throws UsageError.
CliOptions build_keys(const RawOptions& raw, KeysAction action);

}  // namespace gossip_rdzv::cli
