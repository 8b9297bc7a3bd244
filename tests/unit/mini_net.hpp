// A tiny in-memory network for driving protocol cores in unit tests: virtual time, fixed
// latency, optional seeded loss and dropped links. (src/sim is the full simulator; this keeps
// the unit tests independent of it.)
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <vector>

#include "protocol/core.hpp"
#include "protocol/prng.hpp"

namespace gossip_rdzv::protocol::testing {

using namespace std::chrono_literals;

struct NodeOptions {
  std::uint32_t nproc = 1;
  std::int32_t rank_hint = -1;
  std::string run_id = "run";
  std::uint32_t min_nodes = 0;  // 0: the net's default
  std::uint32_t max_nodes = 0;
  std::uint64_t generation = 1;
  bool seed_only = false;
  bool elastic = false;
  std::vector<std::string> seeds;  // empty: the net's default seed
  std::string endpoint;            // empty: 10.0.0.i:29400; e.g. "127.0.0.1:29400"
};

class MiniNet {
 public:
  MiniNet(std::uint32_t min_nodes, std::uint32_t max_nodes, std::uint64_t seed = 1)
      : min_(min_nodes), max_(max_nodes), prng_(seed) {}

  std::string seed = "10.0.0.1:29400";
  Time latency = 1000us;
  double loss = 0.0;
  std::chrono::milliseconds last_call{2000};

  static std::string endpoint(int i) { return "10.0.0." + std::to_string(i) + ":29400"; }

  /// Adds node i (endpoint 10.0.0.i:29400, hostname node<i>) and starts it now.
  Core& add(int i, NodeOptions options = {}) {
    CoreConfig config;
    config.self.endpoint = options.endpoint.empty() ? endpoint(i) : options.endpoint;
    config.self.node_id = 1000 + static_cast<std::uint64_t>(i);
    config.self.generation = options.generation;
    config.self.host = "10.0.0." + std::to_string(i);
    config.self.hostname = "node" + std::to_string(i);
    config.self.nproc = options.nproc;
    config.self.rank_hint = options.rank_hint;
    config.self.master_port = 29500;
    config.min_nodes = options.min_nodes ? options.min_nodes : min_;
    config.max_nodes = options.max_nodes ? options.max_nodes : max_;
    config.self.min_nodes = config.min_nodes;
    config.self.max_nodes = config.max_nodes;
    config.run_id = options.run_id;
    config.seeds = options.seeds.empty() ? std::vector<std::string>{seed} : options.seeds;
    config.timing = Timing::local();
    config.last_call = last_call;
    config.rng_seed = 7 * static_cast<std::uint64_t>(i) + options.generation;
    config.seed_only = options.seed_only;
    config.elastic = options.elastic;
    nodes_[config.self.endpoint] = std::make_unique<Core>(config);
    Core& core = *nodes_[config.self.endpoint];
    core.start(now_);
    drain(config.self.endpoint);
    return core;
  }

  void crash(int i) { nodes_.erase(endpoint(i)); }
  void cut(int a, int b) {
    cut_.insert({endpoint(a), endpoint(b)}), cut_.insert({endpoint(b), endpoint(a)});
  }
  /// Ends every cut, one-way cuts included.
  void heal() { cut_.clear(), one_way_.clear(); }
  /// Messages from a to b's advertised endpoint are lost; b can still send to a, and a can
  /// answer b over b's own connection (Outgoing::reply), as with a firewall on b that drops
  /// inbound connections from a.
  void cut_one_way(int a, int b) { one_way_.insert({endpoint(a), endpoint(b)}); }
  /// Every message to `endpoint` lands back at its sender, as a loopback address would.
  void loop_back(const std::string& endpoint) { loopback_.insert(endpoint); }

  Core* node(int i) { return node(endpoint(i)); }
  Core* node(const std::string& name) {
    auto it = nodes_.find(name);
    return it == nodes_.end() ? nullptr : it->second.get();
  }
  Time now() const { return now_; }
  std::vector<Event>& events(int i) { return events_[endpoint(i)]; }
  std::vector<Event>& events(const std::string& name) { return events_[name]; }
  /// Raw messages delivered to a node, for tests that inspect the wire.
  std::function<void(const std::string& to, const Envelope&)> on_deliver;
  /// Every message a node sends, before loss and cuts, whether or not anyone runs at `to`.
  std::function<void(const std::string& from, const std::string& to, const Envelope&)> on_send;

  /// Runs until `until` returns true or `limit` of virtual time passes. Returns `until()`.
  bool run(const std::function<bool()>& until, Time limit = 60s) {
    const Time end = now_ + limit;
    while (!until() && now_ < end) {
      Time next = end;
      if (!queue_.empty()) next = std::min(next, queue_.top().at);
      for (auto& [name, core] : nodes_) next = std::min(next, core->next_wakeup());
      now_ = std::max(now_, next);
      while (!queue_.empty() && queue_.top().at <= now_) {
        Packet packet = queue_.top();
        queue_.pop();
        auto it = nodes_.find(packet.to);
        if (it == nodes_.end()) continue;
        if (on_deliver) on_deliver(packet.to, packet.msg);
        it->second->on_message(now_, packet.msg);
        it->second->check_invariants();
        drain(packet.to);
      }
      for (auto& [name, core] : nodes_) {
        if (core->next_wakeup() <= now_) {
          core->on_tick(now_);
          core->check_invariants();
          drain(name);
        }
      }
    }
    return until();
  }

  std::optional<Assignment> committed(int i) {
    for (const auto& event : events(i)) {
      if (auto* c = std::get_if<Committed>(&event)) return c->assignment;
    }
    return std::nullopt;
  }
  /// Every assignment node i committed, in order (one per round in an elastic job).
  std::vector<Assignment> commits(int i) {
    std::vector<Assignment> out;
    for (const auto& event : events(i)) {
      if (auto* c = std::get_if<Committed>(&event)) out.push_back(c->assignment);
    }
    return out;
  }
  template <class E>
  const E* find_event(int i) {
    for (const auto& event : events(i)) {
      if (auto* e = std::get_if<E>(&event)) return e;
    }
    return nullptr;
  }

  /// Injects a message as if it came from the network.
  void inject(const std::string& to, Envelope msg) {
    queue_.push(Packet{now_ + latency, ++seq_, to, std::move(msg)});
  }

 private:
  struct Packet {
    Time at;
    std::uint64_t order;
    std::string to;
    Envelope msg;
    bool operator>(const Packet& other) const {
      return at != other.at ? at > other.at : order > other.order;
    }
  };

  void drain(const std::string& name) {
    Core& core = *nodes_.at(name);
    while (auto out = core.poll_send()) {
      if (on_send) on_send(name, out->to, out->msg);
      if (cut_.count({name, out->to})) continue;
      if (!out->reply && one_way_.count({name, out->to})) continue;
      if (!out->reply && loopback_.count(out->to)) out->to = name;
      if (loss > 0 && prng_.unit() < loss) continue;
      queue_.push(Packet{now_ + latency, ++seq_, out->to, std::move(out->msg)});
    }
    while (auto event = core.poll_event()) events_[name].push_back(std::move(*event));
  }

  std::uint32_t min_, max_;
  Prng prng_;
  Time now_{0};
  std::uint64_t seq_ = 0;
  std::map<std::string, std::unique_ptr<Core>> nodes_;
  std::map<std::string, std::vector<Event>> events_;
  std::set<std::pair<std::string, std::string>> cut_;
  std::set<std::pair<std::string, std::string>> one_way_;
  std::set<std::string> loopback_;
  std::priority_queue<Packet, std::vector<Packet>, std::greater<Packet>> queue_;
};

}  // namespace gossip_rdzv::protocol::testing
