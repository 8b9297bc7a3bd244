#include "runtime/runtime.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iterator>
#include <utility>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "protocol/endpoint.hpp"
#include "runtime/auth_report.hpp"
#include "transport/socket_address.hpp"

namespace gossip_rdzv::runtime {
namespace {

using namespace std::chrono_literals;
using protocol::Time;

// The loop wakes at least this often even when the core asks for nothing, so stop() and
// a clock jump are noticed promptly.
constexpr std::chrono::milliseconds kMaxIdleWait{100};
// Messages handled per step before the core gets a tick: bounds how long a flood can starve
// the timers (probes, suspicion) that keep the view honest.
constexpr std::size_t kMaxMessagesPerStep = 64;
// Peers whose reachability notices are kept: a flood of spoofed reporters cannot grow the
// list without bound.
constexpr std::size_t kMaxWarnedSenders = 4096;

spdlog::level::level_enum level_from_environment() {
  const char* text = std::getenv("GOSSIP_RDZV_LOG");
  if (text == nullptr) return spdlog::level::info;
  const std::string name(text);
  const auto level = spdlog::level::from_str(name);
  // from_str answers "off" for names it does not know; only "off" itself means off.
  if (level == spdlog::level::off && name != "off") return spdlog::level::info;
  return level;
}

std::shared_ptr<spdlog::logger> make_logger() {
  if (auto existing = spdlog::get("gossip_rdzv")) return existing;
  try {
    auto created = spdlog::stderr_color_mt("gossip_rdzv");
    created->set_level(level_from_environment());
    return created;
  } catch (const spdlog::spdlog_ex&) {
    return spdlog::get("gossip_rdzv");  // registered by another thread meanwhile
  }
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f && c != '\\') {
      out += c;
    } else {
      out += fmt::format("\\x{:02x}", byte);
    }
  }
  return out;
}

namespace {

bool is_loopback_host(const std::string& host) {
  return transport::is_loopback(host) || host == "localhost";
}

bool on_this_machine(const std::string& endpoint) {
  const auto parsed = protocol::parse_endpoint(endpoint, nullptr);
  return parsed && is_loopback_host(parsed->host);
}

/// "host (endpoint)", or the endpoint alone when the host name is unknown or says nothing more.
std::string peer_label(const std::string& endpoint, const std::string& hostname) {
  if (hostname.empty() || hostname == endpoint) return printable(endpoint);
  return printable(hostname) + " (" + printable(endpoint) + ")";
}

}  // namespace

std::string describe_round_start(const protocol::RoundStarted& e, const PeerDetail& detail) {
  using protocol::RoundReason;
  const std::string peer = peer_label(e.peer, detail.hostname);
  std::string why;
  switch (e.reason) {
    case RoundReason::workers_failed:
      why = "this node's workers failed";
      break;
    case RoundReason::member_dead:
      why = "member " + peer + " was declared dead";
      if (detail.silent_for) {
        why += fmt::format(" (no answer for {:.1f} s)",
                           std::chrono::duration<double>(*detail.silent_for).count());
      }
      break;
    case RoundReason::member_restarted:
      why = "member " + peer + " restarted";
      break;
    case RoundReason::member_arrived:
      why = "node " + peer + " is waiting to join and the job has room for it";
      break;
    case RoundReason::peer_moved_on:
      why = "node " + peer + " moved on to this round";
      break;
  }
  return why + "; re-forming the group (the previous round's workers stop)";
}

std::string describe_job_end(const protocol::JobEnded& e) {
  const std::string who = peer_label(e.peer, e.hostname);
  if (!e.failed) {
    return "the job of this run id already finished: node " + who +
           " left after its workers finished. Start a new job with a new --run-id";
  }
  const std::string how = e.status > 128 ? "signal " + std::to_string(e.status - 128) + " (" +
                                               std::string(strsignal(e.status - 128)) + ")"
                                         : "exit status " + std::to_string(e.status);
  return "the job failed: rank " + std::to_string(e.rank) + " on node " + who + " failed with " +
         how + " and no restart was left there; its output says why (allow more with " +
         "--max-restarts)";
}

std::string reachability_advice(const std::string& endpoint,
                                const std::vector<std::string>& reporters) {
  const auto parsed = protocol::parse_endpoint(endpoint, nullptr);
  if (!parsed) return "advertise an address the other nodes can reach (--advertise)";
  const bool all_local =
      !reporters.empty() && std::all_of(reporters.begin(), reporters.end(), on_this_machine);
  if (is_loopback_host(parsed->host) && all_local) {
    return "they run on this machine too, so the loopback address is not the cause: this "
           "node did not answer in time (overloaded, stopped, or its port now belongs to "
           "another process)";
  }
  if (is_loopback_host(parsed->host)) {
    return fmt::format(
        "{} is a loopback address, which on every other machine means that machine itself; "
        "advertise an address of this machine they can reach (--advertise)",
        printable(parsed->host));
  }
  return fmt::format(
      "advertise an address they can reach (--advertise) or open inbound TCP port {}",
      parsed->port);
}

std::shared_ptr<spdlog::logger> logger() {
  return make_logger();
}

Runtime::Runtime(protocol::CoreConfig config, std::unique_ptr<transport::ZmqTransport> transport,
                 std::unique_ptr<Sidecar> sidecar)
    : config_(config),
      origin_(std::chrono::steady_clock::now()),
      log_(logger()),
      core_(std::move(config)),
      sidecar_(std::move(sidecar)),
      transport_(std::move(transport)) {}

Runtime::~Runtime() {
  stop();
}

void Runtime::watch_key_file(const std::string& path) {
  key_file_.emplace(path, std::chrono::seconds(1));
}

void Runtime::reread_key_file() {
  if (!key_file_) return;
  auto change = key_file_->poll(std::chrono::steady_clock::now());
  if (!change) return;
  if (!change->keyring) {
    log_->warn("key file {} changed but cannot be used, so the previous keys stay in use: {}",
               key_file_->path(), change->problem);
    return;
  }
  log_->info("key file {} re-read: {} key(s), primary key id {}", key_file_->path(),
             change->keyring->size(), transport::key_id_text(change->keyring->primary_id()));
  transport_->set_keyring(std::move(change->keyring));
}

void Runtime::start() {
  if (thread_.joinable() || !transport_) return;
  thread_ = std::thread([this] { run(); });
}

void Runtime::stop() {
  stopping_ = true;
  if (transport_) transport_->wake();
  if (thread_.joinable()) thread_.join();
  if (transport_) log_transport_counters("at stop");
  transport_.reset();  // closes sockets; queued messages get the transport's linger
  {
    std::lock_guard lock(mutex_);
    state_.stopped = true;
  }
  changed_.notify_all();
}

protocol::Time Runtime::now() const {
  return std::chrono::duration_cast<Time>(std::chrono::steady_clock::now() - origin_);
}

RuntimeState Runtime::state() const {
  std::lock_guard lock(mutex_);
  return state_;
}

bool Runtime::wait_until(const std::function<bool(const RuntimeState&)>& satisfied,
                         std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_until(lock, deadline, [&] { return satisfied(state_); });
}

bool Runtime::request_next_round() {
  bool accepted = false;
  {
    std::lock_guard lock(mutex_);
    accepted = core_.request_next_round(now());
  }
  if (transport_) transport_->wake();  // its sends and events are handled by the loop
  return accepted;
}

void Runtime::leave() {
  {
    std::lock_guard lock(mutex_);
    core_.leave(now());
  }
  if (transport_) transport_->wake();
}

void Runtime::abort(std::uint32_t rank, int status) {
  {
    std::lock_guard lock(mutex_);
    core_.abort(now(), rank, status);
  }
  if (transport_) transport_->wake();
}

protocol::Snapshot Runtime::snapshot() const {
  std::lock_guard lock(mutex_);
  return core_.snapshot();
}

void Runtime::run() {
  try {
    loop();
  } catch (const std::exception& error) {
    log_->error("gossip-rdzv event loop stopped by an internal error (please report it): {}",
                error.what());
    std::lock_guard lock(mutex_);
    state_.loop_failure = error.what();
  }
  changed_.notify_all();
}

void Runtime::loop() {
  {
    std::lock_guard lock(mutex_);
    core_.start(now());
  }
  std::vector<transport::Received> inbound;
  while (!stopping_) {
    const auto outgoing = step(now(), inbound);
    for (const auto& send : outgoing) transmit(send);
    for (const auto& send : sidecar_sends_) {
      if (!transport_->send(send.to, send.bytes)) {
        log_->debug("dropped a store message to {}: its queue is full", printable(send.to));
      }
    }
    sidecar_sends_.clear();
    // Only now may a thread in wait_until() see a commit (or fatal error) of this step: our
    // vote and commit bits, queued in the same step, are with the transport before the
    // caller acts on the outcome (writes files, starts workers, exits) and perhaps dies, so
    // its peers can commit too.
    publish();
    if (stopping_) break;
    reread_key_file();
    inbound = receive_batch();
  }
}

// One debug line of what the transport did (docs/performance.md counts connections with it):
// at each commit, since an agent in env-file mode hands its stay to a child whose output goes
// to /dev/null, and when the runtime stops.
void Runtime::log_transport_counters(std::string_view when) const {
  const transport::TransportCounters& c = transport_->counters();
  log_->debug(
      "transport {}: {} connections opened, {} closed to make room ({} of them with {} "
      "messages waiting for the peer's greeting); {} inbound connections taken, {} closed to "
      "make room; {} sends dropped",
      when, c.destinations_opened, c.destinations_evicted, c.evicted_waiting,
      c.messages_lost_on_eviction, c.inbound_accepted, c.inbound_closed_for_room, c.sends_dropped);
}

void Runtime::publish() {
  if (unpublished_assignment_) log_transport_counters("at the commit");
  {
    std::lock_guard lock(mutex_);
    // Which seeds ever greeted us, for the report of a node that no seed answered: a few
    // lookups a step, only until it joined (or every seed greeted).
    if (!state_.joined && state_.seeds_that_greeted.size() < config_.seeds.size()) {
      std::vector<std::string> greeted;
      for (const auto& seed : config_.seeds)
        if (transport_->has_greeted(seed)) greeted.push_back(seed);
      if (greeted.size() > state_.seeds_that_greeted.size())
        state_.seeds_that_greeted = std::move(greeted);
    }
    if (unpublished_assignment_) state_.assignment = std::exchange(unpublished_assignment_, {});
    if (unpublished_fatal_ && !state_.fatal) state_.fatal = unpublished_fatal_;
    unpublished_fatal_.reset();
  }
  changed_.notify_all();
}

void Runtime::transmit(const Send& send) {
  const protocol::Outgoing& out = send.out;
  const auto type = protocol::to_string(protocol::message_type(out.msg.body));
  const auto bytes = protocol::encode(out.msg);
  if (!send.reply_to.empty()) {
    log_->trace("-> {} to {} over its own connection ({} bytes)", type, printable(out.to),
                bytes.size());
    if (!transport_->reply(send.reply_to, bytes)) {
      log_->debug("dropped a {} to {}: its connection is gone", type, printable(out.to));
    }
  } else {
    log_->trace("-> {} to {} ({} bytes)", type, out.to, bytes.size());
    if (!transport_->send(out.to, bytes)) {
      log_->debug("dropped a {} to {}: its queue is full", type, out.to);
    }
  }
  if (send_observer_) send_observer_(out);
}

std::vector<transport::Received> Runtime::receive_batch() {
  std::vector<transport::Received> batch;
  auto first = transport_->receive_from(time_to_wakeup());
  if (!first) return batch;
  batch.push_back(std::move(*first));
  while (batch.size() < kMaxMessagesPerStep) {
    auto more = transport_->receive_from(0ms);
    if (!more) break;
    batch.push_back(std::move(*more));
  }
  return batch;
}

std::chrono::milliseconds Runtime::time_to_wakeup() const {
  Time next;
  {
    std::lock_guard lock(mutex_);
    next = core_.next_wakeup();
    if (sidecar_) next = std::min(next, sidecar_->next_wakeup().value_or(next));
  }
  const auto until = std::chrono::ceil<std::chrono::milliseconds>(next - now());
  return std::clamp(until, 0ms, kMaxIdleWait);
}

std::vector<Runtime::Send> Runtime::step(Time now,
                                         const std::vector<transport::Received>& inbound) {
  std::vector<Send> outgoing;
  std::lock_guard lock(mutex_);
  for (const auto& message : inbound) {
    if (message.refusal) {
      handle_key_refusal(now, *message.refusal);
      continue;
    }
    if (sidecar_ && sidecar_->claims(message.bytes)) {
      sidecar_->on_bytes(now, message.bytes);
      continue;
    }
    handle_bytes(now, message.bytes);
    // What the core queued while handling this message: a reply goes back over its
    // connection (an answer that came on one of ours has none: it goes to the endpoint).
    while (auto out = core_.poll_send()) {
      const bool reply = out->reply;
      outgoing.push_back(Send{std::move(*out), reply ? message.reply_to : std::string()});
    }
  }
  if (now >= core_.next_wakeup()) core_.on_tick(now);
  while (auto out = core_.poll_send()) outgoing.push_back(Send{std::move(*out), {}});
  while (auto event = core_.poll_event()) apply_event(*event);
  state_.done = core_.done();
  state_.round = core_.round();
  state_.job_finished = core_.job_finished();
  step_sidecar(now);
  return outgoing;
}

void Runtime::step_sidecar(Time now) {
  if (!sidecar_) return;
  if (unpublished_assignment_) sidecar_->on_committed(now, *unpublished_assignment_);
  sidecar_->on_tick(now);
  auto sends = sidecar_->take_sends();
  sidecar_sends_.insert(sidecar_sends_.end(), std::make_move_iterator(sends.begin()),
                        std::make_move_iterator(sends.end()));
}

void Runtime::handle_bytes(Time now, const Bytes& bytes) {
  protocol::DecodeResult result = protocol::decode(bytes.data(), bytes.size());
  if (result.ok()) {
    const protocol::Envelope& envelope = result.envelope();
    log_->trace("<- {} from {} ({} bytes)",
                protocol::to_string(protocol::message_type(envelope.body)),
                printable(envelope.sender), bytes.size());
    core_.on_message(now, envelope);
    if (sidecar_) sidecar_->on_member_alive(envelope.sender);
    // It listens now: a connection of ours that found nobody there need not wait for
    // ZeroMQ's next retry (a seed that starts late, a node back on its endpoint).
    transport_->redial(envelope.sender);
    return;
  }
  const protocol::DecodeError& error = result.error();
  if (error.kind == protocol::DecodeError::Kind::version_mismatch && error.header &&
      !error.header->sender.empty()) {
    // Its body may be of a layout we do not know, but the header names who to refuse.
    core_.on_version_mismatch(now, error.header->sender, error.header->version);
    return;
  }
  warn_undecodable(now, error);
}

void Runtime::handle_key_refusal(Time now, const transport::AuthRefusal& refusal) {
  const LogLimiter::Decision decision = key_warnings_.allow(now);
  if (decision.suppressed_before > 0) {
    log_->warn("{} more messages refused for want of the job's key were not logged",
               decision.suppressed_before);
  }
  // A bounded number of refusals is kept in each direction: the ones we made are strangers'
  // to trigger and must not crowd out a seed's refusal of us (which only peers we dialled
  // can send), which decides exit 13.
  const auto recorded =
      std::count_if(state_.refusals.begin(), state_.refusals.end(), [&](const auto& r) {
        return r.reason == protocol::RefuseReason::key_mismatch && r.by_us == refusal.by_us;
      });
  const bool room = static_cast<std::size_t>(recorded) < kMaxKeyRefusals;
  // Past the log budget and the cap (a stranger's flood), nothing is said or kept: do not
  // decode the refused message's claimed sender.
  if (!decision.log && !room && !log_->should_log(spdlog::level::debug)) return;
  std::optional<transport::KeyId> ours;
  if (const auto& ring = transport_->keyring()) ours = ring->primary_id();
  protocol::PeerRefused event = key_refusal(refusal, ours);
  event.peer = printable(event.peer);
  if (decision.log) {
    log_->warn("{}", key_refusal_text(event));
  } else {
    log_->debug("{}", key_refusal_text(event));
  }
  // The first refusal per peer and direction.
  const bool known =
      std::any_of(state_.refusals.begin(), state_.refusals.end(), [&](const auto& r) {
        return r.reason == event.reason && r.by_us == event.by_us && r.peer == event.peer;
      });
  if (!known && room) state_.refusals.push_back(std::move(event));
}

void Runtime::warn_undecodable(Time now, const protocol::DecodeError& error) {
  const LogLimiter::Decision decision = decode_warnings_.allow(now);
  if (decision.suppressed_before > 0) {
    log_->warn("{} more messages that are not valid gossip-rdzv were ignored without a log line",
               decision.suppressed_before);
  }
  if (!decision.log) {
    log_->debug("ignored a message: {}", protocol::describe(error));
    return;
  }
  log_->warn("ignored a message that is not valid gossip-rdzv (at most {} such lines per {} s): {}",
             kDecodeWarningBurst,
             std::chrono::duration_cast<std::chrono::seconds>(kDecodeWarningPeriod).count(),
             protocol::describe(error));
}

void Runtime::apply_event(const protocol::Event& event) {
  std::visit(
      [&](const auto& e) {
        using E = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<E, protocol::JoinedCluster>) {
          log_->info("joined the cluster via {}", printable(e.via));
          state_.joined = true;
          state_.joined_via = e.via;
        } else if constexpr (std::is_same_v<E, protocol::MemberUp>) {
          log_->info("member up: {} {} (nproc {})", printable(e.member.hostname),
                     printable(e.member.endpoint), e.member.nproc);
          if (sidecar_) sidecar_->on_member_alive(e.member.endpoint);
        } else if constexpr (std::is_same_v<E, protocol::MemberSuspected>) {
          log_->debug("member suspected: {}", printable(e.endpoint));
        } else if constexpr (std::is_same_v<E, protocol::MemberDead>) {
          if (e.left) {
            // Still running until the job ends (wait_job_finished): its store keys stay
            // readable for nodes whose workers are not done yet.
            log_->info("member left: {}", printable(e.endpoint));
          } else {
            log_->info("member dead: {}", printable(e.endpoint));
            if (sidecar_) sidecar_->on_member_dead(e.endpoint);
          }
        } else if constexpr (std::is_same_v<E, protocol::Committed>) {
          const Assignment& a = e.assignment;
          log_->info(
              "committed round {}: {} nodes, world size {}, this node is node rank {}, "
              "master {}:{}",
              a.round, a.nnodes(), a.world_size, a.my_node_rank, a.master_addr, a.master_port);
          unpublished_assignment_ = a;  // published by loop() after this step's sends
        } else if constexpr (std::is_same_v<E, protocol::NotAdmitted>) {
          log_->warn("round {} closed with {} nodes without this node", e.round, e.view_size);
          state_.not_admitted = e;
        } else if constexpr (std::is_same_v<E, protocol::PeerRefused>) {
          if (e.by_us) {
            log_->warn("refused {}: {}", printable(e.peer), printable(e.detail));
          } else {
            log_->warn("{} refused this node: {}", printable(e.peer), printable(e.detail));
          }
          state_.refusals.push_back(e);
        } else if constexpr (std::is_same_v<E, protocol::UnreachableReported>) {
          note_unreachable_report(e);
        } else if constexpr (std::is_same_v<E, protocol::PeerUnreachable>) {
          log_->warn(
              "{} sends to this node but does not answer at that address: {} messages sent "
              "there in {:.1f} s got no answer; told it so (the fix is on that node: its "
              "--advertise address, or a firewall dropping inbound TCP to its gossip port)",
              printable(e.endpoint), e.unanswered,
              std::chrono::duration<double>(e.failing_for).count());
        } else if constexpr (std::is_same_v<E, protocol::RoundStarted>) {
          state_.round_started = e;
          state_.round_change = describe_round_start(e, peer_detail(e.peer));
          log_->warn("round {}: {}", e.round, state_.round_change);
        } else if constexpr (std::is_same_v<E, protocol::JobEnded>) {
          // Node::wait() throws it, or the caller reports job_failure(): said once there.
          log_->info("{}", describe_job_end(e));
          state_.job_ended = e;
        } else if constexpr (std::is_same_v<E, protocol::Fatal>) {
          // Node::wait() throws it as an Error whose message the caller reports (the CLI
          // prints it once); logging it too would say it twice.
          log_->debug("fatal: {}", printable(e.message));
          if (!unpublished_fatal_) unpublished_fatal_ = e;  // publish() keeps the first
        }
      },
      event);
}

PeerDetail Runtime::peer_detail(const std::string& endpoint) const {
  PeerDetail detail;
  const protocol::Time now = this->now();
  for (const auto& member : core_.snapshot().members) {
    if (member.ann.endpoint != endpoint) continue;
    detail.hostname = member.ann.hostname;
    if (member.last_heard > protocol::Time::zero() && member.last_heard <= now)
      detail.silent_for = now - member.last_heard;
  }
  return detail;
}

void Runtime::note_unreachable_report(const protocol::UnreachableReported& report) {
  auto& reports = state_.unreachable_reports;
  auto known = std::find_if(reports.begin(), reports.end(),
                            [&](const auto& r) { return r.reporter == report.reporter; });
  // The first notice from each peer is a warning; its repeats (one per probe interval at
  // most) only refresh the counts for the progress line and the timeout report.
  const bool first = known == reports.end();
  if (first) {
    if (reports.size() >= kMaxWarnedSenders) return;
    reports.push_back(report);
  } else {
    *known = report;
  }
  const std::string text = fmt::format(
      "{} cannot reach this node at {}: {} messages it sent there in {:.1f} s got no answer; {}",
      printable(report.reporter), printable(report.tried_endpoint), report.unanswered,
      std::chrono::duration<double>(report.failing_for).count(),
      reachability_advice(report.tried_endpoint, {report.reporter}));
  if (first) {
    log_->warn("{}", text);
  } else {
    log_->debug("{}", text);
  }
}

}  // namespace gossip_rdzv::runtime
