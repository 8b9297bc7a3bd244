#include "protocol/endpoint.hpp"

#include <gtest/gtest.h>

namespace gossip_rdzv::protocol {
namespace {

const EndpointRules kListen{"0.0.0.0", std::nullopt, true};
const EndpointRules kSeed{"", 29400, false};

Endpoint parsed(std::string_view text, const EndpointRules& rules = {}) {
  std::string error;
  const std::optional<Endpoint> endpoint = parse_endpoint(text, &error, rules);
  EXPECT_TRUE(endpoint.has_value()) << text << ": " << error;
  EXPECT_TRUE(error.empty()) << error;
  return endpoint.value_or(Endpoint{});
}

// Returns the error text, failing the test if `text` parses.
std::string refused(std::string_view text, const EndpointRules& rules = {}) {
  std::string error;
  const std::optional<Endpoint> endpoint = parse_endpoint(text, &error, rules);
  EXPECT_FALSE(endpoint.has_value()) << text << " was accepted";
  EXPECT_FALSE(error.empty()) << text;
  return error;
}

TEST(Endpoint, ParsesNamesIpv4AndBracketedIpv6) {
  EXPECT_EQ(parsed("node0:29400"), (Endpoint{"node0", 29400, false}));
  EXPECT_EQ(parsed("gpu-7.rack_2.example.com:1"), (Endpoint{"gpu-7.rack_2.example.com", 1, false}));
  EXPECT_EQ(parsed("10.1.2.3:65535"), (Endpoint{"10.1.2.3", 65535, false}));
  EXPECT_EQ(parsed("[fd00::1]:29400"), (Endpoint{"fd00::1", 29400, true}));
  EXPECT_EQ(parsed("[::ffff:10.0.0.1]:80"), (Endpoint{"::ffff:10.0.0.1", 80, true}));
  EXPECT_EQ(parsed("[fe80::1%eth0]:80"), (Endpoint{"fe80::1%eth0", 80, true}));
}

TEST(Endpoint, ErrorsNameWhatIsWrong) {
  EXPECT_EQ(refused("node0:99999"), "port 99999 is out of range 1-65535 in 'node0:99999'");
  EXPECT_NE(refused("node0:123456789012345678901234").find("out of range"), std::string::npos);
  EXPECT_NE(refused("node0:0").find("port 0 is out of range 1-65535"), std::string::npos);
  EXPECT_NE(refused("node0:http").find("port 'http' is not a number"), std::string::npos);
  EXPECT_NE(refused("node0:-1").find("not a number"), std::string::npos);
  EXPECT_NE(refused("node0:").find("missing port"), std::string::npos);
  EXPECT_NE(refused("node0").find("missing port"), std::string::npos);
  EXPECT_NE(refused("[fd00::1]").find("missing port"), std::string::npos);
  EXPECT_NE(refused(":29400").find("missing host"), std::string::npos);
  EXPECT_NE(refused("").find("empty address"), std::string::npos);
  EXPECT_EQ(refused("fd00::1:29400"), "IPv6 address must be in brackets: [fd00::1]:29400");
  EXPECT_EQ(refused("fd00::1"), "IPv6 address must be in brackets: [fd00::1]:29400");
  EXPECT_NE(refused("[fd00::1:29400").find("missing ']'"), std::string::npos);
  EXPECT_NE(refused("[fd00::zz]:1").find("invalid IPv6 address"), std::string::npos);
  EXPECT_NE(refused("[fd00::1]29400").find("expected ':PORT'"), std::string::npos);
  EXPECT_NE(refused("10.0.0.256:1").find("invalid IPv4 address '10.0.0.256'"), std::string::npos);
  EXPECT_NE(refused("no de:1").find("invalid host name"), std::string::npos);
  EXPECT_NE(refused("a..b:1").find("invalid host name"), std::string::npos);
  EXPECT_NE(refused(".a:1").find("invalid host name"), std::string::npos);
  EXPECT_NE(refused(std::string(254, 'a') + ":1").find("longer than 253"), std::string::npos);
  EXPECT_NE(refused(std::string(64, 'a') + ".b:1").find("invalid host name"), std::string::npos);
}

TEST(Endpoint, ListenRulesAllowDefaultHostAndPortZero) {
  EXPECT_EQ(parsed(":29400", kListen), (Endpoint{"0.0.0.0", 29400, false}));
  EXPECT_EQ(parsed("127.0.0.1:0", kListen), (Endpoint{"127.0.0.1", 0, false}));
  EXPECT_EQ(parsed(":29400", EndpointRules{"::", std::nullopt, true}),
            (Endpoint{"::", 29400, true}));
  EXPECT_NE(refused("node0:70000", kListen).find("out of range 0-65535"), std::string::npos);
  // A bare number is neither a host nor, without its colon, a port.
  EXPECT_NE(refused("29400", kListen).find("write HOST:29400 or :29400"), std::string::npos);
  EXPECT_NE(refused("29400", kSeed).find("has no host"), std::string::npos);
}

TEST(Endpoint, SeedRulesAllowDefaultPort) {
  EXPECT_EQ(parsed("node0", kSeed), (Endpoint{"node0", 29400, false}));
  EXPECT_EQ(parsed("[fd00::1]", kSeed), (Endpoint{"fd00::1", 29400, true}));
  EXPECT_EQ(parsed("node0:1234", kSeed), (Endpoint{"node0", 1234, false}));
  EXPECT_NE(refused(":1234", kSeed).find("missing host"), std::string::npos);
  EXPECT_NE(refused("node0:0", kSeed).find("out of range 1-65535"), std::string::npos);
}

TEST(Endpoint, NullErrorPointerIsAllowed) {
  EXPECT_FALSE(parse_endpoint("node0:99999", nullptr).has_value());
  EXPECT_TRUE(parse_endpoint("node0:9", nullptr).has_value());
}

TEST(Endpoint, PrintsWithBracketsForIpv6) {
  EXPECT_EQ(to_string(Endpoint{"node0", 29400, false}), "node0:29400");
  EXPECT_EQ(to_string(Endpoint{"fd00::1", 29400, true}), "[fd00::1]:29400");
  EXPECT_EQ(zmq_address(Endpoint{"node0", 29400, false}), "tcp://node0:29400");
  EXPECT_EQ(zmq_address(Endpoint{"fd00::1", 29400, true}), "tcp://[fd00::1]:29400");
  EXPECT_EQ(zmq_address(Endpoint{"0.0.0.0", 0, false}), "tcp://0.0.0.0:*");
}

TEST(Endpoint, PrintedFormParsesBack) {
  for (const Endpoint& endpoint : {Endpoint{"node0", 1, false}, Endpoint{"10.0.0.1", 65535, false},
                                   Endpoint{"fd00::abcd", 29400, true}}) {
    EXPECT_EQ(parsed(to_string(endpoint)), endpoint);
  }
}

}  // namespace
}  // namespace gossip_rdzv::protocol
