// gossip_rdzv::Store against real Nodes on loopback, in one process: every node serves its
// keys, and clients reach them through any node's agent.
#include "gossip_rdzv/store.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "gossip_rdzv/node.hpp"
#include "support/local_group.hpp"

namespace gossip_rdzv {
namespace {

using namespace std::chrono_literals;

using testing_support::await_client_request;
using testing_support::client_requests;
using testing_support::free_loopback_port;

std::string text(const Store::Bytes& bytes) {
  return std::string(bytes.begin(), bytes.end());
}

class StoreNodeTest : public ::testing::Test {
 protected:
  void form(std::uint32_t count) {
    nodes = testing_support::form_local_group("store-node", count, "n");
  }
  Store client(std::size_t node, std::chrono::milliseconds timeout = 10s) {
    return Store(*nodes.at(node), timeout);
  }
  void TearDown() override {
    for (auto& node : nodes) node->stop();
  }
  std::vector<std::unique_ptr<Node>> nodes;
};

TEST_F(StoreNodeTest, SetOnOneNodeGetOnEveryOther) {
  form(3);
  Store writer = client(0);
  writer.set("greeting", "hello");
  for (std::size_t i = 0; i < nodes.size(); ++i)
    EXPECT_EQ(text(client(i).get("greeting")), "hello");
}

TEST_F(StoreNodeTest, BlockingGetIsReleasedByALaterSet) {
  form(3);
  Store observer = client(0);
  const auto before = client_requests(observer, nodes[1]->endpoint());
  auto waiting = std::async(std::launch::async, [&] { return text(client(1).get("late", 20s)); });
  // The get has reached node 1's agent (its client counter moved), and has not returned.
  ASSERT_TRUE(await_client_request(observer, nodes[1]->endpoint(), before));
  EXPECT_EQ(waiting.wait_for(0s), std::future_status::timeout) << "get returned before the set";
  client(2).set("late", "now");
  ASSERT_EQ(waiting.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(waiting.get(), "now");
}

TEST_F(StoreNodeTest, ConcurrentAddFromEveryNodeLosesNothing) {
  form(3);
  constexpr int kPerThread = 50;
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] {
      Store store = client(i % nodes.size());
      for (int n = 0; n < kPerThread; ++n) store.add("counter", 1);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(client(0).add("counter", 0), 6 * kPerThread);
}

TEST_F(StoreNodeTest, TimeoutNamesKeyAndHome) {
  form(2);
  Store store = client(0);
  try {
    store.get("never-set", 300ms);
    FAIL() << "get did not time out";
  } catch (const StoreError& error) {
    EXPECT_EQ(error.code(), StoreErrorCode::timeout);
    EXPECT_EQ(error.key(), "never-set");
    EXPECT_NE(std::string(error.what()).find("never-set"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("node rank"), std::string::npos) << error.what();
    EXPECT_NE(error.home().find("127.0.0.1:"), std::string::npos) << error.home();
  }
}

TEST_F(StoreNodeTest, TorchSemantics) {
  form(2);
  Store store = client(1);
  EXPECT_EQ(text(store.compare_set("cs", {}, {'a'})), "a");
  EXPECT_EQ(text(store.compare_set("cs", {'x'}, {'b'})), "a");
  EXPECT_EQ(text(store.compare_set("cs", {'a'}, {'b'})), "b");
  EXPECT_TRUE(store.check({"cs"}));
  EXPECT_FALSE(store.check({"cs", "nope"}));
  EXPECT_EQ(store.add("n", 5), 5);
  EXPECT_EQ(text(store.get("n")), "5");
  store.set("word", "text");
  EXPECT_THROW(store.add("word", 1), StoreError);
  EXPECT_EQ(store.num_keys(), 3);
  EXPECT_TRUE(store.delete_key("word"));
  EXPECT_FALSE(store.delete_key("word"));
  EXPECT_EQ(store.num_keys(), 2);
  store.wait({"cs", "n"});
  const auto values = store.multi_get({"n", "cs"});
  EXPECT_EQ(text(values.at(0)), "5");
  EXPECT_EQ(text(values.at(1)), "b");
}

TEST_F(StoreNodeTest, SilentAgentIsReportedAsSuch) {
  Store store(StoreOptions{"127.0.0.1:" + std::to_string(free_loopback_port()), "", 200ms});
  try {
    store.set("k", "v");
    FAIL();
  } catch (const StoreError& error) {
    EXPECT_EQ(error.code(), StoreErrorCode::unavailable);
    EXPECT_NE(std::string(error.what()).find("did not answer"), std::string::npos);
  }
}

TEST_F(StoreNodeTest, OtherRunIsRefused) {
  form(1);
  Store store(StoreOptions{nodes[0]->endpoint(), "another-run", 5s});
  try {
    store.set("k", "v");
    FAIL();
  } catch (const StoreError& error) {
    EXPECT_EQ(error.code(), StoreErrorCode::refused);
    EXPECT_NE(std::string(error.what()).find("another-run"), std::string::npos) << error.what();
  }
}

// The key file is read when the client is made, so a wrong path fails there, naming it.
TEST(StoreOptionsTest, KeyFileThatCannotBeReadIsAUsageError) {
  const std::string missing = "/nonexistent/gossip-rdzv/job.key";
  try {
    Store store(StoreOptions{"127.0.0.1:1", "", 1s, missing});
    FAIL();
  } catch (const StoreError& error) {
    EXPECT_EQ(error.code(), StoreErrorCode::usage);
    EXPECT_EQ(error.status(), 2);
    EXPECT_NE(std::string(error.what()).find(missing), std::string::npos) << error.what();
  }
  Store store(StoreOptions{"127.0.0.1:1", "", 1s});
  EXPECT_THROW(store.set_key_file(missing), StoreError);
  EXPECT_EQ(store.key_file(), "");
  ::setenv("GOSSIP_RDZV_STORE", "127.0.0.1:1", 1);
  ::setenv("GOSSIP_RDZV_KEY_FILE", missing.c_str(), 1);
  EXPECT_THROW(Store::from_env(), StoreError);
  ::unsetenv("GOSSIP_RDZV_KEY_FILE");
  ::unsetenv("GOSSIP_RDZV_STORE");
}

TEST(StoreOptionsTest, BadAgentIsAUsageError) {
  try {
    Store store(StoreOptions{"no-port-here", "", 1s});
    FAIL();
  } catch (const StoreError& error) {
    EXPECT_EQ(error.code(), StoreErrorCode::usage);
  }
}

}  // namespace
}  // namespace gossip_rdzv
