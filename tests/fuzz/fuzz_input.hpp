// What the fuzz targets share: the protocol core they drive and the byte layout of the core
// target's input, so that the corpus generator (corpus_gen.cpp) writes inputs the target
// reads.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "protocol/core.hpp"

namespace gossip_rdzv::fuzz {

// The core under fuzz: node 1 of tests/unit/mini_net.hpp in a net of exactly 3 nodes, so
// that traffic recorded from such a net is addressed to it and passes its run and seed checks.
inline protocol::CoreConfig core_config() {
  protocol::CoreConfig config;
  config.self.endpoint = "10.0.0.1:29400";
  config.self.node_id = 1001;
  config.self.generation = 1;
  config.self.host = "10.0.0.1";
  config.self.hostname = "node1";
  config.self.nproc = 1;
  config.self.rank_hint = -1;
  config.self.master_port = 29500;
  config.min_nodes = config.max_nodes = 3;
  config.self.min_nodes = config.self.max_nodes = 3;
  config.run_id = "run";
  config.seeds = {"10.0.0.1:29400"};
  config.timing = Timing::local();
  config.last_call = std::chrono::milliseconds(2000);
  config.rng_seed = 8;
  return config;
}

// The core target's input is a sequence of steps, each a 4-byte header and a message:
//   flags (bit 0: on_tick after the message), time advance in ms, message length (u16 LE),
//   then that many bytes for protocol::decode (a step cut short by the end of the input
//   delivers what is there).
inline constexpr std::size_t kStepHeaderBytes = 4;
inline constexpr std::uint8_t kTickAfter = 1;

inline void append_step(std::vector<std::uint8_t>& input, std::uint8_t flags,
                        std::uint8_t advance_ms, const std::vector<std::uint8_t>& message) {
  const std::size_t size = message.size() > 0xffff ? 0xffff : message.size();
  input.push_back(flags);
  input.push_back(advance_ms);
  input.push_back(static_cast<std::uint8_t>(size & 0xff));
  input.push_back(static_cast<std::uint8_t>(size >> 8));
  input.insert(input.end(), message.begin(), message.begin() + static_cast<std::ptrdiff_t>(size));
}

}  // namespace gossip_rdzv::fuzz
