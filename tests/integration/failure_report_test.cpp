// The reports the runtime gives when a wait ends badly (runtime/failure_report.hpp), built
// from snapshots: what they count and what they tell the user to do.
#include "runtime/failure_report.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace gossip_rdzv::runtime {
namespace {

using namespace std::chrono_literals;

protocol::MemberView member(const std::string& name, protocol::MemberStatus status) {
  protocol::MemberView view;
  view.ann.endpoint = name + ":29400";
  view.ann.hostname = name;
  view.status = status;
  view.last_heard = protocol::Time{2s};
  return view;
}

// What a node of a 3-node job timing out after 10 s reports, with members a and b alive.
std::string timeout_text(protocol::Snapshot snapshot) {
  Config config;
  config.min_nodes = config.max_nodes = 3;
  config.join_timeout = 10s;
  config.run_id = "job";
  snapshot.joined = true;
  snapshot.members.insert(snapshot.members.begin(), {member("a", protocol::MemberStatus::alive),
                                                     member("b", protocol::MemberStatus::alive)});
  return join_timeout_error(config, snapshot, protocol::Time{10s}, "").what();
}

std::string timeout_text(protocol::MemberStatus third) {
  protocol::Snapshot snapshot;
  snapshot.members = {member("c", third)};
  return timeout_text(std::move(snapshot));
}

// A member that died is missing: start it. A suspect was started and is still counted by the
// round (a member until declared dead): it is named as silent, never as one to start.
TEST(FailureReport, JoinTimeoutCountsASuspectAsStartedButNotAsJoined) {
  const std::string dead = timeout_text(protocol::MemberStatus::dead);
  EXPECT_NE(dead.find("2 of 3 nodes joined"), std::string::npos) << dead;
  EXPECT_NE(dead.find("1 still missing: start them"), std::string::npos) << dead;
  const std::string suspect = timeout_text(protocol::MemberStatus::suspect);
  EXPECT_NE(suspect.find("2 of 3 nodes joined"), std::string::npos) << suspect;
  EXPECT_EQ(suspect.find("still missing"), std::string::npos) << suspect;
  EXPECT_NE(suspect.find("Seen and then silent: c"), std::string::npos) << suspect;
  EXPECT_NE(suspect.find("suspect, last heard 8.0 s ago"), std::string::npos) << suspect;
}

// A member that keeps sending but never answers at its advertised address is named as
// unreachable; when this node itself ran late for a while (local health 3 or more), the
// report adds that the answers may only have been late, and to check the load first.
TEST(FailureReport, AnUnansweredPeerIsBlamedUnlessThisNodeWasItselfStarved) {
  protocol::Snapshot snapshot;
  protocol::UnreachablePeer peer;
  peer.endpoint = "b:29400";
  peer.unanswered = 5;
  peer.since = protocol::Time{1s};
  peer.heard_meanwhile = true;
  snapshot.unreachable = {peer};
  auto text = [&](std::uint32_t peak) {
    snapshot.peak_local_health = peak;
    return timeout_text(snapshot);
  };
  const std::string healthy = text(2);
  EXPECT_NE(healthy.find("no answer at the advertised address of b b:29400 (5 messages "
                         "unanswered over 9.0 s while it kept sending)"),
            std::string::npos)
      << healthy;
  EXPECT_EQ(healthy.find("unless this node's own slowness"), std::string::npos) << healthy;
  const std::string starved = text(5);
  EXPECT_NE(starved.find("unless this node's own slowness explains it"), std::string::npos)
      << starved;
  EXPECT_NE(starved.find("up to 6 times"), std::string::npos) << starved;
  EXPECT_NE(starved.find("check this machine's load first"), std::string::npos) << starved;
}

}  // namespace
}  // namespace gossip_rdzv::runtime
