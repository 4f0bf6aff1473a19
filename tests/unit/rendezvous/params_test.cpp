#include "tzrun/rendezvous/params.hpp"

#include <gtest/gtest.h>

#include "tzrun/rendezvous/errors.hpp"
#include "tzrun/rendezvous/factory.hpp"

namespace tzrun::rendezvous {
namespace {

using namespace std::chrono_literals;

TEST(Endpoint, ParsesLikeTorchrun) {
  EXPECT_EQ(ParseEndpoint("", 29400), (Endpoint{"localhost", 29400}));
  EXPECT_EQ(ParseEndpoint("node0", 29400), (Endpoint{"node0", 29400}));
  EXPECT_EQ(ParseEndpoint("node0:1234", 29400), (Endpoint{"node0", 1234}));
  EXPECT_EQ(ParseEndpoint("[::1]", 29400), (Endpoint{"::1", 29400}));
  EXPECT_EQ(ParseEndpoint("[::1]:5", 29400), (Endpoint{"::1", 5}));
  EXPECT_EQ(ParseEndpoint("localhost:0", 29400), (Endpoint{"localhost", 0}));
  EXPECT_THROW((void)ParseEndpoint("node0:99999", 29400), ConfigError);
  EXPECT_THROW((void)ParseEndpoint("node0:abc", 29400), ConfigError);
  EXPECT_THROW((void)ParseEndpoint("no de", 29400), ConfigError);
  EXPECT_THROW((void)ParseEndpoint("node0", -1), ConfigError);  // static needs a port
  EXPECT_EQ(FormatEndpoint({"::1", 7}), "[::1]:7");
}

TEST(Conf, BooleansDurationsIntegers) {
  ConfMap c{{"a", "YES"}, {"b", "0"}, {"bad", "maybe"}, {"t", "0.25"},
            {"z", "0"},   {"n", "3"}, {"neg", "-1"}};
  EXPECT_EQ(ConfBool(c, "a"), true);
  EXPECT_EQ(ConfBool(c, "b"), false);
  EXPECT_EQ(ConfBool(c, "missing"), std::nullopt);
  EXPECT_THROW((void)ConfBool(c, "bad"), ConfigError);
  EXPECT_EQ(ConfSeconds(c, "t"), std::chrono::milliseconds(250));
  EXPECT_EQ(ConfSeconds(c, "n"), std::chrono::milliseconds(3000));
  EXPECT_THROW((void)ConfSeconds(c, "z"), ConfigError);
  EXPECT_THROW((void)ConfSeconds(c, "bad"), ConfigError);
  EXPECT_EQ(ConfPositiveInt(c, "n"), 3);
  EXPECT_THROW((void)ConfPositiveInt(c, "neg"), ConfigError);
  EXPECT_THROW((void)ConfPositiveInt(c, "t"), ConfigError);
}

TEST(Host, LoopbackAndLocalhostAreThisMachine) {
  EXPECT_TRUE(MatchesMachineHostname("localhost"));
  EXPECT_TRUE(MatchesMachineHostname("127.0.0.1"));
  EXPECT_TRUE(MatchesMachineHostname("127.0.0.7"));
  EXPECT_TRUE(MatchesMachineHostname("::1"));
  EXPECT_FALSE(MatchesMachineHostname("192.0.2.1"));  // TEST-NET-1, never local
  EXPECT_FALSE(MatchesMachineHostname("no-such-host.invalid"));
}

// The LaunchConfig -> options conversion is the agent's
// (tests/unit/agent/test_rendezvous_options.cpp).
TEST(Factory, RejectsUnsupportedBackends) {
  HandlerParams p;
  p.backend = "etcd";  // the legacy backend checks its options before reaching etcd
  EXPECT_THROW((void)MakeHandler(p, {}), ConfigError);
  p.backend = "zookeeper";
  EXPECT_THROW((void)MakeHandler(p, {}), ConfigError);
}

}  // namespace
}  // namespace tzrun::rendezvous
