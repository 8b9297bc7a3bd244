// The gossip-rdzv command line as data: parse_command_line() turns an argument vector into
// the options of one command, or into the text to print and the exit code to return
// (--help, or a usage error). It runs nothing, so every flag can be tested without sockets.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "gossip_rdzv/config.hpp"

namespace gossip_rdzv::cli {

enum class Command { join, seed, members, doctor, keygen, keys };

/// `keys install|use|remove|list`: what to do to the key file (docs/security.md).
enum class KeysAction { install, use, remove, list };

/// --format: env / export / json for `join`, table / json for `members`, text / json for
/// `doctor`.
enum class OutputFormat { env, export_, json, table, text };

/// How much goes to stderr: --quiet drops progress and the assignment table,
/// each -v raises the log level one step (warn by default, then info, debug, trace).
struct Verbosity {
  bool quiet = false;
  int verbose = 0;
};

struct CliOptions {
  Command command = Command::join;
  /// join and seed: the node's configuration, every flag already validated. Every command
  /// but keygen: --key-file (or GOSSIP_RDZV_KEY_FILE) is config.key_file.
  gossip_rdzv::Config config;
  OutputFormat format = OutputFormat::env;
  std::string env_file;                     ///< --env-file, may contain {local_rank}; empty: none
  std::string membership_file;              ///< --membership-file; empty: none
  std::vector<std::string> worker_command;  ///< join: everything after "--"; empty: none
  /// join --serve-store (never with a worker command): after the outputs, keep serving the
  /// store until SIGINT/SIGTERM; the env output and files then carry GOSSIP_RDZV_STORE.
  bool serve_store = false;
  /// join --max-restarts (with -- CMD): worker failures the job survives by re-forming;
  /// above 0, config.elastic is set (docs/cli.md, "Elastic jobs").
  std::uint32_t max_restarts = 0;
  /// join --stay-after-job (elastic jobs): how long a seed node's process keeps telling late
  /// starters that the job is over, in the background after join returned; 0: not at all
  /// (docs/cli.md, "Elastic jobs").
  std::chrono::milliseconds stay_after_job{60000};
  /// join --watch (never with a worker command): stay up and rewrite the outputs for each
  /// round of the elastic job (config.elastic is set); docs/cli.md, "Watching rounds".
  bool watch = false;
  /// join --on-round (only with --watch): a shell command run after each round's outputs
  /// are written; empty: none.
  std::string on_round;
  std::string profile = "lan";  ///< --profile, already applied to config.timing
  Verbosity verbosity;
  /// members: the node to ask, and how long to wait for it (doctor: per probe).
  std::string query_endpoint;
  std::chrono::milliseconds query_timeout{5000};
  /// doctor: the seeds, --listen, --master-port and --run-id are in `config`.
  /// keygen: the file to write (empty: print the key on stdout), and --force.
  std::string keygen_path;
  bool force = false;
  /// keys: what to do to config.key_file, and the KEY (install: a key; use, remove: a key or
  /// a key id) it is about.
  KeysAction keys_action = KeysAction::list;
  std::string key_argument;
  /// Valid but risky input, e.g. --nnodes 2:8 where two disjoint groups could form.
  std::vector<std::string> warnings;
};

/// What the CLI does when parsing does not produce a command to run.
struct ParseResult {
  std::optional<CliOptions> options;  ///< set: run this command
  int exit_code = 0;                  ///< without options: 0 (help) or 2 (usage error)
  std::string text;                   ///< without options: help for stdout, or error for stderr
};

/// `args` excludes the program name. A usage error's text is two lines: what is wrong
/// (option, bad value, expected form), then "Run 'gossip-rdzv <cmd> --help' for usage.".
ParseResult parse_command_line(const std::vector<std::string>& args);

/// "gossip-rdzv X.Y.Z (protocol version N)\n": what `gossip-rdzv --version` prints. Nodes
/// of different protocol versions refuse each other (exit 7); compare this line on each.
std::string version_text();

/// The --help text of `command` (or of the program when empty; "keys install" for a
/// subcommand of keys), as printed by --help.
std::string help_text(const std::string& command = "");

}  // namespace gossip_rdzv::cli
