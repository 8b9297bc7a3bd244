#include "commands.hpp"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <string_view>
#include <thread>

#include "doctor.hpp"
#include "elastic.hpp"
#include "gossip_rdzv/env.hpp"
#include "gossip_rdzv/node.hpp"
#include "handoff.hpp"
#include "launcher.hpp"
#include "members_format.hpp"
#include "output/atomic_file.hpp"
#include "output/membership_json.hpp"
#include "progress.hpp"
#include "protocol/endpoint.hpp"
#include "transport/interface.hpp"
#include "transport/keyring.hpp"
#include "watch.hpp"

namespace gossip_rdzv::cli {
namespace {

// How often the progress display refreshes while waiting for the assignment.
constexpr auto kProgressPeriod = std::chrono::milliseconds(250);
// Sent by the waiting thread to the main thread when Node::wait() returns, so the outputs
// are written at once rather than on the next progress tick (up to 250 ms later).
constexpr int kWakeSignal = SIGUSR1;

sigset_t interrupt_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, kWakeSignal);
  return set;
}

// Waits up to `timeout` for SIGINT or SIGTERM; returns it, or 0.
int wait_for_interrupt(std::chrono::milliseconds timeout) {
  sigset_t signals = interrupt_signals();
  timespec wait_time{static_cast<std::time_t>(timeout.count() / 1000),
                     static_cast<long>((timeout.count() % 1000) * 1'000'000)};
  int received = sigtimedwait(&signals, nullptr, &wait_time);
  return received > 0 ? received : 0;
}

// The same, but our own wake-up (kWakeSignal, from wait_with_progress) is no interrupt.
int wait_for_stop_signal(std::chrono::milliseconds timeout) {
  const int signal = wait_for_interrupt(timeout);
  return signal == kWakeSignal ? 0 : signal;
}

// The port of the node's endpoint, which names its stay (handoff.hpp); 0 if unknown.
std::uint16_t port_of(const Node& node) {
  const auto endpoint = protocol::parse_endpoint(node.endpoint(), nullptr);
  return endpoint ? endpoint->port : 0;
}

[[noreturn]] void exit_interrupted(int signal) {
  // On a terminal the line starts below the "^C" it echoed; into a file or pipe, nothing
  // comes before it.
  std::fprintf(stderr, "%sgossip-rdzv: interrupted by %s, leaving the rendezvous\n",
               ::isatty(STDERR_FILENO) == 1 ? "\n" : "", strsignal(signal));
  // The node's wait() cannot be cancelled from here; exiting at once is safe because
  // nothing was committed yet and the OS closes the sockets. Peers see us as dead.
  std::_Exit(128 + signal);
}

// Node::wait() blocks; it runs in a thread of its own so that this thread can draw
// progress and notice Ctrl-C meanwhile.
Assignment wait_with_progress(Node& node, const CliOptions& options,
                              const std::function<Assignment()>& wait) {
  std::optional<Assignment> assignment;
  std::exception_ptr failure;
  std::atomic<bool> done{false};
  const pthread_t main_thread = pthread_self();
  std::thread waiter([&] {
    try {
      assignment = wait();
    } catch (...) {
      failure = std::current_exception();
    }
    done = true;
    pthread_kill(main_thread, kWakeSignal);
  });
  ProgressDisplay display(stderr, ProgressDisplay::mode_for_stderr(options.verbosity.quiet));
  while (!done) {
    display.update(node.progress(), ProgressDisplay::Clock::now());
    if (int signal = wait_for_interrupt(kProgressPeriod); signal != 0 && signal != kWakeSignal) {
      display.finish();
      waiter.detach();
      exit_interrupted(signal);
    }
  }
  waiter.join();
  display.finish();
  if (failure) std::rethrow_exception(failure);
  return *assignment;
}

std::optional<std::string> socket_ifname(const Assignment& assignment) {
  return transport::interface_for_address(assignment.me().host);
}

// The store's variables (docs/store.md): the agent, and with --key-file the key file its
// requests must be sealed with, as an absolute path since a worker may start elsewhere.
void add_store_env(EnvVars& env, const Assignment& assignment, const CliOptions& options) {
  env.emplace_back("GOSSIP_RDZV_STORE", assignment.me().endpoint);
  if (!options.config.key_file.empty()) {
    env.emplace_back(
        "GOSSIP_RDZV_KEY_FILE",
        std::filesystem::absolute(options.config.key_file).lexically_normal().string());
  }
}

// --serve-store: processes started from the env output reach the store through this agent,
// as the workers of `-- CMD` do (worker_specs).
EnvVars with_store(EnvVars env, const Assignment& assignment, const CliOptions& options) {
  if (options.serve_store) add_store_env(env, assignment, options);
  return env;
}

constexpr std::string_view kLocalRankPlaceholder = "{local_rank}";

// Every output path is checked before this node joins: a node that could only fail after
// the others agreed would leave their workers waiting in init_process_group.
void check_output_paths(const CliOptions& options) {
  if (!options.env_file.empty()) {
    for (const auto& path : env_file_paths(options.env_file, options.config.nproc_per_node)) {
      output::check_output_path(path, "env file", "--env-file");
    }
  }
  if (!options.membership_file.empty()) {
    output::check_output_path(options.membership_file, "membership file", "--membership-file");
  }
}

// write_env_files (include/gossip_rdzv/env.hpp) with the variables of with_store().
void write_cli_env_files(const Assignment& assignment, const CliOptions& options,
                         const std::optional<std::string>& ifname) {
  const std::string& path_template = options.env_file;
  auto format = options.format == OutputFormat::export_ ? EnvFormat::export_ : EnvFormat::env;
  if (!options.serve_store) {
    write_env_files(path_template, assignment, format, ifname);
    return;
  }
  if (path_template.find(kLocalRankPlaceholder) == std::string::npos) {
    output::write_file_atomically(
        path_template,
        format_env(with_store(node_env(assignment, ifname), assignment, options), format),
        "env file", "--env-file");
    return;
  }
  const auto paths = env_file_paths(path_template, assignment.me().nproc);
  for (std::uint32_t local_rank = 0; local_rank < paths.size(); ++local_rank) {
    output::write_file_atomically(
        paths[local_rank],
        format_env(with_store(torch_env(assignment, local_rank, ifname), assignment, options),
                   format),
        "env file", "--env-file");
  }
}

void print_assignment(const Assignment& assignment, const CliOptions& options) {
  if (!options.verbosity.quiet) std::cerr << assignment_table(assignment) << std::flush;
  // The workers' own output goes to stdout; variables printed there would be mixed in.
  if (!options.worker_command.empty()) return;
  auto ifname = socket_ifname(assignment);
  switch (options.format) {
    case OutputFormat::json:
      std::cout << membership_json(assignment);
      break;
    case OutputFormat::export_:
      std::cout << format_env(with_store(node_env(assignment, ifname), assignment, options),
                              EnvFormat::export_);
      break;
    default:
      std::cout << format_env(with_store(node_env(assignment, ifname), assignment, options),
                              EnvFormat::env);
  }
  std::cout << std::flush;
}

void write_files(const Assignment& assignment, const CliOptions& options) {
  if (!options.env_file.empty()) {
    write_cli_env_files(assignment, options, socket_ifname(assignment));
  }
  if (!options.membership_file.empty()) {
    write_membership_file(options.membership_file, assignment);
  }
}

std::vector<WorkerSpec> worker_specs(const Assignment& assignment, const CliOptions& options) {
  auto ifname = socket_ifname(assignment);
  std::vector<WorkerSpec> specs;
  for (std::uint32_t local_rank = 0; local_rank < assignment.me().nproc; ++local_rank) {
    EnvVars env = torch_env(assignment, local_rank, ifname);
    // The store (docs/store.md): workers reach it through this agent's gossip socket.
    add_store_env(env, assignment, options);
    env.emplace_back("TORCHELASTIC_MAX_RESTARTS", std::to_string(options.max_restarts));
    specs.push_back(WorkerSpec{options.worker_command, std::move(env)});
  }
  return specs;
}

// Runs on the main thread, which lives as long as the process: the kernel sends the
// workers' parent death signal when the thread that started them ends (launcher.hpp).
int run_workers(const Assignment& assignment, const CliOptions& options) {
  Launcher launcher;
  const int status =
      launch_and_wait(launcher, worker_specs(assignment, options), [] { return false; });
  if (status != 0 && launcher.exec_error().empty() && !launcher.received_signal()) {
    std::fprintf(stderr, "gossip-rdzv: a worker failed with status %d; stopped the others\n",
                 status);
  }
  return status;
}

// --serve-store: the outputs are written; the store stays up (the node's thread serves it)
// until we are told to stop.
void serve_store_until_interrupted(const Assignment& assignment, const CliOptions& options) {
  if (!options.verbosity.quiet) {
    std::fprintf(stderr,
                 "gossip-rdzv: serving the store on %s (GOSSIP_RDZV_STORE) until SIGINT or "
                 "SIGTERM\n",
                 assignment.me().endpoint.c_str());
  }
  int signal = 0;
  while (signal == 0 || signal == kWakeSignal) {
    signal = wait_for_interrupt(std::chrono::seconds(3600));
  }
  if (!options.verbosity.quiet) {
    std::fprintf(stderr, "gossip-rdzv: stopped serving the store (%s)\n", strsignal(signal));
  }
}

// An elastic job is over and nodes that start late ask this one (a seed): join's caller
// gets the job's status now, and this process, detached (handoff.hpp), tells those nodes
// that the job is over until --stay-after-job has passed, a signal ends it or a new node
// on this machine takes its port.
void stay_after_job(Node& node, int status, const CliOptions& options, Handoff& handoff) {
  if (options.stay_after_job.count() == 0 || !node.listed_as_seed()) return;
  if (!options.verbosity.quiet) {
    std::fprintf(stderr,
                 "gossip-rdzv: exiting with status %d; a process of this seed node (pid %d) "
                 "stays %g s in the background to tell nodes started late that the job is over "
                 "(--stay-after-job)\n",
                 status, static_cast<int>(getpid()),
                 std::chrono::duration<double>(options.stay_after_job).count());
  }
  if (!handoff.ready(port_of(node), status)) return;
  const auto until = std::chrono::steady_clock::now() + options.stay_after_job;
  for (auto now = std::chrono::steady_clock::now(); now < until;
       now = std::chrono::steady_clock::now()) {
    if (wait_for_stop_signal(std::chrono::ceil<std::chrono::milliseconds>(until - now)) != 0)
      return;
  }
}

// Outputs and workers run while the node keeps serving peers in its thread; whatever
// happens to them, finish() lets the other members learn the outcome before we leave.
int after_commit(Node& node, const Assignment& assignment, const CliOptions& options,
                 Handoff& handoff) {
  int status = 0;
  try {
    // Files first: when one cannot be written nothing reaches stdout, so
    // `eval "$(gossip-rdzv join ... --format export)"` never uses a failed outcome.
    write_files(assignment, options);
    print_assignment(assignment, options);
    if (!options.worker_command.empty() && options.config.elastic) {
      ElasticHooks hooks;
      hooks.workers = [&](const Assignment& a) { return worker_specs(a, options); };
      hooks.next_round = [&](const Assignment& previous) {
        Assignment next =
            wait_with_progress(node, options, [&] { return node.wait_next(previous); });
        write_files(next, options);  // each round's membership, as --watch does
        return next;
      };
      hooks.show = [&](const Assignment& a) {
        if (!options.verbosity.quiet) std::cerr << assignment_table(a) << std::flush;
      };
      hooks.wait_signal = wait_for_stop_signal;
      const ElasticEnd end = run_elastic(node, assignment, options, hooks);
      status = end.status;
      if (end.job_over) stay_after_job(node, status, options, handoff);
    } else if (options.watch) {
      WatchHooks hooks;
      hooks.publish = [&](const Assignment& a) {
        write_files(a, options);
        print_assignment(a, options);
      };
      hooks.next_round = [&](const Assignment& previous) {
        return wait_with_progress(node, options, [&] { return node.wait_next(previous); });
      };
      hooks.wait_signal = wait_for_stop_signal;
      hooks.round_env = [&](const Assignment& a) {
        return with_store(node_env(a, socket_ifname(a)), a, options);
      };
      status = run_watch(node, assignment, options, hooks);
    } else if (!options.worker_command.empty()) {
      status = run_workers(assignment, options);
    } else if (options.serve_store) {
      serve_store_until_interrupted(assignment, options);
    } else {
      // The outcome is out: the caller may go on.
      handoff.ready(port_of(node));
    }
  } catch (...) {
    node.finish();
    throw;
  }
  node.finish();
  return status;
}

}  // namespace

void block_supervised_signals() {
  sigset_t signals = interrupt_signals();
  sigaddset(&signals, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
}

int run_join(const CliOptions& options) {
  if (!options.verbosity.quiet) {
    for (const auto& warning : options.warnings) {
      std::fprintf(stderr, "gossip-rdzv: warning: %s\n", warning.c_str());
    }
  }
  check_output_paths(options);
  // Before the node starts, as the output paths: Keyring::load_file's Error(usage) names the
  // file, the line and the fix.
  if (!options.config.key_file.empty()) {
    (void)transport::Keyring::load_file(options.config.key_file);
  }
  // Only the outcome is asked for: the user's next command need not wait for our stay.
  // So does an elastic job's seed node, once the job is over (--stay-after-job).
  Handoff handoff;
  const bool only_outcome =
      options.worker_command.empty() && !options.serve_store && !options.watch;
  const bool may_stay = !options.worker_command.empty() && options.config.elastic &&
                        options.stay_after_job.count() > 0;
  if (only_outcome || may_stay) {
    if (auto status = handoff.split()) return *status;
  }
  auto node = std::make_unique<Node>(options.config);
  try {
    node->start();
  } catch (const Error& error) {
    // Restarted on the port of a node whose stay still runs (handoff.hpp): it yields.
    const std::uint16_t port = options.config.listen_port;
    if (error.code() != ErrorCode::listen_failed || port == 0 ||
        !end_previous_stay(port, std::chrono::seconds(5)))
      throw;
    if (!options.verbosity.quiet) {
      std::fprintf(stderr,
                   "gossip-rdzv: port %u was held by this machine's previous node on it, "
                   "still answering late starters; ended that and took the port\n",
                   static_cast<unsigned>(port));
    }
    // The stay's exit closes its sockets, but the kernel may release the port a moment
    // after the stay's end is visible to us: try again until it does (bounded).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (true) {
      node = std::make_unique<Node>(options.config);
      try {
        node->start();
        break;
      } catch (const Error& again) {
        if (again.code() != ErrorCode::listen_failed ||
            std::chrono::steady_clock::now() >= deadline)
          throw;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  Assignment assignment = wait_with_progress(*node, options, [&] { return node->wait(); });
  int status = after_commit(*node, assignment, options, handoff);
  node->stop();
  return status;
}

int run_seed(const CliOptions& options) {
  Node node(options.config);
  node.start();
  std::printf("seed listening on %s (run id %s)\n", node.endpoint().c_str(),
              options.config.run_id.c_str());
  std::fflush(stdout);
  int signal = 0;
  while (signal == 0 || signal == kWakeSignal)
    signal = wait_for_interrupt(std::chrono::seconds(3600));
  node.stop();
  if (!options.verbosity.quiet)
    std::fprintf(stderr, "gossip-rdzv: seed stopped (%s)\n", strsignal(signal));
  return 0;
}

int run_members(const CliOptions& options) {
  auto members = query_members(options.query_endpoint, options.config.run_id, options.query_timeout,
                               options.config.key_file);
  std::cout << (options.format == OutputFormat::json ? members_json(members)
                                                     : members_table(members))
            << std::flush;
  return 0;
}

int run_doctor(const CliOptions& options) {
  DoctorOptions doctor;
  doctor.seeds = options.config.seeds;
  doctor.listen_host = options.config.listen_host;
  doctor.listen_port = options.config.listen_port;
  doctor.master_port = options.config.master_port;
  doctor.run_id = options.config.run_id;
  doctor.timeout = options.query_timeout;
  // Read first: a key file that cannot be read stops doctor as it would stop join (exit 2).
  if (!options.config.key_file.empty()) {
    const auto keyring = transport::Keyring::load_file(options.config.key_file);
    doctor.key_file = options.config.key_file;
    doctor.key_id = transport::key_id_text(keyring->primary_id());
    doctor.key_count = keyring->size();
  }
  SystemProbe probe(options.config.key_file);
  const DoctorReport report = gossip_rdzv::cli::run_doctor(doctor, probe);
  std::cout << (options.format == OutputFormat::json ? doctor_json(report) : doctor_text(report))
            << std::flush;
  return report.exit_code();
}

}  // namespace gossip_rdzv::cli
