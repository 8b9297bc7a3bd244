// Writes the fuzz targets' seed corpus: one valid message per gossip message type, one store
// request per op and one response per status, and for the core target the traffic a 3-node
// net (tests/unit/mini_net.hpp) delivers to its node 1: one input per message type seen and
// one input with the whole trace; for the ZMTP reader, what a DEALER sends on a connection
// (greeting, READY, messages) under a few chunk sizes. scripts/fuzz.sh --corpus runs it; its output
// is checked in under tests/fuzz/corpus/<target>/.
//
//   fuzz_corpus_gen DIR   (writes DIR/fuzz_gossip_codec, DIR/fuzz_store_codec, DIR/fuzz_core,
//                          DIR/fuzz_zmtp)
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "fuzz_input.hpp"
#include "protocol/codec.hpp"
#include "store/store_codec.hpp"
#include "transport/zmtp.hpp"
#include "unit/mini_net.hpp"

using namespace gossip_rdzv;
using namespace gossip_rdzv::protocol;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& dir, const std::string& name, const std::vector<std::uint8_t>& bytes) {
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

std::string file_name(std::string_view kind) {
  std::string name;
  for (char c : kind) name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

MemberRecord record(int i) {
  MemberRecord r;
  r.ann.endpoint = protocol::testing::MiniNet::endpoint(i);
  r.ann.node_id = 1000 + static_cast<std::uint64_t>(i);
  r.ann.generation = 1;
  r.ann.host = "10.0.0." + std::to_string(i);
  r.ann.hostname = "node" + std::to_string(i);
  r.ann.master_port = 29500;
  r.ann.min_nodes = r.ann.max_nodes = 3;
  r.incarnation = static_cast<std::uint64_t>(i);
  r.status = i == 3 ? MemberStatus::suspect : MemberStatus::alive;
  if (r.status == MemberStatus::suspect) r.accuser = protocol::testing::MiniNet::endpoint(2);
  return r;
}

ViewClaim view() {
  ViewClaim v;
  v.round = 0;
  v.attempt = 1;
  v.digest = 0x1234;
  for (int i = 1; i <= 3; ++i) v.members.push_back({protocol::testing::MiniNet::endpoint(i), 1});
  v.proposed = {0x07};
  v.ready = {0x03};
  v.voted = {0x01};
  v.committed = {0x00};
  v.fenced = {0x00};
  v.witnesses = {"10.0.0.9:29400"};
  v.seniors = {2, 0};
  return v;
}

std::vector<Body> every_body() {
  return {
      Join{record(2)},
      JoinReply{{record(1), record(3)}, true},
      Ping{7, {record(2)}, {view()}},
      Ack{7, {record(3)}, {view()}},
      PingReq{8, protocol::testing::MiniNet::endpoint(3)},
      Gossip{true, {record(1), record(2)}, {view()}},
      Query{},
      QueryReply{{record(1), record(2)}, {view()}, {5, QueryReply::kNeverHeard}},
      Refuse{RefuseReason::run_id_mismatch, "run id 'other' is not 'run'"},
      Unreachable{protocol::testing::MiniNet::endpoint(2), 1500, 3},
  };
}

void gossip_corpus(const fs::path& dir) {
  for (const Body& body : every_body()) {
    Envelope e{kProtocolVersion, "run", protocol::testing::MiniNet::endpoint(2), 1, body};
    write(dir, file_name(to_string(message_type(body))), encode(e));
  }
}

void store_corpus(const fs::path& dir) {
  using namespace gossip_rdzv::store;
  for (std::uint8_t op = 1; op <= kMaxOp; ++op) {
    StoreRequest r;
    r.run_id = "run";
    r.request_id = op;
    r.reply_to = "10.0.0.2:29401";
    r.round = op % 2;
    r.at_home = op % 2 == 1;
    r.op = static_cast<Op>(op);
    r.keys = {"key/" + std::to_string(op)};
    r.values = {Bytes{'4', '2'}};
    r.amount = -3;
    r.timeout_ms = 1000;
    write(dir, "request_" + std::string(to_string(r.op)), encode(StoreMessage{r}));
  }
  for (std::uint8_t status = 0; status <= kMaxStatus; ++status) {
    StoreResponse r;
    r.run_id = "run";
    r.request_id = status;
    r.sender = "10.0.0.1:29400";
    r.status = static_cast<Status>(status);
    r.values = {Bytes{'v'}, encode_member_stats({"10.0.0.1:29400", 1, 2, 3, 4})};
    r.number = 5;
    r.key = "key";
    r.detail = "detail";
    r.home = "node1";
    write(dir, "response_" + std::string(to_string(r.status)), encode(StoreMessage{r}));
  }
}

void core_corpus(const fs::path& dir) {
  using protocol::testing::MiniNet;
  MiniNet net(3, 3);
  std::vector<std::uint8_t> trace;
  std::map<std::string, std::vector<std::uint8_t>> first_of_type;
  Time last = net.now();
  net.on_deliver = [&](const std::string& to, const Envelope& msg) {
    if (to != MiniNet::endpoint(1)) return;
    const auto advance = std::chrono::duration_cast<std::chrono::milliseconds>(net.now() - last);
    last = net.now();
    const std::vector<std::uint8_t> bytes = encode(msg);
    fuzz::append_step(trace, 0, static_cast<std::uint8_t>(std::min<long>(advance.count(), 255)),
                      bytes);
    const std::string name = file_name(to_string(message_type(msg.body)));
    if (!first_of_type.count(name)) fuzz::append_step(first_of_type[name], 0, 1, bytes);
  };
  for (int i = 1; i <= 3; ++i) net.add(i);
  net.run([&] { return net.committed(1) && net.committed(2) && net.committed(3); },
          std::chrono::seconds(10));
  for (const auto& [name, input] : first_of_type) write(dir, name, input);
  write(dir, "trace_3_nodes", trace);
}

// fuzz_zmtp's input: one byte choosing the chunk size, then a connection's bytes.
void zmtp_corpus(const fs::path& dir) {
  namespace tp = gossip_rdzv::transport;
  tp::Bytes stream = tp::zmtp_handshake("DEALER");
  for (std::size_t size : {0, 1, 300, 1024}) {
    const tp::Bytes frame = tp::zmtp_frame(tp::Bytes(size, static_cast<std::uint8_t>(size)));
    stream.insert(stream.end(), frame.begin(), frame.end());
  }
  for (std::uint8_t step : {0, 7, 64, 96}) {
    std::vector<std::uint8_t> input{step};
    input.insert(input.end(), stream.begin(), stream.end());
    write(dir, "dealer_step_" + std::to_string(step + 1), input);
  }
  std::vector<std::uint8_t> router{13};
  const tp::Bytes handshake = tp::zmtp_handshake("ROUTER");
  router.insert(router.end(), handshake.begin(), handshake.end());
  write(dir, "router_handshake", router);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_corpus_gen DIR\n";
    return 2;
  }
  const fs::path root = argv[1];
  gossip_corpus(root / "fuzz_gossip_codec");
  store_corpus(root / "fuzz_store_codec");
  core_corpus(root / "fuzz_core");
  zmtp_corpus(root / "fuzz_zmtp");
  return 0;
}
