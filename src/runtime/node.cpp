// gossip_rdzv::Node: checks the config (validate(), config.hpp), resolves seeds
// (seed_resolver.hpp), binds the transport, fills the core's config, starts the runtime with
// the store beside it (store_sidecar.hpp) and turns the runtime's outcome into an Assignment
// or an Error that names the cause and the fix (failure_report.hpp). query_members lives in
// members_query.cpp.
#include "gossip_rdzv/node.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <random>
#include <utility>
#include <variant>

#include "protocol/codec.hpp"
#include "protocol/core.hpp"
#include "protocol/endpoint.hpp"
#include "runtime/failure_report.hpp"
#include "runtime/runtime.hpp"
#include "runtime/seed_resolver.hpp"
#include "runtime/store_sidecar.hpp"
#include "transport/keyring.hpp"
#include "transport/name_resolution.hpp"
#include "transport/port_holder.hpp"
#include "transport/socket_address.hpp"
#include "transport/tcp_bind.hpp"
#include "transport/tcp_probe.hpp"
#include "transport/zmq_transport.hpp"

namespace gossip_rdzv {

std::uint32_t Progress::alive() const {
  return static_cast<std::uint32_t>(std::count_if(
      members.begin(), members.end(), [](const MemberProgress& m) { return m.status == "alive"; }));
}

namespace {

using Clock = std::chrono::steady_clock;

// Seed resolution (seed_resolver.hpp) and the texts of failures (failure_report.hpp).
using runtime::choose_advertise_host;
using runtime::decisive_refusals;
using runtime::endpoint_text;
using runtime::explain_silent_seeds;
using runtime::join_timeout_error;
using runtime::not_admitted_error;
using runtime::progress_rows;
using runtime::reachable_only_one_way;
using runtime::refusal_error;
using runtime::refused_by_every_seed;
using runtime::refused_by_seeds_of_another_job;
using runtime::refused_keys_text;

/// The committed assignment of the round the node is in (none while a new round forms).
std::optional<Assignment> current_assignment(const runtime::RuntimeState& state) {
  if (state.assignment && state.assignment->round == state.round) return state.assignment;
  return std::nullopt;
}

/// Whether the job moved past `round` (Node::round_over).
bool past_round(const runtime::RuntimeState& state, std::uint32_t round) {
  return state.round > round || state.job_ended.has_value();
}
using runtime::resolve_seeds;
using runtime::seconds_text;
using runtime::seed_list_text;
using runtime::SeedAddress;
using runtime::sizes_text;
using runtime::told_unreachable_text;
using runtime::unanswered_at;
using runtime::without_self;
using transport::is_ipv6;

std::uint64_t random_u64() {
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

std::uint16_t choose_master_port(const Config& config, const std::string& advertise_host,
                                 spdlog::logger& log) {
  const std::string any = is_ipv6(advertise_host) ? "::" : "0.0.0.0";
  const auto result = transport::try_bind_tcp(any, config.master_port);
  if (const auto* port = std::get_if<std::uint16_t>(&result)) return *port;
  const int error = std::get<int>(result);
  if (config.master_port == 0) {
    throw Error(ErrorCode::listen_failed,
                std::string("cannot find a free port for MASTER_PORT: ") + std::strerror(error));
  }
  log.warn(
      "master port {} is already in use {}: if this node gets node rank 0 the workers "
      "cannot start their process group; stop that process or pick another --master-port",
      config.master_port, transport::describe_port_holder(config.master_port));
  return config.master_port;
}

}  // namespace

// ---- Node ------------------------------------------------------------------------------------

struct Node::Impl {
  Config config;
  std::vector<SeedAddress> seeds;  ///< resolved, without this node: what the core dials
  bool listed_as_seed = false;     ///< the seed list named this node
  std::unique_ptr<runtime::Runtime> runtime;
  std::string endpoint;
  Clock::time_point started_at;
  std::mutex lifecycle;  ///< serialises start() and stop()

  runtime::Runtime& running(const char* call) const {
    if (!runtime) {
      throw Error(ErrorCode::usage, std::string("Node::") + call + "() needs start() first");
    }
    return *runtime;
  }
  protocol::CoreConfig core_config(const std::string& advertise_host) const;
  Error timeout_error(const runtime::RuntimeState& state) const;
  /// The assignment of the current round, or the Error that ended the wait for it.
  Assignment outcome_of(const runtime::RuntimeState& state) const;
};

protocol::CoreConfig Node::Impl::core_config(const std::string& advertise_host) const {
  auto log = runtime::logger();
  protocol::CoreConfig core;
  core.self.endpoint = endpoint;
  core.self.node_id = random_u64();
  core.self.generation = static_cast<std::uint64_t>(
      std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  core.self.host = advertise_host;
  core.self.hostname =
      config.hostname.empty() ? transport::local_hostname().value_or("unknown") : config.hostname;
  core.self.nproc = config.nproc_per_node;
  core.self.rank_hint = config.node_rank;
  core.self.master_port =
      config.dedicated_seed ? 0 : choose_master_port(config, advertise_host, *log);
  core.self.min_nodes = config.min_nodes;
  core.self.max_nodes = config.max_nodes;
  core.run_id = config.run_id;
  for (const auto& seed : seeds) core.seeds.push_back(seed.endpoint);
  // The core must know it is one of the seeds: a member seed meets every other seed and
  // hands its joiners to the collectors (docs/protocol.md, "Several seeds"). It removes its
  // own endpoint again.
  if (listed_as_seed) core.seeds.push_back(endpoint);
  core.min_nodes = config.min_nodes;
  core.max_nodes = config.max_nodes;
  core.timing = config.timing;
  core.last_call = config.last_call;
  core.rng_seed = config.rng_seed != 0 ? config.rng_seed : random_u64();
  core.seed_only = config.dedicated_seed;
  core.elastic = config.elastic;
  return core;
}

Error Node::Impl::timeout_error(const runtime::RuntimeState& state) const {
  const auto refusals = decisive_refusals(state);
  if (!state.joined && !refusals.empty()) return refusal_error(refusals.front(), config.run_id);
  const std::string told = told_unreachable_text(state, endpoint);
  if (!state.joined && !told.empty()) {
    // The seed answered, but only to say that its answers cannot reach us.
    return Error(ErrorCode::seed_unreachable, "no seed let this node join within " +
                                                  seconds_text(config.join_timeout) + ": " + told);
  }
  if (!state.joined) {
    // An elastic job that ended leaves nothing listening once its seeds' stay is over.
    const std::string ended =
        config.elastic ? ". If a job of this run id already ran, it may have ended: its seed "
                         "nodes tell late starters so only for a while after the end "
                         "(join --stay-after-job)"
                       : "";
    return Error(ErrorCode::seed_unreachable,
                 "no seed answered within " + seconds_text(config.join_timeout) + ": " +
                     explain_silent_seeds(seeds, state.seeds_that_greeted) + ended);
  }
  std::string notes = told;
  for (const std::string& note :
       {refused_runs_text(state, config.run_id), refused_keys_text(state)}) {
    if (!note.empty()) notes += (notes.empty() ? "" : ". ") + note;
  }
  return join_timeout_error(config, runtime->snapshot(), runtime->now(), notes);
}

Node::Node(Config config) : impl_(std::make_unique<Impl>()) {
  validate(config);
  impl_->config = std::move(config);
}

Node::~Node() {
  stop();
}

void Node::start() {
  std::lock_guard lock(impl_->lifecycle);
  if (impl_->runtime) throw Error(ErrorCode::usage, "Node::start() was already called");
  const Config& config = impl_->config;
  // First, so that a key file that cannot be read is reported at once (Error(usage)), not
  // after the seeds were resolved.
  std::shared_ptr<const transport::Keyring> keyring;
  if (!config.key_file.empty()) keyring = transport::Keyring::load_file(config.key_file);
  auto log = runtime::logger();
  if (keyring) {
    log->info("messages are sealed with key {} ({} key(s) in {})",
              transport::key_id_text(keyring->primary_id()), keyring->size(), config.key_file);
  }
  for (const auto& warning : config_warnings(config)) log->warn("{}", warning);
  auto resolved = resolve_seeds(config, *log);
  // 0.0.0.0 (the default) takes IPv4 only: on an IPv6-only network the peers could not dial
  // us. When every seed resolves only to IPv6 (resolve_seeds prefers IPv4), bind [::], which
  // takes both families, so such a network works without --listen [::]:PORT.
  if (config.listen_host == "0.0.0.0" && !resolved.empty() &&
      std::all_of(resolved.begin(), resolved.end(),
                  [](const SeedAddress& seed) { return is_ipv6(seed.ip); })) {
    log->info("every seed resolves only to IPv6 ({}): listening on [::] instead of 0.0.0.0",
              seed_list_text(resolved));
    impl_->config.listen_host = "::";
  }
  transport::TransportOptions options;
  options.max_message_bytes = static_cast<std::int64_t>(protocol::kMaxMessageBytes);
  // A seed that starts a little after its joiners is normal; ZeroMQ's first reconnect should
  // not be slower than the protocol's own first join retry (20 ms with the local profile).
  options.reconnect_initial =
      std::min(options.reconnect_initial, config.timing.join_backoff_initial);
  // A peer that was down (a listed seed that starts late, a node back on its endpoint) is
  // dialled again only on ZeroMQ's reconnect schedule, and what we send it, join replies
  // included, waits until then: with ZeroMQ's 5 s cap a seed that arrived in a running job
  // heard nothing for up to 5 s (docs/performance.md). One probe interval is as often as
  // the protocol itself would try it; a refused dial costs a SYN and a RST.
  options.reconnect_max = std::min(options.reconnect_max, config.timing.probe_interval);
  options.keyring = std::move(keyring);
  auto transport =
      std::make_unique<transport::ZmqTransport>(config.listen_host, config.listen_port, options);
  const std::uint16_t port = transport->bound_port();
  if (config.key_file.empty() && !transport::is_loopback(config.listen_host)) {
    log->warn(
        "listening on {} without a job key: anyone who can reach port {} and knows the run id "
        "can join this job, vote in it and read or write its store. Give every node the same "
        "--key-file (gossip-rdzv keygen; docs/security.md)",
        config.listen_host, port);
  }
  const std::string advertise_host = choose_advertise_host(config, resolved, *log);
  impl_->endpoint = endpoint_text(advertise_host, port);
  const std::size_t listed = resolved.size();
  impl_->seeds = without_self(std::move(resolved), port, advertise_host);
  impl_->listed_as_seed = impl_->seeds.size() < listed;
  auto core_config = impl_->core_config(advertise_host);  // may throw: nothing runs yet
  log->info("listening as {} (run '{}', --nnodes {}), seeds: {}", impl_->endpoint, config.run_id,
            sizes_text(config.min_nodes, config.max_nodes), seed_list_text(impl_->seeds));
  impl_->started_at = Clock::now();
  auto store =
      config.dedicated_seed ? nullptr : runtime::make_store_sidecar(impl_->endpoint, config.run_id);
  impl_->runtime = std::make_unique<runtime::Runtime>(std::move(core_config), std::move(transport),
                                                      std::move(store));
  // Rotation (`gossip-rdzv keys`): the loop re-reads the file when it changes.
  if (!config.key_file.empty()) impl_->runtime->watch_key_file(config.key_file);
  impl_->runtime->start();
}

Assignment Node::wait() {
  runtime::Runtime& runtime = impl_->running("wait");
  if (impl_->config.dedicated_seed) {
    throw Error(ErrorCode::usage, "Node::wait() on a dedicated seed: it never joins a round");
  }
  const std::size_t seed_count = impl_->seeds.size();
  const Clock::time_point deadline = impl_->started_at + impl_->config.join_timeout;
  auto over = [](const runtime::RuntimeState& s) {
    return current_assignment(s).has_value() || s.fatal || s.not_admitted || s.job_ended ||
           s.loop_failure || s.stopped;
  };
  runtime.wait_until(
      [&](const runtime::RuntimeState& s) {
        return over(s) || refused_by_every_seed(s, seed_count);
      },
      deadline);
  if (!over(runtime.state()) && refused_by_seeds_of_another_job(runtime.state(), seed_count)) {
    // The refusal may come from the stay of a previous job on a seed's machine, still
    // answering on the port until it ends or the new node there ends it (one stay at most):
    // the join goes on meanwhile, and only a refusal that outlasts that is final.
    const auto& timing = impl_->config.timing;
    const Clock::time_point settled =
        std::min(deadline, Clock::now() + std::max(timing.commit_grace, timing.join_backoff_max));
    runtime.wait_until([&](const runtime::RuntimeState& s) { return over(s) || s.joined; },
                       settled);
    if (runtime.state().joined) runtime.wait_until(over, deadline);
  }
  return impl_->outcome_of(runtime.state());
}

Assignment Node::Impl::outcome_of(const runtime::RuntimeState& state) const {
  if (auto current = current_assignment(state)) return *current;
  if (state.fatal) throw Error(state.fatal->code, state.fatal->message);
  if (state.job_ended)
    throw Error(ErrorCode::job_over, runtime::describe_job_end(*state.job_ended));
  if (state.not_admitted) throw not_admitted_error(config, *state.not_admitted);
  if (state.stopped) throw Error(ErrorCode::usage, "Node::stop() was called during wait()");
  if (state.loop_failure) {
    throw Error(ErrorCode::internal, "the gossip-rdzv event loop failed: " + *state.loop_failure);
  }
  throw timeout_error(state);
}

std::optional<Assignment> Node::try_assignment() const {
  if (!impl_->runtime) return std::nullopt;
  return current_assignment(impl_->runtime->state());
}

bool Node::round_over(const Assignment& current) const {
  if (!impl_->runtime) return false;
  return past_round(impl_->runtime->state(), current.round);
}

std::optional<std::string> Node::round_change() const {
  if (!impl_->runtime) return std::nullopt;
  const runtime::RuntimeState state = impl_->runtime->state();
  if (!state.round_started) return std::nullopt;
  return "round " + std::to_string(state.round_started->round) + ": " + state.round_change;
}

Assignment Node::wait_next(const Assignment& previous) {
  runtime::Runtime& runtime = impl_->running("wait_next");
  runtime.wait_until(
      [&](const runtime::RuntimeState& s) {
        auto current = current_assignment(s);
        return (current && current->round > previous.round) || s.fatal || s.not_admitted ||
               s.job_ended || s.loop_failure || s.stopped;
      },
      std::chrono::steady_clock::now() + impl_->config.join_timeout);
  runtime::RuntimeState state = runtime.state();
  if (auto current = current_assignment(state); current && current->round > previous.round)
    return *current;
  state.assignment.reset();  // the previous round's is no answer: say why none came
  return impl_->outcome_of(state);
}

bool Node::failure_explained_by_departure(const Assignment& current) {
  if (!impl_->runtime) return false;
  if (round_over(current)) return true;
  runtime::Runtime& runtime = *impl_->runtime;
  const Timing& timing = impl_->config.timing;
  auto moved_on = [&](const runtime::RuntimeState& s) {
    return past_round(s, current.round) || s.stopped;
  };
  // First a message from another member sent after the failure: a node that was frozen, or
  // cut off, reads the old news it missed at once, but learns that the job moved on without
  // it only from what the others say now. Members gossip every gossip interval, so this
  // costs a running job about that much.
  const protocol::Time failed_at = runtime.now();
  const auto news_deadline = Clock::now() + timing.probe_interval + timing.probe_timeout;
  auto heard_since_failure = [&] {
    const protocol::Snapshot snapshot = runtime.snapshot();
    return std::any_of(snapshot.members.begin(), snapshot.members.end(), [&](const auto& row) {
      return row.ann.endpoint != impl_->endpoint && row.last_heard > failed_at;
    });
  };
  while (!heard_since_failure() && Clock::now() < news_deadline) {
    if (runtime.wait_until(moved_on, Clock::now() + std::chrono::milliseconds(20))) break;
  }
  if (round_over(current)) return true;
  // Each probe is a local connect on a LAN; the budget bounds a job of many members whose
  // packets are dropped (a firewall) rather than refused. A member the table holds dead left
  // on purpose (its workers finished) or its death already ended the round: not probed.
  const protocol::Snapshot snapshot = runtime.snapshot();
  auto held_dead = [&](const std::string& endpoint) {
    return std::any_of(snapshot.members.begin(), snapshot.members.end(), [&](const auto& row) {
      return row.ann.endpoint == endpoint && row.status == protocol::MemberStatus::dead;
    });
  };
  const auto probe_deadline = Clock::now() + timing.probe_interval;
  bool departed = false;
  for (const NodeEntry& member : current.nodes) {
    if (member.endpoint == current.me().endpoint || held_dead(member.endpoint)) continue;
    if (Clock::now() >= probe_deadline) break;
    const auto endpoint = protocol::parse_endpoint(member.endpoint, nullptr);
    if (!endpoint) continue;
    const auto probe = transport::probe_tcp(endpoint->host, endpoint->port, timing.probe_timeout);
    // Refused: its agent is gone and the host is up. No answer or no route: the host is
    // down or cut off. A frozen process still has the kernel accept for it.
    if (probe.outcome == transport::ProbeOutcome::refused ||
        probe.outcome == transport::ProbeOutcome::timed_out ||
        probe.outcome == transport::ProbeOutcome::unreachable) {
      departed = true;
      break;
    }
  }
  if (!departed) return round_over(current);
  // Until the membership decides: a few probe periods to reach it (round-robin probing
  // reaches every member about once a period; in a small job each prober's turn comes less
  // often) with the indirect probes' timeout, and the longest suspicion, slowed as this
  // node's local health says; three times that, as a bound for a loaded host, not an
  // estimate (it is reached only when no death is declared).
  const std::size_t members = current.nodes.size();
  const std::uint32_t slowdown = snapshot.peak_local_health + 1;
  const auto declared =
      3 * slowdown *
      ((std::min<std::size_t>(members, 4) + 1) * (timing.probe_interval + timing.probe_timeout) +
       timing.suspicion_timeout_max(members));
  runtime.wait_until(moved_on, Clock::now() + declared);
  return round_over(current);
}

bool Node::report_workers_failed() {
  return impl_->runtime && impl_->runtime->request_next_round();
}

void Node::report_workers_finished() {
  if (impl_->runtime) impl_->runtime->leave();
}

void Node::report_job_failed(std::uint32_t rank, int status) {
  if (impl_->runtime) impl_->runtime->abort(rank, status);
}

std::optional<JobFailure> Node::job_failure() const {
  if (!impl_->runtime) return std::nullopt;
  const auto ended = impl_->runtime->state().job_ended;
  if (!ended || !ended->failed) return std::nullopt;
  return JobFailure{ended->peer, ended->hostname, ended->rank, ended->status,
                    runtime::describe_job_end(*ended)};
}

bool Node::wait_job_finished(milliseconds timeout) {
  if (!impl_->runtime) return false;
  return impl_->runtime->wait_until(
      [](const runtime::RuntimeState& s) { return s.job_finished || s.stopped; },
      std::chrono::steady_clock::now() + timeout);
}

Progress Node::progress() const {
  Progress progress;
  progress.min_nodes = impl_->config.min_nodes;
  progress.max_nodes = impl_->config.max_nodes;
  if (!impl_->runtime) return progress;
  const protocol::Snapshot snapshot = impl_->runtime->snapshot();
  progress.joined = snapshot.joined;
  progress.committed = snapshot.commit_reported;
  progress.members = progress_rows(snapshot, impl_->runtime->now());
  progress.endpoint = impl_->endpoint;
  for (auto& row : progress.members) {
    const auto* peer = unanswered_at(snapshot, row.endpoint);
    row.unreachable = peer != nullptr && reachable_only_one_way(*peer);
    if (row.endpoint == progress.endpoint || !row.last_heard) continue;
    progress.last_heard = std::min(progress.last_heard.value_or(*row.last_heard), *row.last_heard);
  }
  for (const auto& report : impl_->runtime->state().unreachable_reports) {
    progress.unreachable_by.push_back(report.reporter);
  }
  return progress;
}

void Node::finish() {
  if (!impl_->runtime || !impl_->runtime->state().assignment) return;
  // The core ends its own stay (done); this bound only guards against a loop that never
  // says so. It must not be shorter than the core's stay: a seed stays
  // max(commit_grace, join_backoff_max) (Core::stay_until), which under the wan profile is
  // the backoff (30 s, against a 15 s grace). The extra second covers loop latency.
  const Timing& timing = impl_->config.timing;
  const bool seed = listed_as_seed();
  const auto stay =
      seed ? std::max(timing.commit_grace, timing.join_backoff_max) : timing.commit_grace;
  const auto deadline = Clock::now() + stay + std::chrono::seconds(1);
  impl_->runtime->wait_until(
      [](const runtime::RuntimeState& s) {
        return s.done || s.stopped || s.loop_failure.has_value();
      },
      deadline);
}

void Node::stop() {
  std::lock_guard lock(impl_->lifecycle);
  if (impl_->runtime) impl_->runtime->stop();
}

std::string Node::endpoint() const {
  return impl_->endpoint;
}

bool Node::listed_as_seed() const {
  return impl_->listed_as_seed || impl_->seeds.empty();
}

const std::string& Node::key_file() const {
  return impl_->config.key_file;
}

}  // namespace gossip_rdzv
