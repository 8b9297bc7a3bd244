// gossip_rdzv::GlooStore (src/store/gloo_store.hpp) against real Nodes on loopback: gloo's
// bytes round-trip through the store, keys get the prefix, wait() is released by a later set,
// and failures become gloo::IoException carrying the store's message (key and home).
#include "store/gloo_store.hpp"

#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gloo/common/error.h>
#include <gtest/gtest.h>

#include "gossip_rdzv/node.hpp"
#include "support/local_group.hpp"

namespace gossip_rdzv {
namespace {

using namespace std::chrono_literals;
using testing_support::await_client_request;

class GlooStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { nodes = testing_support::form_local_group("gloo-store", 2, "g"); }
  void TearDown() override {
    for (auto& node : nodes) node->stop();
  }
  GlooStore gloo_store(std::size_t node, std::string prefix = "p/",
                       std::chrono::milliseconds timeout = 10s) {
    return GlooStore(Store(*nodes.at(node), timeout), std::move(prefix));
  }
  std::vector<std::unique_ptr<Node>> nodes;
};

TEST_F(GlooStoreTest, BinaryValuesRoundTripUnderThePrefix) {
  GlooStore writer = gloo_store(0);
  const std::vector<char> bytes = {'\0', 'a', '\xff', '\0', 'z'};
  writer.set("0", bytes);
  GlooStore reader = gloo_store(1);
  EXPECT_EQ(reader.get("0"), bytes);
  // Stored under the prefix, not the bare key.
  Store plain(*nodes[1], 10s);
  EXPECT_TRUE(plain.check({"p/0"}));
  EXPECT_FALSE(plain.check({"0"}));
}

TEST_F(GlooStoreTest, WaitIsReleasedByALaterSet) {
  Store observer(*nodes[0], 10s);
  const auto before = testing_support::client_requests(observer, nodes[1]->endpoint());
  auto waiting = std::async(std::launch::async, [&] {
    GlooStore store = gloo_store(1);
    store.wait({"a", "b"}, std::chrono::milliseconds(20000));
    return store.get("b");
  });
  // The wait has reached node 1's agent (its client counter moved), and has not returned.
  ASSERT_TRUE(await_client_request(observer, nodes[1]->endpoint(), before));
  EXPECT_EQ(waiting.wait_for(0s), std::future_status::timeout) << "wait returned before the set";
  GlooStore writer = gloo_store(0);
  writer.set("a", {'1'});
  writer.set("b", {'2'});
  ASSERT_EQ(waiting.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(waiting.get(), std::vector<char>{'2'});
}

TEST_F(GlooStoreTest, TimeoutIsAGlooIoExceptionNamingTheKey) {
  GlooStore store = gloo_store(0, "p/", 300ms);
  try {
    store.get("never");
    FAIL() << "get did not time out";
  } catch (const ::gloo::IoException& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("p/never"), std::string::npos) << what;
    EXPECT_NE(what.find("node rank"), std::string::npos) << what;
  }
  EXPECT_THROW(store.wait({"never"}, std::chrono::milliseconds(300)), ::gloo::IoException);
  EXPECT_THROW(store.wait({"never"}), ::gloo::IoException);
}

}  // namespace
}  // namespace gossip_rdzv
