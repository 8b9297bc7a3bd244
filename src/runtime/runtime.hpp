// The event loop: one thread that reads the clock, feeds the protocol core what the transport
// receives, sends what the core wants sent, and publishes the core's events to other threads.
// It knows no protocol rules; it only drives protocol::Core.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <spdlog/logger.h>

#include "gossip_rdzv/assignment.hpp"
#include "protocol/codec.hpp"
#include "protocol/core.hpp"
#include "runtime/log_limiter.hpp"
#include "transport/key_file_watch.hpp"
#include "transport/zmq_transport.hpp"

namespace gossip_rdzv::runtime {

/// What the loop has learned from the core's events, for threads waiting on an outcome.
struct RuntimeState {
  bool joined = false;
  std::string joined_via;
  std::optional<Assignment> assignment;
  std::optional<protocol::Fatal> fatal;
  std::optional<protocol::NotAdmitted> not_admitted;
  std::vector<protocol::PeerRefused> refusals;  ///< both directions, first one per peer
  /// Peers that told this node its advertised endpoint does not answer them: the latest
  /// notice per peer, in the order they first arrived.
  std::vector<protocol::UnreachableReported> unreachable_reports;
  bool done = false;        ///< core.done(): finish() may return
  std::uint32_t round = 0;  ///< the round the core is in (elastic jobs move on)
  std::optional<protocol::RoundStarted> round_started;  ///< why the latest round began
  std::string round_change;                             ///< the same, for people
  bool job_finished = false;                            ///< core.job_finished()
  std::optional<protocol::JobEnded> job_ended;          ///< a peer ended the job for us
  bool stopped = false;                                 ///< stop() was called
  /// The core's seeds (endpoints) whose process greeted a connection of ours at some time
  /// (ZmqTransport::has_greeted), kept up to date until this node joined.
  std::vector<std::string> seeds_that_greeted;
  std::optional<std::string> loop_failure;  ///< the loop died of an exception (a bug)
};

/// Another protocol sharing the gossip socket (the store, docs/store.md): the loop hands it
/// the messages it claims, tells it the committed assignment and sends what it produces.
/// Called on the loop thread only, with the runtime's lock held.
class Sidecar {
 public:
  struct Send {
    std::string to;  ///< endpoint "host:port"
    transport::Bytes bytes;
  };
  virtual ~Sidecar() = default;
  /// Whether `bytes` are this protocol's (by magic); the gossip codec never sees them then.
  virtual bool claims(const transport::Bytes& bytes) const = 0;
  virtual void on_bytes(protocol::Time now, const transport::Bytes& bytes) = 0;
  virtual void on_committed(protocol::Time now, const Assignment& assignment) = 0;
  /// Called after every step of the loop.
  virtual void on_tick(protocol::Time now) = 0;
  /// The membership declared `endpoint` dead: SWIM keeps running after the commit, so a
  /// sidecar learns of deaths while it serves.
  virtual void on_member_dead(const std::string& /*endpoint*/) {}
  /// `endpoint` is alive: it joined or restarted, or a message from it arrived (the only sign
  /// of a member that refuted a wrong declaration of its death).
  virtual void on_member_alive(const std::string& /*endpoint*/) {}
  virtual std::vector<Send> take_sends() = 0;
  virtual std::optional<protocol::Time> next_wakeup() const = 0;
};

/// What this node knows of the peer a round change names.
struct PeerDetail {
  std::string hostname;
  std::optional<protocol::Time> silent_for;  ///< since it was last heard from directly
};

/// Why an elastic job started `e.round`, for people, e.g. "member trainer-3 (10.0.0.3:29400)
/// was declared dead (no answer for 4.1 s); re-forming the group (the previous round's
/// workers stop)".
std::string describe_round_start(const protocol::RoundStarted& e, const PeerDetail& detail = {});

/// How the job ended for us, for people, e.g. "the job failed: rank 3 on trainer-1
/// (10.0.0.3:29400) failed with exit status 1 and no restart left there".
std::string describe_job_end(const protocol::JobEnded& e);

class Runtime {
 public:
  /// `transport` is already bound; from start() on only the loop thread uses it.
  /// `sidecar`, when given, shares the transport (see Sidecar).
  Runtime(protocol::CoreConfig config, std::unique_ptr<transport::ZmqTransport> transport,
          std::unique_ptr<Sidecar> sidecar = nullptr);
  /// Stops the loop if still running.
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// Starts the core and the loop thread.
  void start();
  /// Stops the loop and closes the sockets (waiting at most the transport's linger so the
  /// last messages get out). Idempotent.
  void stop();

  RuntimeState state() const;
  /// Blocks until `satisfied(state)` or `deadline`; returns whether it was satisfied.
  bool wait_until(const std::function<bool(const RuntimeState&)>& satisfied,
                  std::chrono::steady_clock::time_point deadline) const;
  protocol::Snapshot snapshot() const;
  /// Elastic jobs: this node's workers failed (Core::request_next_round). Returns whether
  /// the core accepted it (elastic, and this round's commit reported).
  bool request_next_round();
  /// Elastic jobs: this node's workers finished (Core::leave).
  void leave();
  /// Elastic jobs: this node's workers failed with no restart left (Core::abort).
  void abort(std::uint32_t rank, int status);
  /// Time on the core's clock (since this runtime was created).
  protocol::Time now() const;
  const protocol::CoreConfig& config() const { return config_; }

  /// Key rotation: the loop re-reads `path` (the key file the transport's keyring came from)
  /// when it changes, at most once a second, and seals and opens with its keys from then on.
  /// Call before start().
  void watch_key_file(const std::string& path);

  /// For tests: called on the loop thread after each message of the core is handed to the
  /// transport. Set it before start().
  void set_send_observer(std::function<void(const protocol::Outgoing&)> observer) {
    send_observer_ = std::move(observer);
  }

 private:
  using Bytes = transport::Bytes;
  /// What the core wants sent, and the inbox connection to answer on when it is a reply.
  struct Send {
    protocol::Outgoing out;
    std::string reply_to;
  };

  void run();
  void loop();
  std::vector<transport::Received> receive_batch();
  std::chrono::milliseconds time_to_wakeup() const;
  void handle_bytes(protocol::Time now, const Bytes& bytes);
  /// A message dropped for want of the key, by the transport or by the peer: logged (within
  /// a budget) and recorded for the failure report.
  void handle_key_refusal(protocol::Time now, const transport::AuthRefusal& refusal);
  void reread_key_file();
  void warn_undecodable(protocol::Time now, const protocol::DecodeError& error);
  std::vector<Send> step(protocol::Time now, const std::vector<transport::Received>& inbound);
  void transmit(const Send& send);
  void publish();
  /// Logs transport_->counters() at debug level; `when` says at which moment.
  void log_transport_counters(std::string_view when) const;
  void apply_event(const protocol::Event& event);
  void note_unreachable_report(const protocol::UnreachableReported& report);
  PeerDetail peer_detail(const std::string& endpoint) const;
  void step_sidecar(protocol::Time now);

  const protocol::CoreConfig config_;
  const std::chrono::steady_clock::time_point origin_;
  std::shared_ptr<spdlog::logger> log_;

  mutable std::mutex mutex_;  ///< guards core_ and state_
  mutable std::condition_variable changed_;
  protocol::Core core_;
  RuntimeState state_;
  /// Outcomes a waiting thread acts on (a commit; a fatal error, such as a rank conflict
  /// found at the commit), held back until the messages of the step that produced them are
  /// handed to the transport; publish() moves them into state_ (see loop()).
  std::optional<Assignment> unpublished_assignment_;
  std::optional<protocol::Fatal> unpublished_fatal_;
  std::unique_ptr<Sidecar> sidecar_;          ///< guarded by mutex_, may be null
  std::vector<Sidecar::Send> sidecar_sends_;  ///< loop thread only: filled by step()

  std::unique_ptr<transport::ZmqTransport> transport_;  ///< loop thread only, after start()
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  std::function<void(const protocol::Outgoing&)> send_observer_;  ///< loop thread only
  /// Warnings about undecodable messages: at most kDecodeWarningBurst lines per
  /// kDecodeWarningPeriod, whoever they claim to be from; the rest go to debug.
  static constexpr std::size_t kDecodeWarningBurst = 5;
  static constexpr protocol::Time kDecodeWarningPeriod = std::chrono::seconds(10);
  LogLimiter decode_warnings_{kDecodeWarningBurst, kDecodeWarningPeriod};
  /// The same budget for refusals for want of the key, which strangers can trigger too.
  LogLimiter key_warnings_{kDecodeWarningBurst, kDecodeWarningPeriod};
  /// Key refusals recorded in state_.refusals at most, in each direction: a stranger can
  /// claim any sender.
  static constexpr std::size_t kMaxKeyRefusals = 32;
  std::optional<transport::KeyFileWatch> key_file_;  ///< loop thread only, after start()
};

/// `text` with control characters and non-ASCII bytes written as \xNN, for strings that came
/// from the wire (host names, refusal details): a hostile peer cannot forge log lines or
/// terminal escapes through them.
std::string printable(std::string_view text);

/// The fix for a node whose advertised `endpoint` the `reporters` (their endpoints) cannot
/// reach: a loopback address is named as the cause only when a reporter is on another
/// machine (peers on this machine reach loopback fine, so then the node itself did not answer
/// in time); anything else gets "--advertise or open inbound TCP port N".
std::string reachability_advice(const std::string& endpoint,
                                const std::vector<std::string>& reporters);

/// The library's logger ("gossip_rdzv", to stderr). Its level comes from the environment
/// variable GOSSIP_RDZV_LOG (trace, debug, info, warn, error; default info); a program may
/// replace it by registering its own logger of that name: each Runtime and Node takes the
/// one registered when it is created.
std::shared_ptr<spdlog::logger> logger();

}  // namespace gossip_rdzv::runtime
