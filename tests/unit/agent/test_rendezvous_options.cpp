// Unit tests of the LaunchConfig -> rendezvous options conversion
// (src/agent/rendezvous_options.hpp).
#include <gtest/gtest.h>

#include <cstdio>
#include <tuple>

#include "agent_error.hpp"
#include "rendezvous_options.hpp"
#include "tzrun/rendezvous/errors.hpp"

namespace tzrun::agent {
namespace {

using namespace std::chrono_literals;
using rendezvous::ConfigError;
using rendezvous::Endpoint;

TEST(RendezvousOptions, StaticFromLaunchConfig) {
  LaunchConfig cfg;
  cfg.max_nodes = 3;
  cfg.node_rank = 2;
  cfg.master_addr = "[fe80::1]";
  cfg.master_port = 4000;
  cfg.rdzv_conf = {{"timeout", "12"}, {"read_timeout", "5"}};
  auto s = StaticOptions(cfg);
  EXPECT_EQ(s.master_addr, "fe80::1");
  EXPECT_EQ(s.master_port, 4000);
  EXPECT_EQ(s.nnodes, 3);
  EXPECT_EQ(s.node_rank, 2);
  EXPECT_EQ(s.timeout, 12s);
  EXPECT_EQ(s.read_timeout, 5s);
  cfg.rdzv_endpoint = "node0:5000";
  EXPECT_EQ(StaticOptions(cfg).master_addr, "node0");
  EXPECT_EQ(StaticOptions(cfg).master_port, 5000);
}

TEST(RendezvousOptions, DynamicFromLaunchConfig) {
  LaunchConfig d;
  d.rdzv_backend = "c10d";
  d.rdzv_id = "job";
  d.min_nodes = 2;
  d.max_nodes = 4;
  d.rdzv_endpoint = "head";
  d.rdzv_conf = {{"join_timeout", "7"},        {"last_call_timeout", "1.5"},
                 {"keep_alive_interval", "2"}, {"keep_alive_max_attempt", "4"},
                 {"is_host", "false"},         {"read_timeout", "9"}};
  auto o = DynamicOptions(d, "me");
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

  // store_type (stripped, any case, as torchrun): tcp is the default; file makes the endpoint
  // the FileStore's path ("" = a temporary file), without the TCP-only keys or --standalone.
  d.rdzv_conf = {{"store_type", "TCP"}};
  EXPECT_FALSE(DynamicOptions(d, "me").store_file);
  d.rdzv_endpoint = "/shared/job.store";
  d.rdzv_conf = {{"store_type", " File "}, {"join_timeout", "7"}};
  o = DynamicOptions(d, "me");
  EXPECT_EQ(o.store_file, "/shared/job.store");
  EXPECT_EQ(o.join_timeout, 7s);
  d.rdzv_endpoint = "";
  EXPECT_EQ(DynamicOptions(d, "me").store_file, "");
  auto refused = [&](std::map<std::string, std::string> conf, bool standalone) {
    d.rdzv_conf = std::move(conf);
    d.standalone = standalone;
    try {
      (void)DynamicOptions(d, "me");
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.ExitCode(), 2);
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(refused({{"store_type", "etcd"}}, false)
                .find("store_type=etcd: the c10d store type "
                      "is tcp or file"),
            std::string::npos);
  for (const char* key : {"is_host", "read_timeout"}) {
    EXPECT_NE(refused({{"store_type", "file"}, {key, "1"}}, false)
                  .find(std::string("--rdzv-conf ") + key + ": only the TCP store has it"),
              std::string::npos);
  }
  EXPECT_NE(refused({{"store_type", "file"}}, true).find("'localhost:0'"), std::string::npos);
}

TEST(RendezvousOptions, LegacyEtcdKeysAndRefusals) {
  LaunchConfig d;
  d.rdzv_id = "job";
  d.min_nodes = 2;
  d.max_nodes = 3;
  d.rdzv_backend = "etcd";
  d.rdzv_endpoint = "etcd-host";
  d.rdzv_conf = {{"timeout", "12"},
                 {"last_call_timeout", "2"},
                 {"etcd_prefix", "/p"},
                 {"read_timeout", "4"},
                 {"protocol", "http"}};
  const auto p = HandlerParams(d, "me");
  EXPECT_EQ(p.backend, "etcd");
  const auto& o = p.etcd_options;
  EXPECT_EQ(o.endpoint.port, 2379);
  EXPECT_EQ(o.timeout, 12s);
  EXPECT_EQ(o.last_call_timeout, 2s);
  EXPECT_EQ(o.read_timeout, 4s);
  EXPECT_EQ(o.prefix, "/p");
  EXPECT_EQ(o.min_nodes, 2);
  EXPECT_EQ(o.max_nodes, 3);
  d.rdzv_conf = {};
  EXPECT_EQ(EtcdOptions(d, "me").prefix, "/torchelastic/p2p");  // torchrun's default
  for (const auto& [k, v] :
       std::vector<std::pair<std::string, std::string>>{{"protocol", "HTTPS"},
                                                        {"protocol", "ftp"},
                                                        {"cacert", "/no/such/ca.pem"},
                                                        {"cert", "/no/such/c.pem"},
                                                        {"key", "/no/such/k.pem"},
                                                        {"join_timeout", "5"},
                                                        {"keep_alive_interval", "1"},
                                                        {"is_host", "1"}}) {
    d.rdzv_conf = {{k, v}};
    try {
      (void)EtcdOptions(d, "me");
      ADD_FAILURE() << k << "=" << v << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("--rdzv-conf " + k), std::string::npos) << e.what();
    }
  }
}

TEST(RendezvousOptions, EtcdV2DefaultsAndRefusedKeys) {
  LaunchConfig d;
  d.rdzv_id = "job";
  d.rdzv_backend = "etcd-v2";
  d.rdzv_endpoint = "etcd-host";
  auto p = HandlerParams(d, "me");
  EXPECT_EQ(p.backend, "etcd-v2");
  EXPECT_EQ(p.dynamic_options.backend, "etcd-v2");
  EXPECT_EQ(p.dynamic_options.endpoint.port, 2379);  // etcd's client port, as torchrun
  d.rdzv_conf = {{"protocol", "HTTP"}, {"read_timeout", "7"}};
  EXPECT_EQ(DynamicOptions(d, "me").read_timeout, 7s);
  for (const auto& [k, v] :
       std::vector<std::pair<std::string, std::string>>{{"protocol", "ftp"},
                                                        {"ssl_cert", "/no/such/c.pem"},
                                                        {"ssl_cert_key", "/no/such/k.pem"},
                                                        {"ca_cert", "/no/such/ca.pem"},
                                                        {"is_host", "true"},
                                                        {"store_type", "tcp"}}) {
    d.rdzv_conf = {{k, v}};
    try {
      (void)DynamicOptions(d, "me");
      ADD_FAILURE() << k << "=" << v << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("--rdzv-conf " + k), std::string::npos) << e.what();
    }
  }
  d.rdzv_backend = "c10d";
  d.rdzv_conf = {{"is_host", "true"}};
  EXPECT_EQ(DynamicOptions(d, "me").backend, "c10d");
  EXPECT_EQ(DynamicOptions(d, "me").endpoint.port, 29400);
}

// python-etcd's etcd.Client(protocol=, cert=, ca_cert=) as each torchrun backend builds it.
TEST(RendezvousOptions, EtcdTlsKeysOfBothBackends) {
  const std::string pem = ::testing::TempDir() + "tzrun_tls_test.pem";
  std::FILE* f = std::fopen(pem.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  LaunchConfig d;
  d.rdzv_id = "job";
  d.rdzv_backend = "etcd-v2";
  d.rdzv_conf = {
      {"protocol", " HTTPS "}, {"ssl_cert", pem}, {"ssl_cert_key", pem}, {"ca_cert", pem}};
  const auto v2 = DynamicOptions(d, "me").etcd_tls;
  EXPECT_EQ(v2, (rendezvous::EtcdTls{true, pem, pem, pem}));
  d.rdzv_conf = {{"protocol", "https"}, {"ssl_cert", pem}};  // a PEM with the key inside
  EXPECT_EQ(DynamicOptions(d, "me").etcd_tls, (rendezvous::EtcdTls{true, pem, "", ""}));
  d.rdzv_conf = {};
  EXPECT_EQ(DynamicOptions(d, "me").etcd_tls, rendezvous::EtcdTls{});  // http
  d.rdzv_backend = "etcd";
  d.rdzv_conf = {{"protocol", "https"}, {"cert", pem}, {"key", pem}, {"cacert", pem}};
  EXPECT_EQ(EtcdOptions(d, "me").tls, (rendezvous::EtcdTls{true, pem, pem, pem}));
  // Refused: a certificate over http (torchrun ignores it), a key without its certificate.
  for (const auto& [backend, conf, needle] :
       std::vector<std::tuple<std::string, rendezvous::ConfMap, std::string>>{
           {"etcd-v2",
            {{"ca_cert", pem}},
            "--rdzv-conf ca_cert: a certificate needs protocol=https"},
           {"etcd-v2", {{"protocol", "https"}, {"ssl_cert_key", pem}}, "--rdzv-conf ssl_cert_key"},
           {"etcd", {{"cert", pem}, {"key", pem}}, "--rdzv-conf cert: a certificate needs"},
           {"etcd", {{"protocol", "https"}, {"key", pem}}, "--rdzv-conf key: a key file without"},
           {"etcd",
            {{"protocol", "https"}, {"cacert", pem + ".missing"}},
            "--rdzv-conf cacert=" + pem + ".missing: cannot read the file"}}) {
    d.rdzv_backend = backend;
    d.rdzv_conf = conf;
    try {
      (void)HandlerParams(d, "me");
      ADD_FAILURE() << backend << " accepted " << needle;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  }
  std::remove(pem.c_str());
}

TEST(RendezvousOptions, HandlerParamsPickTheBackend) {
  LaunchConfig cfg;
  cfg.rdzv_id = "job";
  auto p = HandlerParams(cfg, "me");
  EXPECT_EQ(p.backend, "static");
  EXPECT_EQ(p.static_options.run_id, "job");
  cfg.standalone = true;
  p = HandlerParams(cfg, "me");
  EXPECT_EQ(p.backend, "c10d");
  EXPECT_EQ(p.dynamic_options.local_addr, "me");
  EXPECT_TRUE(IsDynamic(cfg));
}

TEST(RendezvousOptions, TopologyIsAUsageError) {
  LaunchConfig cfg;
  cfg.nproc_per_node = 0;
  try {
    ValidateTopology(cfg);
    FAIL() << "expected an AgentError";
  } catch (const AgentError& e) {
    EXPECT_EQ(e.ExitCode(), exit_code::kUsage);
  }
  cfg.nproc_per_node = 1;
  cfg.max_nodes = 2;
  cfg.node_rank = 2;
  EXPECT_THROW(ValidateTopology(cfg), AgentError);
  cfg.rdzv_backend = "c10d";  // c10d assigns node ranks itself
  EXPECT_NO_THROW(ValidateTopology(cfg));
}

TEST(RendezvousOptions, ErrorsCarryTheirExitCodes) {
  EXPECT_EQ(ConfigError("x").ExitCode(), exit_code::kUsage);
  EXPECT_EQ(rendezvous::RendezvousTimeoutError("x").ExitCode(), exit_code::kInfrastructure);
  EXPECT_EQ(rendezvous::RendezvousGracefulExit("x").ExitCode(), 0);
  EXPECT_EQ(rendezvous::RendezvousClosedError("x").ExitCode(), exit_code::kInfrastructure);
  EXPECT_FALSE(rendezvous::RendezvousClosedError("x").CloserExitCode());
  EXPECT_EQ(rendezvous::RendezvousClosedError("x", 7).ExitCode(), 7);
}

TEST(RendezvousOptions, MonitorIntervalIsTheWatchInterval) {
  LaunchConfig d;
  d.rdzv_backend = "c10d";
  EXPECT_EQ(DynamicOptions(d, "me").watch_interval, 100ms);  // torchrun's default 0.1 s
  d.monitor_interval = 2.5;
  EXPECT_EQ(DynamicOptions(d, "me").watch_interval, 2500ms);
  d.monitor_interval = 1e-6;
  EXPECT_EQ(MonitorInterval(d), 1ms);
  d.monitor_interval = 1e30;
  EXPECT_EQ(MonitorInterval(d), std::chrono::milliseconds(86'400'000));
}

}  // namespace
}  // namespace tzrun::agent
