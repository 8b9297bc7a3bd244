// A minimal custom launcher: joins a rendezvous through gossip_rdzv::Node and prints the
// torchrun-compatible environment of its local rank 0.
//
//   launcher --seed HOST:PORT --nnodes N [--listen-port P] [--listen-host H]
//            [--nproc-per-node K] [--run-id ID]
//
// A real launcher would start its workers with torch_env(assignment, local_rank) here.
#include <gossip_rdzv/config.hpp>
#include <gossip_rdzv/env.hpp>
#include <gossip_rdzv/error.hpp>
#include <gossip_rdzv/node.hpp>

#include <cstdint>
#include <iostream>
#include <string>
#include <string_view>

namespace {

int usage(const char* argv0) {
  std::cerr << "usage: " << argv0
            << " --seed HOST:PORT --nnodes N [--listen-port P] [--listen-host H]"
               " [--nproc-per-node K] [--run-id ID]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  gossip_rdzv::Config config;
  config.timing = gossip_rdzv::Timing::local();  // loopback; use lan() across machines
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const std::string value = argv[i + 1];
    try {
      if (flag == "--seed") {
        config.seeds.push_back(value);
      } else if (flag == "--nnodes") {
        config.min_nodes = config.max_nodes = static_cast<std::uint32_t>(std::stoul(value));
      } else if (flag == "--listen-port") {
        config.listen_port = static_cast<std::uint16_t>(std::stoul(value));
      } else if (flag == "--listen-host") {
        config.listen_host = value;
      } else if (flag == "--nproc-per-node") {
        config.nproc_per_node = static_cast<std::uint32_t>(std::stoul(value));
      } else if (flag == "--run-id") {
        config.run_id = value;
      } else {
        return usage(argv[0]);
      }
    } catch (const std::exception&) {
      return usage(argv[0]);
    }
  }
  if (argc % 2 == 0 || config.seeds.empty()) return usage(argv[0]);

  try {
    gossip_rdzv::Node node(config);
    node.start();
    const gossip_rdzv::Assignment assignment = node.wait();
    std::cout << gossip_rdzv::format_env(gossip_rdzv::torch_env(assignment, 0),
                                         gossip_rdzv::EnvFormat::env)
              << std::flush;
    node.finish();
    return 0;
  } catch (const gossip_rdzv::Error& e) {
    std::cerr << "launcher: " << e.what() << '\n';
    return static_cast<int>(e.code());
  }
}
