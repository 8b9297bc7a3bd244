// What the parts of command-line parsing share (cli_options.cpp, key_commands.cpp): the raw
// text CLI11 collects for every option before it is checked, and the --key-file option.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace gossip_rdzv::cli {

/// Raw text of every option, filled by CLI11, validated afterwards.
struct RawOptions {
  /// --key-file of the command given (or GOSSIP_RDZV_KEY_FILE): not filled by CLI11, which
  /// applies the variable to every command's option, but read from the given command's.
  std::string key_file;
  bool key_file_given = false;
  std::string keygen_path, key_argument;
  bool keygen_path_given = false, force = false;
  std::vector<std::string> seeds;
  std::string listen, advertise, nnodes, nproc = "1", run_id = "default", node_rank, master_port,
                                         join_timeout = "600s", last_call = "30s", env_file,
                                         membership_file, format, profile = "lan", timeout = "5s",
                                         max_restarts = "0", on_round, stay_after_job = "60s";
  bool env_file_given = false, membership_file_given = false, on_round_given = false,
       stay_after_job_given = false;
  bool serve_store = false;
  bool watch = false;
  bool quiet = false;
  int verbose = 0;
};

/// --key-file, with GOSSIP_RDZV_KEY_FILE for launchers. Its value is read from this command's
/// option after parsing (RawOptions::key_file). option_text keeps CLI11's "(Env:...)" out of
/// the help's first column; `help` names the variable itself.
void add_key_file(CLI::App& app, const std::string& help);

}  // namespace gossip_rdzv::cli
