#include "tzrun/rendezvous/params.hpp"

#include <gtest/gtest.h>

#include "tzrun/rendezvous/errors.hpp"
#include "tzrun/rendezvous/factory.hpp"

namespace tzrun::rendezvous {
namespace {

using namespace std::chrono_literals;

TEST(Endpoint, ParsesLikeTorchrun) {
  EXPECT_EQ(parse_endpoint("", 29400), (Endpoint{"localhost", 29400}));
  EXPECT_EQ(parse_endpoint("node0", 29400), (Endpoint{"node0", 29400}));
  EXPECT_EQ(parse_endpoint("node0:1234", 29400), (Endpoint{"node0", 1234}));
  EXPECT_EQ(parse_endpoint("[::1]", 29400), (Endpoint{"::1", 29400}));
  EXPECT_EQ(parse_endpoint("[::1]:5", 29400), (Endpoint{"::1", 5}));
  EXPECT_EQ(parse_endpoint("localhost:0", 29400), (Endpoint{"localhost", 0}));
  EXPECT_THROW((void)parse_endpoint("node0:99999", 29400), ConfigError);
  EXPECT_THROW((void)parse_endpoint("node0:abc", 29400), ConfigError);
  EXPECT_THROW((void)parse_endpoint("no de", 29400), ConfigError);
  EXPECT_THROW((void)parse_endpoint("node0", -1), ConfigError);  // static needs a port
  EXPECT_EQ(format_endpoint({"::1", 7}), "[::1]:7");
}

TEST(Conf, BooleansDurationsIntegers) {
  ConfMap c{{"a", "YES"}, {"b", "0"}, {"bad", "maybe"}, {"t", "0.25"},
            {"z", "0"},   {"n", "3"}, {"neg", "-1"}};
  EXPECT_EQ(conf_bool(c, "a"), true);
  EXPECT_EQ(conf_bool(c, "b"), false);
  EXPECT_EQ(conf_bool(c, "missing"), std::nullopt);
  EXPECT_THROW((void)conf_bool(c, "bad"), ConfigError);
  EXPECT_EQ(conf_seconds(c, "t"), std::chrono::milliseconds(250));
  EXPECT_EQ(conf_seconds(c, "n"), std::chrono::milliseconds(3000));
  EXPECT_THROW((void)conf_seconds(c, "z"), ConfigError);
  EXPECT_THROW((void)conf_seconds(c, "bad"), ConfigError);
  EXPECT_EQ(conf_positive_int(c, "n"), 3);
  EXPECT_THROW((void)conf_positive_int(c, "neg"), ConfigError);
  EXPECT_THROW((void)conf_positive_int(c, "t"), ConfigError);
}

TEST(Host, LoopbackAndLocalhostAreThisMachine) {
  EXPECT_TRUE(matches_machine_hostname("localhost"));
  EXPECT_TRUE(matches_machine_hostname("127.0.0.1"));
  EXPECT_TRUE(matches_machine_hostname("127.0.0.7"));
  EXPECT_TRUE(matches_machine_hostname("::1"));
  EXPECT_FALSE(matches_machine_hostname("192.0.2.1"));  // TEST-NET-1, never local
  EXPECT_FALSE(matches_machine_hostname("no-such-host.invalid"));
}

TEST(Factory, OptionsFromLaunchConfig) {
  LaunchConfig cfg;
  cfg.max_nodes = 3;
  cfg.node_rank = 2;
  cfg.master_addr = "[fe80::1]";
  cfg.master_port = 4000;
  cfg.rdzv_conf = {{"timeout", "12"}, {"read_timeout", "5"}};
  auto s = static_options(cfg);
  EXPECT_EQ(s.master_addr, "fe80::1");
  EXPECT_EQ(s.master_port, 4000);
  EXPECT_EQ(s.nnodes, 3);
  EXPECT_EQ(s.node_rank, 2);
  EXPECT_EQ(s.timeout, 12s);
  EXPECT_EQ(s.read_timeout, 5s);
  cfg.rdzv_endpoint = "node0:5000";
  EXPECT_EQ(static_options(cfg).master_addr, "node0");
  EXPECT_EQ(static_options(cfg).master_port, 5000);

  LaunchConfig d;
  d.rdzv_backend = "c10d";
  d.rdzv_id = "job";
  d.min_nodes = 2;
  d.max_nodes = 4;
  d.rdzv_endpoint = "head";
  d.rdzv_conf = {{"join_timeout", "7"},        {"last_call_timeout", "1.5"},
                 {"keep_alive_interval", "2"}, {"keep_alive_max_attempt", "4"},
                 {"is_host", "false"},         {"read_timeout", "9"}};
  auto o = dynamic_options(d, "me");
  EXPECT_EQ(o.endpoint, (Endpoint{"head", 29400}));
  EXPECT_EQ(o.join_timeout, 7s);
  EXPECT_EQ(o.last_call_timeout, 1500ms);
  EXPECT_EQ(o.keep_alive_interval, 2s);
  EXPECT_EQ(o.keep_alive_max_attempt, 4);
  EXPECT_EQ(o.is_host, false);
  EXPECT_EQ(o.read_timeout, 9s);
  EXPECT_EQ(o.close_timeout, 30s);  // torchrun defaults for the rest
  EXPECT_EQ(o.heartbeat_timeout, 5s);
  EXPECT_EQ(o.local_addr, "me");

  d.rdzv_conf = {{"store_type", "file"}};
  EXPECT_THROW((void)dynamic_options(d, "me"), ConfigError);
  d.rdzv_conf = {};
  d.rdzv_backend = "etcd-v2";
  EXPECT_THROW((void)make_handler(d, "me", {}), ConfigError);
}

}  // namespace
}  // namespace tzrun::rendezvous
