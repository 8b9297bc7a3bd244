// Parsing is split in three: CLI11 recognises flags and collects their raw text (here),
// small parsers turn each text into a typed value (option_values.hpp), and
// gossip_rdzv::find_problem (config.hpp), the rules Node and the C API apply too, judges the
// values. Every option is declared as a string so that every bad value is reported by our
// own message (option, value, expected form) rather than CLI11's generic "Could not convert".
// Long because most of it is help text, kept beside the flags it describes.
#include "cli_options.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <sstream>

#include "key_commands.hpp"
#include "key_file.hpp"
#include "option_values.hpp"
#include "protocol/config_text.hpp"
#include "protocol/duration.hpp"
#include "protocol/endpoint.hpp"
#include "protocol/messages.hpp"
#include "raw_options.hpp"
#include "slurm.hpp"

namespace gossip_rdzv::cli {

// --key-file, with GOSSIP_RDZV_KEY_FILE for launchers (raw_options.hpp).
void add_key_file(CLI::App& app, const std::string& help) {
  app.add_option("--key-file", help)->envname("GOSSIP_RDZV_KEY_FILE")->option_text("PATH");
}

namespace {

const std::map<std::string, std::string>& synopses() {
  static const std::map<std::string, std::string> table = {
      {"gossip-rdzv", "gossip-rdzv join|seed|members|doctor|keygen|keys [OPTIONS]\n"},
      {"join",
       "gossip-rdzv join --seed HOST:PORT[,HOST:PORT...] --nnodes N|MIN:MAX\n"
       "                 [--listen [HOST]:PORT] [--advertise HOST] [--nproc-per-node K]\n"
       "                 [--run-id ID] [--key-file PATH] [--node-rank R]\n"
       "                 [--master-port P] [--join-timeout DUR] [--last-call DUR]\n"
       "                 [--env-file PATH] [--membership-file PATH]\n"
       "                 [--format env|export|json] [--profile lan|local|wan]\n"
       "                 [-q|--quiet] [-v|--verbose]\n"
       "                 [--watch [--on-round CMD]] [--serve-store |\n"
       "                 [--max-restarts K [--stay-after-job DUR]] -- CMD ARGS...]\n"},
      {"seed",
       "gossip-rdzv seed --listen [HOST]:PORT [--seed HOST:PORT,...] [--run-id ID]\n"
       "                 [--key-file PATH] [--profile lan|local|wan]\n"
       "                 [-q|--quiet] [-v|--verbose]\n"},
      {"members",
       "gossip-rdzv members --seed HOST:PORT [--run-id ID] [--key-file PATH]\n"
       "                    [--format table|json] [--timeout DUR]\n"},
      {"doctor",
       "gossip-rdzv doctor --seed HOST:PORT[,HOST:PORT...] [--listen [HOST]:PORT]\n"
       "                   [--master-port P] [--run-id ID] [--key-file PATH]\n"
       "                   [--format text|json] [--timeout DUR]\n"},
      {"keygen", "gossip-rdzv keygen [PATH [--force]]\n"},
      {"keys", "gossip-rdzv keys install|use|remove|list --key-file PATH [KEY|ID]\n"},
      {"install", "gossip-rdzv keys install --key-file PATH KEY\n"},
      {"use", "gossip-rdzv keys use --key-file PATH KEY|ID\n"},
      {"remove", "gossip-rdzv keys remove --key-file PATH KEY|ID\n"},
      {"list", "gossip-rdzv keys list --key-file PATH\n"},
  };
  return table;
}

// CLI11 2.1 derives the usage line from the options; ours spells out the value forms.
class SynopsisFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App* app, std::string /*name*/) const override {
    auto found = synopses().find(app->get_name());
    if (found == synopses().end()) return "";
    // Continuation lines line up under the command, after "Usage: ".
    std::string usage = "Usage: ";
    const std::string& synopsis = found->second;
    for (std::size_t index = 0; index < synopsis.size(); ++index) {
      usage += synopsis[index];
      if (synopsis[index] == '\n' && index + 1 < synopsis.size()) usage += "       ";
    }
    return usage;
  }

  // A blank line between the description and the usage line.
  std::string make_description(const CLI::App* app) const override {
    std::string description = CLI::Formatter::make_description(app);
    return description.empty() ? description : description + "\n";
  }
};

void add_verbosity(CLI::App& app, RawOptions& raw) {
  app.add_flag("-q,--quiet", raw.quiet,
               "No progress, assignment table or warnings on stderr;\n"
               "errors are still printed");
  app.add_flag("-v,--verbose", raw.verbose,
               "More log output on stderr: -v info, -vv debug, -vvv trace");
}

void add_common(CLI::App& app, RawOptions& raw) {
  app.add_option("--run-id", raw.run_id,
                 "Job name; nodes of different run ids refuse each other\n"
                 "(default: default)")
      ->type_name("ID");
  app.add_option("--profile", raw.profile,
                 "Protocol timing: lan, local (one machine, 10x faster)\n"
                 "or wan (default: lan)")
      ->type_name("NAME");
}

void add_join_options(CLI::App& app, RawOptions& raw) {
  app.add_option("--seed", raw.seeds,
                 "Required. Node(s) to join through: repeat the option or\n"
                 "separate with commas; may name this node itself, so every\n"
                 "node can run the same command (PORT defaults to 29400);\n"
                 "'slurm': the first hosts of the Slurm allocation")
      ->type_name("HOST:PORT")
      ->allow_extra_args(false);
  app.add_option("--nnodes", raw.nnodes,
                 "Required. Exactly N nodes, or MIN to MAX: once MIN have\n"
                 "joined, --last-call admits more up to MAX")
      ->type_name("N|MIN:MAX");
  app.add_option("--listen", raw.listen,
                 "Gossip socket to bind; :PORT means all addresses, HOST an\n"
                 "address or interface name, port 0 picks a free one\n"
                 "(default: 0.0.0.0:29400)")
      ->type_name("[HOST]:PORT");
  app.add_option("--advertise", raw.advertise,
                 "Address peers dial to reach this node, and MASTER_ADDR if\n"
                 "it gets node rank 0 (default: the --listen address, else\n"
                 "the address that routes to the seed)")
      ->type_name("HOST");
  app.add_option("--nproc-per-node", raw.nproc, "Worker processes on this node (default: 1)")
      ->type_name("K");
  app.add_option("--node-rank", raw.node_rank,
                 "Ask for node rank R (0 <= R < MAX); nodes without one fill\n"
                 "the free ranks in natural order of host name")
      ->type_name("R");
  app.add_option("--master-port", raw.master_port,
                 "MASTER_PORT if this node gets node rank 0\n"
                 "(default: a port found free on that node)")
      ->type_name("P");
  app.add_option("--join-timeout", raw.join_timeout,
                 "Give up after this long, naming the missing nodes\n"
                 "(default: 600s)")
      ->type_name("DUR");
  app.add_option("--last-call", raw.last_call,
                 "With MIN:MAX: how long the first round waits for more\n"
                 "nodes once MIN are in (default: 30s); later rounds wait\n"
                 "5 gossip periods (1s with --profile lan), 1 when no node\n"
                 "is new, at most DUR")
      ->type_name("DUR");
  app.add_option("--env-file", raw.env_file,
                 "Write the torchrun variables to PATH; {local_rank} in PATH\n"
                 "writes one file per worker")
      ->type_name("PATH");
  app.add_option("--membership-file", raw.membership_file,
                 "Write the agreed membership to PATH as JSON")
      ->type_name("PATH");
  app.add_option("--format", raw.format,
                 "Output on stdout: env (KEY=VALUE), export (export\n"
                 "KEY=VALUE) or json (default: env); --env-file is written\n"
                 "in export form with export, else in env form")
      ->type_name("FORMAT");
  app.add_option("--max-restarts", raw.max_restarts,
                 "With -- CMD: an elastic job. When a worker fails, every\n"
                 "node stops its workers and the nodes re-form and restart\n"
                 "them, at most K times; a node that dies or arrives (below\n"
                 "the --nnodes MAX) re-forms the group too, without using a\n"
                 "restart (default 0: the job ends at the first failure)")
      ->type_name("K");
  app.add_option("--stay-after-job", raw.stay_after_job,
                 "With --max-restarts, on a node the --seed list names: once\n"
                 "the job finished or failed, join exits with its status and\n"
                 "a process of it stays this long in the background to tell\n"
                 "nodes started late that the job is over (exit 12); 0: none\n"
                 "(default: 60s)")
      ->type_name("DUR");
  app.add_flag("--serve-store", raw.serve_store,
               "Not with -- CMD. After the outputs, keep serving the store\n"
               "until SIGINT/SIGTERM; the variables printed and written\n"
               "get GOSSIP_RDZV_STORE (this node's endpoint)");
  app.add_flag("--watch", raw.watch,
               "Not with -- CMD. An elastic job whose workers something\n"
               "else supervises: stay up and, for each new round (a node\n"
               "died or arrived), rewrite the outputs atomically; exit 0\n"
               "on SIGINT/SIGTERM or when every other node left the job");
  app.add_option("--on-round", raw.on_round,
                 "With --watch: run CMD with /bin/sh -c after each round's\n"
                 "outputs are written, with the round's variables and\n"
                 "GOSSIP_RDZV_ROUND set; a failure is reported, not fatal")
      ->type_name("CMD");
  add_common(app, raw);
  add_key_file(app,
               "The job's key file (gossip-rdzv keygen): messages are\n"
               "authenticated and encrypted, peers without the key are\n"
               "refused; workers get its path as GOSSIP_RDZV_KEY_FILE\n"
               "(default: $GOSSIP_RDZV_KEY_FILE; none: in clear)");
  add_verbosity(app, raw);
}

void add_seed_options(CLI::App& app, RawOptions& raw) {
  app.add_option("--listen", raw.listen, "Required. Socket to bind; :PORT means all addresses")
      ->type_name("[HOST]:PORT");
  app.add_option("--seed", raw.seeds,
                 "The job's whole seed list, as the nodes get it (this seed\n"
                 "included): seeds hand their joiners to each other, so\n"
                 "joiners spread over several seeds form one group")
      ->type_name("HOST:PORT")
      ->allow_extra_args(false);
  add_common(app, raw);
  add_key_file(app,
               "The job's key file (gossip-rdzv keygen): messages are\n"
               "authenticated and encrypted, peers without the key are\n"
               "refused (default: $GOSSIP_RDZV_KEY_FILE; none: in clear)");
  add_verbosity(app, raw);
}

void add_members_options(CLI::App& app, RawOptions& raw) {
  app.add_option("--seed", raw.seeds, "Required. A running node or seed to ask")
      ->type_name("HOST:PORT")
      ->allow_extra_args(false);
  app.add_option("--run-id", raw.run_id, "Run id of that node (default: default)")->type_name("ID");
  add_key_file(app, "The key file of that node's job\n(default: $GOSSIP_RDZV_KEY_FILE)");
  app.add_option("--format", raw.format, "table or json (default: table)")->type_name("FORMAT");
  app.add_option("--timeout", raw.timeout, "How long to wait for an answer (default: 5s)")
      ->type_name("DUR");
}

void add_doctor_options(CLI::App& app, RawOptions& raw) {
  app.add_option("--seed", raw.seeds,
                 "Required. The seed(s) join would be given: repeat the option\n"
                 "or separate with commas (PORT defaults to 29400)")
      ->type_name("HOST:PORT")
      ->allow_extra_args(false);
  app.add_option("--listen", raw.listen,
                 "The --listen join would use: checks the port is free\n"
                 "(default: 0.0.0.0:29400)")
      ->type_name("[HOST]:PORT");
  app.add_option("--master-port", raw.master_port, "Also check that this MASTER_PORT is free")
      ->type_name("P");
  app.add_option("--run-id", raw.run_id, "Run id to ask the seed about (default: default)")
      ->type_name("ID");
  add_key_file(app,
               "The --key-file join would use: the handshake is sealed\n"
               "with it (default: $GOSSIP_RDZV_KEY_FILE)");
  app.add_option("--format", raw.format, "text or json (default: text)")->type_name("FORMAT");
  app.add_option("--timeout", raw.timeout,
                 "How long each connection and handshake may take\n"
                 "(default: 5s)")
      ->type_name("DUR");
}

const char* kDoctorDetails =
    "doctor checks what stops a rendezvous before it starts: the seed name\n"
    "resolves (A and AAAA), the seed accepts TCP connections (refused, timed\n"
    "out: firewall?, no route), it answers as gossip-rdzv of the same run id\n"
    "and version, the local --listen and --master-port are free (and who\n"
    "holds them), and which interface and address route to the seed. Each\n"
    "check prints PASS, WARN, FAIL or SKIP, with the fix; the exit code is 0\n"
    "when nothing blocks the job, else that of the most fundamental failure\n"
    "(11, 4, 3, 6, 7). See docs/troubleshooting.md.\n";

const char* kFooter =
    "Durations: 500ms, 30s, 2m, 1h (a plain number is seconds).\n"
    "Exit codes: 0 ok, 2 usage, 3 listen failed, 4 seed unreachable, 5 join timeout,\n"
    "6 run id mismatch, 7 version mismatch, 8 rank conflict, 9 not admitted, 10 I/O error,\n"
    "11 seed name does not resolve, 12 job already over, 13 job key refused, 70 internal\n"
    "error; with -- CMD: the first failing worker's status (128+N if killed by signal N),\n"
    "126/127 if CMD cannot be run.\n"
    "See docs/cli.md.";

const char* kJoinDetails =
    "join announces this node through the seed(s) and waits until --nnodes\n"
    "nodes agree on the membership. It then prints this node's torchrun\n"
    "variables on stdout (--format), writes --env-file and --membership-file,\n"
    "and keeps answering peers until they know the outcome. With -- CMD ARGS\n"
    "it starts --nproc-per-node copies of CMD with those variables set\n"
    "instead of printing them, and exits with the first failing worker's\n"
    "status. With --serve-store it stays up after the outputs, serving the\n"
    "store to processes started from --env-file, until SIGINT or SIGTERM.\n"
    "With --watch it follows the job's rounds, rewriting the outputs (and\n"
    "running --on-round) for each; see docs/cli.md, \"Watching rounds\".\n";

struct Parser {
  CLI::App app{"Peer-to-peer rendezvous for PyTorch/gloo process groups: no single master.",
               "gossip-rdzv"};
  RawOptions raw;
  CLI::App* join = nullptr;
  CLI::App* seed = nullptr;
  CLI::App* members = nullptr;
  CLI::App* doctor = nullptr;
  CLI::App* keygen = nullptr;
  CLI::App* keys = nullptr;
  /// The actions of keys, in KeysAction's order.
  std::vector<CLI::App*> key_actions;

  Parser() {
    app.formatter(std::make_shared<SynopsisFormatter>());
    app.require_subcommand(0, 1);
    app.footer(kFooter);
    // Listed for --help; parse_split() answers it before CLI11 sees the arguments.
    app.add_flag_callback(
        "--version", [] {}, "Print the version and the protocol version, then exit");
    join = app.add_subcommand(
        "join", "Join a rendezvous; print or write the assignment, or start the workers.");
    seed = app.add_subcommand(
        "seed", "Run a dedicated seed (introduces joiners, never a member) until SIGINT/SIGTERM.");
    members = app.add_subcommand("members", "Ask a running node or seed for its membership table.");
    doctor = app.add_subcommand(
        "doctor", "Check name resolution, reachability, handshake and ports; name what is wrong.");
    for (auto* sub : {join, seed, members, doctor}) {
      sub->formatter(app.get_formatter());
      sub->allow_extras();
      sub->footer(sub == join     ? std::string(kJoinDetails) + "\n" + kFooter
                  : sub == doctor ? std::string(kDoctorDetails) + "\n" + kFooter
                                  : kFooter);
    }
    add_join_options(*join, raw);
    add_seed_options(*seed, raw);
    add_members_options(*members, raw);
    add_doctor_options(*doctor, raw);
    KeyCommands key_commands = add_key_commands(app, raw);
    keygen = key_commands.keygen;
    keys = key_commands.keys;
    key_actions = std::move(key_commands.key_actions);
  }

  /// The command given: a subcommand, or for keys its action (keys itself without one).
  CLI::App* selected() const {
    for (auto* action : key_actions) {
      if (action->parsed()) return action;
    }
    for (auto* sub : {join, seed, members, doctor, keygen, keys}) {
      if (sub->parsed()) return sub;
    }
    return nullptr;
  }
};

std::string usage_error(const std::string& command, const std::string& message) {
  std::string prefix = command.empty() ? "gossip-rdzv" : "gossip-rdzv " + command;
  return prefix + ": error: " + message + "\nRun '" + prefix + " --help' for usage.\n";
}

std::string describe_extras(const std::vector<std::string>& extras, bool join) {
  const std::string& first = extras.front();
  if (first.size() > 1 && first[0] == '-') return "unknown option '" + first + "'";
  if (join) return "unexpected argument '" + first + "' (a command to run goes after '--')";
  return "unexpected argument '" + first + "'";
}

// The text the user gave for the option a ConfigProblem names, so that the message quotes
// it as typed ("--nnodes '5:3'") rather than as stored.
std::string given_text(const RawOptions& raw, const ConfigProblem& problem) {
  const std::map<std::string, const std::string*> given = {
      {"--nnodes", &raw.nnodes},       {"--nproc-per-node", &raw.nproc},
      {"--node-rank", &raw.node_rank}, {"--run-id", &raw.run_id},
      {"--advertise", &raw.advertise}, {"--join-timeout", &raw.join_timeout}};
  const auto found = given.find(problem.option);
  return found == given.end() ? problem.value : *found->second;
}

// The rules every front end shares (config.hpp), worded as the command line's own errors.
void check(const std::optional<ConfigProblem>& problem, const RawOptions& raw) {
  if (!problem) return;
  reject(problem->option.empty() ? problem->field : problem->option, given_text(raw, *problem),
         problem->problem, problem->expected);
}

// Whether --nnodes text names one size ("4", "4:4") rather than a range ("2:4").
bool fixed_size(const std::string& nnodes) {
  const auto colon = nnodes.find(':');
  return colon == std::string::npos || nnodes.substr(0, colon) == nnodes.substr(colon + 1);
}

// --seed slurm (slurm.hpp): the allocation's first hosts at this node's --listen port, and
// --nnodes / --node-rank from Slurm unless given. SLURM_NODEID becomes the rank hint only
// for a job of one size: with a range (--nnodes 2:4) a node may be missing, and the hint of
// a node numbered beyond the nodes present would fail the round (exit 8) for everyone.
RawOptions with_slurm_job(const RawOptions& given) {
  if (given.seeds != std::vector<std::string>{std::string(kSlurmSeed)}) return given;
  RawOptions raw = given;
  Config listen;
  apply_listen(raw.listen.empty() ? ":29400" : raw.listen, listen);
  if (listen.listen_port == 0) {
    reject("--seed", "slurm", "the seeds are the first hosts at this --listen port, which is 0",
           "--listen with a fixed port, the same on every node");
  }
  try {
    const SlurmJob job =
        slurm_job([](const char* name) { return std::getenv(name); }, listen.listen_port);
    raw.seeds = job.seeds;
    if (raw.nnodes.empty()) raw.nnodes = job.nnodes;
    if (raw.node_rank.empty() && job.node_rank && fixed_size(raw.nnodes)) {
      raw.node_rank = *job.node_rank;
    }
  } catch (const std::invalid_argument& error) {
    throw UsageError{error.what()};
  }
  return raw;
}

void check_key_file(const RawOptions& raw, Config& config) {
  if (raw.key_file_given) check_path("--key-file", raw.key_file);
  config.key_file = raw.key_file;
}

CliOptions build_join(const RawOptions& given) {
  const RawOptions raw = with_slurm_job(given);
  CliOptions options;
  options.command = Command::join;
  Config& config = options.config;
  config.seeds = parse_seeds(raw.seeds);
  parse_nnodes(raw.nnodes, config);
  apply_listen(raw.listen.empty() ? ":29400" : raw.listen, config);
  config.advertise_host = raw.advertise;
  config.nproc_per_node = parse_count("--nproc-per-node", raw.nproc, "a whole number >= 1");
  config.run_id = raw.run_id;
  config.node_rank = parse_node_rank(raw.node_rank, config.max_nodes);
  config.master_port = parse_port("--master-port", raw.master_port);
  config.join_timeout = parse_duration_option("--join-timeout", raw.join_timeout);
  config.last_call = parse_duration_option("--last-call", raw.last_call);
  config.timing = parse_profile(raw.profile);
  options.profile = raw.profile;
  check(find_problem(config), raw);
  options.format = parse_format(raw.format.empty() ? "env" : raw.format, Command::join);
  if (raw.env_file_given) check_path("--env-file", raw.env_file);
  if (raw.membership_file_given) check_path("--membership-file", raw.membership_file);
  options.env_file = raw.env_file;
  options.membership_file = raw.membership_file;
  options.serve_store = raw.serve_store;
  options.max_restarts = parse_count("--max-restarts", raw.max_restarts, "a whole number >= 0");
  options.watch = raw.watch;
  if (raw.on_round_given && raw.on_round.find_first_not_of(" \t") == std::string::npos) {
    reject("--on-round", raw.on_round, "empty command",
           "a shell command, e.g. 'systemctl restart trainer'");
  }
  options.on_round = raw.on_round;
  options.config.elastic = options.max_restarts > 0 || options.watch;
  options.stay_after_job = parse_duration_option("--stay-after-job", raw.stay_after_job);
  if (raw.stay_after_job_given && options.max_restarts == 0) {
    throw UsageError{
        "--stay-after-job needs an elastic job ('-- CMD' with --max-restarts K >= 1): only its "
        "end can be told to nodes that start late"};
  }
  check_key_file(raw, config);
  return options;
}

CliOptions build_seed(const RawOptions& raw) {
  CliOptions options;
  options.command = Command::seed;
  if (raw.listen.empty()) {
    throw UsageError{"--listen is required (expected [HOST]:PORT, e.g. :29400)"};
  }
  apply_listen(raw.listen, options.config);
  options.config.dedicated_seed = true;
  if (!raw.seeds.empty()) options.config.seeds = parse_seeds(raw.seeds);
  options.config.run_id = raw.run_id;
  options.config.timing = parse_profile(raw.profile);
  options.profile = raw.profile;
  check(find_problem(options.config), raw);
  check_key_file(raw, options.config);
  return options;
}

CliOptions build_members(const RawOptions& raw) {
  CliOptions options;
  options.command = Command::members;
  const std::string expected = "HOST:PORT, e.g. node0:29400";
  if (raw.seeds.size() != 1) {
    throw UsageError{"--seed must be given exactly once (expected " + expected + ")"};
  }
  options.query_endpoint = protocol::to_string(
      parse_endpoint_option("--seed", raw.seeds.front(), protocol::seed_rules(), expected));
  options.config.run_id = raw.run_id;
  check(find_run_id_problem(raw.run_id), raw);
  options.format = parse_format(raw.format.empty() ? "table" : raw.format, Command::members);
  options.query_timeout = parse_duration_option("--timeout", raw.timeout);
  if (options.query_timeout.count() == 0) {
    reject("--timeout", raw.timeout, "must be longer than 0", "a duration such as 5s");
  }
  check_key_file(raw, options.config);
  return options;
}

CliOptions build_doctor(const RawOptions& raw) {
  CliOptions options;
  options.command = Command::doctor;
  options.config.seeds = parse_seeds(raw.seeds);
  apply_listen(raw.listen.empty() ? ":29400" : raw.listen, options.config);
  options.config.master_port = parse_port("--master-port", raw.master_port);
  options.config.run_id = raw.run_id;
  check(find_problem(options.config), raw);
  options.format = parse_format(raw.format.empty() ? "text" : raw.format, Command::doctor);
  options.query_timeout = parse_duration_option("--timeout", raw.timeout);
  if (options.query_timeout.count() == 0) {
    reject("--timeout", raw.timeout, "must be longer than 0", "a duration such as 5s");
  }
  check_key_file(raw, options.config);
  return options;
}

// What CLI11 gathered that build() needs beyond the bound variables: which options were
// given, and the --key-file of this command (not another command's, see RawOptions).
RawOptions given_options(const Parser& parser, const CLI::App& command) {
  RawOptions raw = parser.raw;
  if (&command == parser.join) {
    raw.env_file_given = command.count("--env-file") > 0;
    raw.membership_file_given = command.count("--membership-file") > 0;
    raw.on_round_given = command.count("--on-round") > 0;
    raw.stay_after_job_given = command.count("--stay-after-job") > 0;
  }
  if (&command == parser.keygen) raw.keygen_path_given = command.count("PATH") > 0;
  if (const CLI::Option* key_file = command.get_option_no_throw("--key-file")) {
    raw.key_file_given = key_file->count() > 0;
    if (raw.key_file_given) raw.key_file = key_file->as<std::string>();
  }
  return raw;
}

CliOptions build(const Parser& parser, const CLI::App& command) {
  const RawOptions raw = given_options(parser, command);
  const auto action = std::find(parser.key_actions.begin(), parser.key_actions.end(), &command);
  if (action != parser.key_actions.end()) {
    CliOptions options =
        build_keys(raw, static_cast<KeysAction>(std::distance(parser.key_actions.begin(), action)));
    options.verbosity = Verbosity{raw.quiet, raw.verbose};
    return options;
  }
  if (&command == parser.keygen) return build_keygen(raw);
  CliOptions options = &command == parser.join      ? build_join(raw)
                       : &command == parser.seed    ? build_seed(raw)
                       : &command == parser.members ? build_members(raw)
                                                    : build_doctor(raw);
  options.verbosity = Verbosity{raw.quiet, raw.verbose};
  if (raw.quiet && raw.verbose > 0) throw UsageError{"--quiet and --verbose exclude each other"};
  return options;
}

// CLI11's own messages for the structural errors it finds, reworded to name the option.
std::string describe_parse_error(const CLI::ParseError& error) {
  std::string text = error.what();
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr) {
    auto colon = text.find(':');
    const std::string name = colon == std::string::npos ? text : text.substr(0, colon);
    // "NAME: At Most 1 required but received 2": the option was repeated.
    if (text.find("At Most") != std::string::npos)
      return name + " was given more than once; give it once";
    return name + " needs a value";
  }
  return text;
}

// Everything after the first "--" is the command to run, untouched by CLI11.
std::pair<std::vector<std::string>, std::vector<std::string>> split_worker_command(
    const std::vector<std::string>& args) {
  auto separator = std::find(args.begin(), args.end(), "--");
  std::vector<std::string> ours(args.begin(), separator);
  std::vector<std::string> worker;
  if (separator != args.end()) worker.assign(separator + 1, args.end());
  return {ours, worker};
}

ParseResult help_result(const std::string& command) {
  return {std::nullopt, 0, help_text(command)};
}

ParseResult error_result(const std::string& command, const std::string& message) {
  return {std::nullopt, 2, usage_error(command, message)};
}

ParseResult parse_split(const std::vector<std::string>& ours,
                        const std::vector<std::string>& worker, bool has_separator) {
  if (ours.empty()) {
    return error_result("", "a command is required: join, seed, members, doctor, keygen or keys");
  }
  const std::string& name = ours.front();
  if (name == "-h" || name == "--help") return help_result("");
  if (name == "--version") return {std::nullopt, 0, version_text()};
  if (name != "join" && name != "seed" && name != "members" && name != "doctor" &&
      name != "keygen" && name != "keys") {
    return error_result("", "unknown command '" + name +
                                "' (expected join, seed, members, doctor, keygen or keys)");
  }
  Parser parser;
  std::vector<std::string> reversed(ours.rbegin(), ours.rend());
  // "keys install": the command a message or a help names.
  const bool keys_action =
      name == "keys" && ours.size() > 1 &&
      std::any_of(parser.key_actions.begin(), parser.key_actions.end(),
                  [&](const CLI::App* action) { return action->get_name() == ours[1]; });
  const std::string full_name = keys_action ? name + " " + ours[1] : name;
  try {
    parser.app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    return help_result(full_name);
  } catch (const CLI::ParseError& error) {
    return error_result(full_name, describe_parse_error(error));
  }
  CLI::App* command = parser.selected();
  if (command == parser.keys) {
    const auto& extras = command->remaining();
    if (!extras.empty() && extras.front().rfind('-', 0) == 0) {
      return error_result(name, describe_extras(extras, false));
    }
    if (!extras.empty()) {
      return error_result(
          name, "unknown action '" + extras.front() + "' (expected install, use, remove or list)");
    }
    return error_result(name, "an action is required: install, use, remove or list");
  }
  if (!command->remaining().empty())
    return error_result(full_name, describe_extras(command->remaining(), command == parser.join));
  if (has_separator && name != "join") {
    return error_result(name, "'-- CMD' is only accepted by join");
  }
  if (has_separator && worker.empty()) {
    return error_result(name, "'--' must be followed by a command to run (CMD ARGS...)");
  }
  if (has_separator && command == parser.join && command->count("--serve-store") > 0) {
    return error_result(name,
                        "--serve-store is for running without '-- CMD': the workers of "
                        "'-- CMD' already get GOSSIP_RDZV_STORE while join serves the store");
  }
  if (has_separator && command == parser.join && command->count("--watch") > 0) {
    return error_result(name,
                        "--watch is for running without '-- CMD': it follows the rounds for "
                        "workers something else supervises (with -- CMD, use --max-restarts)");
  }
  if (command == parser.join && command->count("--on-round") > 0 &&
      command->count("--watch") == 0) {
    return error_result(name,
                        "--on-round needs --watch: without it join exits after the first "
                        "round (with -- CMD, join restarts the workers itself)");
  }
  if (!has_separator && command == parser.join && command->count("--max-restarts") > 0) {
    return error_result(name,
                        "--max-restarts needs '-- CMD': an elastic job restarts the workers "
                        "that join starts");
  }
  try {
    CliOptions options = build(parser, *command);
    options.worker_command = worker;
    return {std::move(options), 0, ""};
  } catch (const UsageError& error) {
    return error_result(full_name, error.message);
  }
}

}  // namespace

ParseResult parse_command_line(const std::vector<std::string>& args) {
  auto [ours, worker] = split_worker_command(args);
  bool has_separator = ours.size() != args.size();
  return parse_split(ours, worker, has_separator);
}

std::string version_text() {
  return std::string("gossip-rdzv ") + GOSSIP_RDZV_VERSION + " (protocol version " +
         std::to_string(protocol::kProtocolVersion) + ")\n";
}

std::string help_text(const std::string& command) {
  Parser parser;
  if (command.empty()) return parser.app.help();
  const auto space = command.find(' ');
  if (space == std::string::npos) return parser.app.get_subcommand(command)->help();
  return parser.app.get_subcommand(command.substr(0, space))
      ->get_subcommand(command.substr(space + 1))
      ->help();
}

}  // namespace gossip_rdzv::cli
