#include "store/store_state.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/store_bytes.hpp"

namespace gossip_rdzv::store {
namespace {

using namespace std::chrono_literals;

using testing_support::b;
using testing_support::s;

Request set(const std::string& key, const std::string& value) {
  return Request{Op::set, {key}, {b(value)}, 0, std::nullopt};
}
Request get(std::vector<std::string> keys, std::optional<Time> deadline = std::nullopt) {
  return Request{Op::get, std::move(keys), {}, 0, deadline};
}
Request wait(std::vector<std::string> keys, std::optional<Time> deadline = std::nullopt) {
  return Request{Op::wait, std::move(keys), {}, 0, deadline};
}
Request add(const std::string& key, std::int64_t amount) {
  return Request{Op::add, {key}, {}, amount, std::nullopt};
}
Request compare_set(const std::string& key, const std::string& expected,
                    const std::string& desired) {
  return Request{Op::compare_set, {key}, {b(expected), b(desired)}, 0, std::nullopt};
}

class StoreStateTest : public ::testing::Test {
 protected:
  // Applies and returns the answer that must come at once.
  Reply now(const Request& request, Time at = 0s) {
    state.apply(at, ++last_ticket, request);
    auto reply = state.poll_reply();
    EXPECT_TRUE(reply.has_value()) << "expected an immediate answer";
    EXPECT_TRUE(state.invariants());
    if (!reply) return Reply{Status::bad_request, {}, 0, "", "no answer"};
    EXPECT_EQ(reply->first, last_ticket);
    return reply->second;
  }
  StoreState::Ticket parked(const Request& request, Time at = 0s) {
    state.apply(at, ++last_ticket, request);
    EXPECT_FALSE(state.poll_reply().has_value()) << "expected the request to be parked";
    EXPECT_TRUE(state.invariants());
    return last_ticket;
  }
  StoreState state;
  StoreState::Ticket last_ticket = 0;
};

TEST_F(StoreStateTest, SetThenGet) {
  EXPECT_EQ(now(set("k", "v")).status, Status::ok);
  const Reply reply = now(get({"k"}));
  EXPECT_EQ(reply.status, Status::ok);
  ASSERT_EQ(reply.values.size(), 1u);
  EXPECT_EQ(s(reply.values[0]), "v");
  EXPECT_EQ(state.num_keys(), 1u);
}

TEST_F(StoreStateTest, SetOverwrites) {
  now(set("k", "one"));
  now(set("k", "two"));
  EXPECT_EQ(s(now(get({"k"})).values[0]), "two");
}

TEST_F(StoreStateTest, GetOnMissingKeyIsParkedUntilASet) {
  const auto waiting = parked(get({"k"}, 30s));
  EXPECT_EQ(state.parked(), 1u);
  state.apply(1s, 99, set("k", "late"));
  auto first = state.poll_reply();
  auto second = state.poll_reply();
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->first, 99u);  // the setter hears first
  EXPECT_EQ(second->first, waiting);
  EXPECT_EQ(second->second.status, Status::ok);
  EXPECT_EQ(s(second->second.values.at(0)), "late");
  EXPECT_EQ(state.parked(), 0u);
  EXPECT_TRUE(state.invariants());
}

TEST_F(StoreStateTest, ParkedGetTimesOutNamingTheKey) {
  const auto waiting = parked(get({"present", "missing"}, 5s));
  state.apply(1s, 50, set("present", "x"));
  ASSERT_TRUE(state.poll_reply());  // the set's own answer
  EXPECT_FALSE(state.poll_reply());
  EXPECT_EQ(state.next_deadline(), Time(5s));
  state.on_tick(4999ms);
  EXPECT_FALSE(state.poll_reply());
  state.on_tick(5s);
  auto reply = state.poll_reply();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->first, waiting);
  EXPECT_EQ(reply->second.status, Status::timeout);
  EXPECT_EQ(reply->second.key, "missing");
  EXPECT_EQ(state.parked(), 0u);
  EXPECT_FALSE(state.next_deadline());
  EXPECT_TRUE(state.invariants());
}

TEST_F(StoreStateTest, GetWithPastDeadlineAnswersAtOnce) {
  const Reply reply = now(get({"k"}, 1s), 2s);
  EXPECT_EQ(reply.status, Status::timeout);
  EXPECT_EQ(reply.key, "k");
}

TEST_F(StoreStateTest, GetWithoutDeadlineWaitsForEver) {
  parked(get({"k"}));
  state.on_tick(Time(std::chrono::hours(24 * 365)));
  EXPECT_FALSE(state.poll_reply());
  EXPECT_FALSE(state.next_deadline());
}

TEST_F(StoreStateTest, MultiGetReturnsValuesInOrderWhenAllExist) {
  const auto waiting = parked(get({"a", "b", "c"}, 10s));
  state.apply(1s, 100, set("c", "3"));
  state.apply(1s, 101, set("a", "1"));
  while (auto reply = state.poll_reply()) EXPECT_NE(reply->first, waiting);
  state.apply(2s, 102, set("b", "2"));
  state.poll_reply();  // set's answer
  auto reply = state.poll_reply();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->first, waiting);
  ASSERT_EQ(reply->second.values.size(), 3u);
  EXPECT_EQ(s(reply->second.values[0]), "1");
  EXPECT_EQ(s(reply->second.values[1]), "2");
  EXPECT_EQ(s(reply->second.values[2]), "3");
}

TEST_F(StoreStateTest, WaitReleasesWithoutValues) {
  const auto waiting = parked(wait({"a", "b"}, 10s));
  state.apply(1s, 100, Request{Op::set, {"a", "b"}, {b("1"), b("2")}, 0, std::nullopt});
  state.poll_reply();
  auto reply = state.poll_reply();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->first, waiting);
  EXPECT_EQ(reply->second.status, Status::ok);
  EXPECT_TRUE(reply->second.values.empty());
}

TEST_F(StoreStateTest, ManyWaitersOnOneKeyAllRelease) {
  for (int i = 0; i < 10; ++i) parked(get({"k"}, 10s));
  state.apply(1s, 1000, set("k", "v"));
  int answers = 0;
  while (auto reply = state.poll_reply()) {
    EXPECT_EQ(reply->second.status, Status::ok);
    ++answers;
  }
  EXPECT_EQ(answers, 11);
  EXPECT_TRUE(state.invariants());
}

TEST_F(StoreStateTest, AddCountsFromZeroAndStoresDecimal) {
  EXPECT_EQ(now(add("n", 1)).number, 1);
  EXPECT_EQ(now(add("n", 6)).number, 7);
  EXPECT_EQ(now(add("n", -10)).number, -3);
  EXPECT_EQ(s(now(get({"n"})).values[0]), "-3");
}

TEST_F(StoreStateTest, AddReleasesAGetOnItsKey) {
  const auto waiting = parked(get({"n"}, 10s));
  state.apply(1s, 77, add("n", 5));
  auto first = state.poll_reply();
  auto second = state.poll_reply();
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->second.number, 5);
  EXPECT_EQ(second->first, waiting);
  EXPECT_EQ(s(second->second.values.at(0)), "5");
}

TEST_F(StoreStateTest, AddOnANumberWrittenBySetWorks) {
  now(set("n", "41"));
  EXPECT_EQ(now(add("n", 1)).number, 42);
}

TEST_F(StoreStateTest, AddOnTextIsAnErrorNamingTheKey) {
  now(set("t", "hello"));
  const Reply reply = now(add("t", 1));
  EXPECT_EQ(reply.status, Status::bad_request);
  EXPECT_EQ(reply.key, "t");
  EXPECT_NE(reply.detail.find("hello"), std::string::npos);
  EXPECT_EQ(s(now(get({"t"})).values[0]), "hello");  // unchanged
}

TEST_F(StoreStateTest, AddOverflowIsAnError) {
  now(set("n", "9223372036854775807"));
  EXPECT_EQ(now(add("n", 1)).status, Status::bad_request);
}

TEST_F(StoreStateTest, CompareSetOnMissingKeyWithEmptyExpectedCreates) {
  const Reply reply = now(compare_set("k", "", "first"));
  EXPECT_EQ(s(reply.values.at(0)), "first");
  EXPECT_EQ(s(now(get({"k"})).values[0]), "first");
}

TEST_F(StoreStateTest, CompareSetOnMissingKeyWithExpectedReturnsExpectedAndSetsNothing) {
  const Reply reply = now(compare_set("k", "old", "new"));
  EXPECT_EQ(s(reply.values.at(0)), "old");
  EXPECT_EQ(state.num_keys(), 0u);
}

TEST_F(StoreStateTest, CompareSetSwapsOnlyOnMatch) {
  now(set("k", "first_value"));
  EXPECT_EQ(s(now(compare_set("k", "wrong", "x")).values.at(0)), "first_value");
  EXPECT_EQ(s(now(compare_set("k", "first_value", "second_value")).values.at(0)), "second_value");
  EXPECT_EQ(s(now(get({"k"})).values[0]), "second_value");
}

TEST_F(StoreStateTest, CompareSetReleasesWaiters) {
  const auto waiting = parked(wait({"k"}, 10s));
  state.apply(1s, 5, compare_set("k", "", "v"));
  state.poll_reply();
  auto reply = state.poll_reply();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->first, waiting);
}

TEST_F(StoreStateTest, CheckDoesNotWait) {
  now(set("a", "1"));
  EXPECT_EQ(now(Request{Op::check, {"a"}, {}, 0, std::nullopt}).number, 1);
  EXPECT_EQ(now(Request{Op::check, {"a", "b"}, {}, 0, std::nullopt}).number, 0);
}

TEST_F(StoreStateTest, DeleteKeyAndNumKeys) {
  now(set("a", "1"));
  now(set("b", "2"));
  EXPECT_EQ(now(Request{Op::num_keys, {}, {}, 0, std::nullopt}).number, 2);
  EXPECT_EQ(now(Request{Op::delete_key, {"a"}, {}, 0, std::nullopt}).number, 1);
  EXPECT_EQ(now(Request{Op::delete_key, {"a"}, {}, 0, std::nullopt}).number, 0);
  EXPECT_EQ(now(Request{Op::num_keys, {}, {}, 0, std::nullopt}).number, 1);
}

TEST_F(StoreStateTest, DeletingAKeyAParkedGetHadMakesItWaitAgain) {
  now(set("a", "1"));
  const auto waiting = parked(get({"a", "b"}, 10s));
  now(Request{Op::delete_key, {"a"}, {}, 0, std::nullopt});
  now(set("b", "2"));  // a is gone: still parked
  state.apply(2s, 500, set("a", "again"));
  state.poll_reply();
  auto reply = state.poll_reply();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->first, waiting);
  EXPECT_EQ(s(reply->second.values.at(0)), "again");
  EXPECT_TRUE(state.invariants());
}

TEST_F(StoreStateTest, CancelForgetsAParkedRequest) {
  const auto waiting = parked(get({"k"}, 10s));
  state.cancel(waiting);
  EXPECT_EQ(state.parked(), 0u);
  EXPECT_FALSE(state.next_deadline());
  now(set("k", "v"));
  EXPECT_FALSE(state.poll_reply());
  EXPECT_TRUE(state.invariants());
}

TEST_F(StoreStateTest, MalformedRequestsAreRefusedNotApplied) {
  EXPECT_EQ(now(Request{Op::set, {"a", "b"}, {b("1")}, 0, std::nullopt}).status,
            Status::bad_request);
  EXPECT_EQ(now(Request{Op::get, {}, {}, 0, std::nullopt}).status, Status::bad_request);
  EXPECT_EQ(now(Request{Op::compare_set, {"k"}, {b("x")}, 0, std::nullopt}).status,
            Status::bad_request);
  EXPECT_EQ(now(Request{Op::num_keys, {"k"}, {}, 0, std::nullopt}).status, Status::bad_request);
  EXPECT_EQ(state.num_keys(), 0u);
}

TEST_F(StoreStateTest, EmptyValuesAndBinaryBytesRoundTrip) {
  now(set("empty", ""));
  EXPECT_TRUE(now(get({"empty"})).values.at(0).empty());
  Bytes binary = {0, 255, 10, 0};
  now(Request{Op::set, {"bin"}, {binary}, 0, std::nullopt});
  EXPECT_EQ(now(get({"bin"})).values.at(0), binary);
}

TEST_F(StoreStateTest, CountsTheRequestsItApplied) {
  now(set("a", "1"));
  now(get({"a"}));
  parked(get({"b"}));
  EXPECT_EQ(state.requests_applied(), 3u);
}

}  // namespace
}  // namespace gossip_rdzv::store
