// InternPool: one copy of each announcement and of each view member list, shared by whoever
// interns an equal value (the simulator's cores share one pool).
#include "protocol/intern_pool.hpp"

#include <gtest/gtest.h>

#include "protocol/agreement.hpp"

namespace gossip_rdzv::protocol {
namespace {

Announcement ann(const std::string& endpoint, std::uint64_t generation, std::uint64_t node_id) {
  Announcement a;
  a.endpoint = endpoint;
  a.host = endpoint.substr(0, endpoint.find(':'));
  a.hostname = "h-" + endpoint;
  a.generation = generation;
  a.node_id = node_id;
  return a;
}

TEST(InternPool, EqualAnnouncementsShareOneCopyAndAnyDifferenceMakesAnother) {
  InternPool pool;
  const Announcement& first = pool.announcement(ann("10.0.0.2:1", 1, 7));
  EXPECT_EQ(&pool.announcement(ann("10.0.0.2:1", 1, 7)), &first);
  EXPECT_EQ(first, ann("10.0.0.2:1", 1, 7));
  // A restart (generation), another process (node id) or any other field is another entry.
  EXPECT_NE(&pool.announcement(ann("10.0.0.2:1", 2, 7)), &first);
  EXPECT_NE(&pool.announcement(ann("10.0.0.2:1", 1, 8)), &first);
  Announcement other_nproc = ann("10.0.0.2:1", 1, 7);
  other_nproc.nproc = 4;
  const Announcement& four = pool.announcement(other_nproc);
  EXPECT_NE(&four, &first);
  EXPECT_EQ(four.nproc, 4u);
  EXPECT_EQ(pool.announcement_count(), 4u);
  // Earlier references survive later insertions (the set rehashes; nodes do not move).
  for (int i = 0; i < 1000; ++i) pool.announcement(ann("10.0.1.1:" + std::to_string(i), 1, 1));
  EXPECT_EQ(&pool.announcement(ann("10.0.0.2:1", 1, 7)), &first);
  EXPECT_EQ(first.endpoint, "10.0.0.2:1");
}

TEST(InternPool, MemberListsAreSharedWhileHeldAndComparedByContent) {
  InternPool pool;
  const MemberList members{{"10.0.0.1:1", 1}, {"10.0.0.2:1", 1}};
  const auto digest = view_digest(0, 0, members);
  auto a = pool.members(digest, members);
  auto b = pool.members(digest, members);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(*a, members);
  // The same digest with other members (a collision, or a forged claim) is not confused.
  const MemberList others{{"10.0.0.3:1", 1}};
  auto c = pool.members(digest, others);
  EXPECT_NE(c.get(), a.get());
  EXPECT_EQ(*c, others);
  // Once nobody holds a list the pool lets it go: interning again gives a fresh equal copy.
  a.reset();
  b.reset();
  auto again = pool.members(digest, members);
  EXPECT_EQ(*again, members);
}

TEST(InternPool, EndpointHashIsFnv1a) {
  EXPECT_EQ(endpoint_hash(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(endpoint_hash("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_NE(endpoint_hash("10.0.0.1:1"), endpoint_hash("10.0.0.1:2"));
}

}  // namespace
}  // namespace gossip_rdzv::protocol
