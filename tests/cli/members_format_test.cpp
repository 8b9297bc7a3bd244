#include "members_format.hpp"

#include <gtest/gtest.h>

namespace gossip_rdzv::cli {
namespace {

std::vector<MemberProgress> sample() {
  return {MemberProgress{"10.0.0.1:29400", "node0", "alive", std::nullopt},
          MemberProgress{"10.0.0.2:29400", "node1\x1b[2J", "suspect", milliseconds(1500)}};
}

TEST(MembersFormatTest, Table) {
  EXPECT_EQ(members_table(sample()),
            "ENDPOINT        HOSTNAME   STATUS   LAST_HEARD\n"
            "10.0.0.1:29400  node0      alive    -\n"
            "10.0.0.2:29400  node1?[2J  suspect  1.5s ago\n");
}

TEST(MembersFormatTest, Json) {
  EXPECT_EQ(members_json(sample()),
            "[\n"
            "  {\"endpoint\": \"10.0.0.1:29400\", \"hostname\": \"node0\", \"status\": \"alive\", "
            "\"last_heard_ms\": null},\n"
            "  {\"endpoint\": \"10.0.0.2:29400\", \"hostname\": \"node1\\u001b[2J\", \"status\": "
            "\"suspect\", \"last_heard_ms\": 1500}\n"
            "]\n");
  EXPECT_EQ(members_json({}), "[]\n");
}

}  // namespace
}  // namespace gossip_rdzv::cli
