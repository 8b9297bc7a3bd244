// gloo without a master. Each process runs a gossip_rdzv::Node, waits for the agreed view,
// then forms a gloo full mesh through gossip_rdzv::GlooStore (the store over the view: each
// key lives on one member, no TCPStore / FileStore / Redis) and runs a ring allreduce.
//
//   gloo_mesh_example --seed 127.0.0.1:29400 --nnodes 4 --port 29400 &   # also the seed
//   gloo_mesh_example --seed 127.0.0.1:29400 --nnodes 4 --port 0 &       # x3
//
// Every process prints one line, "gloo_mesh rank R/N: allreduce sum S (expected E) ok", and
// exits 0 when the sum is right, 1 otherwise (2 for bad arguments).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <gloo/allreduce_ring.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>
#include <CLI/CLI.hpp>

#include "gossip_rdzv/node.hpp"
#include "gossip_rdzv/store.hpp"
#include "store/gloo_store.hpp"

namespace {

/// Returns once every one of `size` ranks has called it. The last to arrive sets a key the
/// others wait for. Its home may leave as soon as it has seen that key; a rank that asks too
/// late is told the home is unavailable, which also means everyone had arrived (or the home
/// crashed, and then the group is broken anyway): our allreduce has completed either way.
void leave_together(gossip_rdzv::Store& store, const std::string& prefix, int size) {
  if (store.add(prefix + "left", 1) == size) store.set(prefix + "all_left", "1");
  try {
    store.wait({prefix + "all_left"});
  } catch (const gossip_rdzv::StoreError& error) {
    if (error.code() != gossip_rdzv::StoreErrorCode::unavailable) throw;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gloo full mesh and allreduce through gossip-rdzv's masterless store"};
  std::string seed;
  std::uint32_t nnodes = 0;
  std::uint16_t port = 0;
  std::string host = "127.0.0.1";
  std::string run_id = "gloo-mesh";
  int count = 1024;
  double timeout_s = 60;
  app.add_option("--seed", seed, "HOST:PORT of a seed node (may be this one)")->required();
  app.add_option("--nnodes", nnodes, "number of processes")
      ->required()
      ->check(CLI::Range(1u, 100000u));
  app.add_option("--port", port, "gossip listen port (0: a free one)")->capture_default_str();
  app.add_option("--host", host, "address to listen on and advertise (gossip and gloo)")
      ->capture_default_str();
  app.add_option("--run-id", run_id, "run id (nodes of other runs are refused)")
      ->capture_default_str();
  app.add_option("--count", count, "floats in the allreduce buffer")
      ->check(CLI::Range(1, 1 << 24))
      ->capture_default_str();
  app.add_option("--timeout", timeout_s, "seconds for the rendezvous and for every store operation")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;  // --help: 0; bad arguments: 2
  }

  const auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(timeout_s * 1000));
  gossip_rdzv::Config config;
  config.run_id = run_id;
  config.seeds = {seed};
  config.listen_host = host;
  config.advertise_host = host;
  config.listen_port = port;
  config.min_nodes = config.max_nodes = nnodes;
  config.join_timeout = timeout;
  config.timing = gossip_rdzv::Timing::local();

  int rank = -1;
  int size = static_cast<int>(nnodes);
  try {
    gossip_rdzv::Node node(config);
    node.start();
    const gossip_rdzv::Assignment assignment = node.wait();
    rank = static_cast<int>(assignment.my_node_rank);
    size = static_cast<int>(assignment.nnodes());

    bool ok = false;
    {
      // The store over the agreed view, reached through this process's own node. Keys are
      // prefixed by the round, so a later round never reads this one's addresses.
      gossip_rdzv::GlooStore store(gossip_rdzv::Store(node, timeout),
                                   "gloo_mesh/" + std::to_string(assignment.round) + "/");

      gloo::transport::tcp::attr attr;
      attr.hostname = assignment.me().host;  // the address the other members know us by
      auto device = gloo::transport::tcp::CreateDevice(attr);

      auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
      context->setTimeout(timeout);
      context->connectFullMesh(store, device);

      std::vector<float> data(static_cast<std::size_t>(count), static_cast<float>(rank + 1));
      gloo::AllreduceRing<float> allreduce(context, {data.data()}, count);
      allreduce.run();

      const double expected = static_cast<double>(size) * (size + 1) / 2;
      ok = true;
      for (float value : data) ok = ok && std::fabs(value - expected) < 1e-3;
      std::printf("gloo_mesh rank %d/%d: allreduce sum %g (expected %g) %s\n", rank, size,
                  static_cast<double>(data.front()), expected, ok ? "ok" : "WRONG");
      std::fflush(stdout);

      // Leaving closes our gloo connections, and gloo fails a receive on a closed pair even
      // when its data has already arrived (tcp::Buffer::waitRecv checks the pair's error
      // first). In the ring our left-hand neighbour may still wait for data from its own
      // left when we are done, and would then fail to read the notification we sent it; so
      // nobody closes before every rank is out of the allreduce. The store carries this
      // barrier, not gloo.
      leave_together(store.store(), store.prefix(), size);
    }
    node.finish();
    node.stop();
    return ok ? 0 : 1;
  } catch (const std::exception& error) {
    std::printf("gloo_mesh rank %d/%d: FAILED: %s\n", rank, size, error.what());
    std::fflush(stdout);
    return 1;
  }
}
