// The etcd v2 client and torch's EtcdStore semantics (src/rendezvous/etcd_client.hpp,
// etcd_store.hpp) against a real etcd server (Debian's etcd-server, started here on free ports
// in a temporary directory with --enable-v2=true). Skipped, with the reason, when no etcd
// binary is installed (scripts/setup.sh installs it).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "etcd_client.hpp"
#include "etcd_store.hpp"

namespace tzrun::rendezvous::detail {
namespace {

using std::chrono::milliseconds;

std::string EtcdBinary() {
  const char* env = std::getenv("TZRUN_ETCD");
  for (std::string p : {env != nullptr ? std::string(env) : std::string(),
                        std::string("/usr/bin/etcd"), std::string("/usr/local/bin/etcd")}) {
    if (!p.empty() && ::access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

class EtcdLive : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string bin = EtcdBinary();
    if (bin.empty()) GTEST_SKIP() << "no etcd binary (apt-get install etcd-server, or TZRUN_ETCD)";
    dir_ = std::filesystem::temp_directory_path() / ("tzrun_etcd_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    port_ = FreePort();
    const std::string client = "http://127.0.0.1:" + std::to_string(port_);
    const std::string peer = "http://127.0.0.1:" + std::to_string(FreePort());
    std::vector<std::string> args = {bin,
                                     "--name=tzrun",
                                     "--data-dir=" + (dir_ / "data").string(),
                                     "--listen-client-urls=" + client,
                                     "--advertise-client-urls=" + client,
                                     "--listen-peer-urls=" + peer,
                                     "--initial-advertise-peer-urls=" + peer,
                                     "--initial-cluster=tzrun=" + peer,
                                     "--enable-v2=true",
                                     "--logger=zap"};
    const std::string log = (dir_ / "etcd.log").string();
    pid_ = ::fork();
    if (pid_ == 0) {
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      if (std::FILE* f = std::fopen(log.c_str(), "w"); f != nullptr) {
        ::dup2(::fileno(f), 1);
        ::dup2(::fileno(f), 2);
      }
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    EtcdClient c("127.0.0.1", port_, milliseconds(500));
    for (int i = 0; i < 200; ++i) {
      try {
        c.Get("/");
        return;
      } catch (const EtcdError&) {
        if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
          pid_ = -1;
          FAIL() << "etcd exited at start; see " << log;
        }
        std::this_thread::sleep_for(milliseconds(50));
      }
    }
    FAIL() << "etcd did not answer within 10 s; see " << log;
  }
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  [[nodiscard]] EtcdClient Client() const { return {"127.0.0.1", port_, milliseconds(5000)}; }

  std::filesystem::path dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

TEST_F(EtcdLive, KeysApiWritesReadsAndConditions) {
  const auto c = Client();
  auto r = c.Put("/t/a", "1");
  EXPECT_EQ(r.action, "set");
  EXPECT_EQ(c.Get("/t/a").node.value, "1");
  EtcdWrite create;
  create.prev_exist = false;
  try {
    c.Put("/t/a", "2", create);
    FAIL() << "prevExist=false on an existing key succeeded";
  } catch (const EtcdError& e) {
    EXPECT_EQ(e.Code(), etcd_code::kNodeExist);
  }
  EtcdWrite cas;
  cas.prev_value = "nope";
  try {
    c.Put("/t/a", "2", cas);
    FAIL() << "CAS with a wrong prevValue succeeded";
  } catch (const EtcdError& e) {
    EXPECT_EQ(e.Code(), etcd_code::kTestFailed);
  }
  cas.prev_value = "1";
  EXPECT_EQ(c.Put("/t/a", "2", cas).action, "compareAndSwap");
  EtcdWrite by_index;
  by_index.prev_index = c.Get("/t/a").node.modified_index;
  EXPECT_EQ(c.Put("/t/a", "3", by_index).node.value, "3");
  try {
    c.Get("/t/missing");
    FAIL();
  } catch (const EtcdError& e) {
    EXPECT_EQ(e.Code(), etcd_code::kKeyNotFound);
  }
  EXPECT_EQ(c.Delete("/t/a").action, "delete");
}

TEST_F(EtcdLive, WatchSeesAWriteAndTimesOut) {
  const auto c = Client();
  const auto idx = c.Put("/w/x", "0").etcd_index;
  EXPECT_FALSE(c.Watch("/w", true, idx + 1, milliseconds(300)));
  std::thread writer([&] {
    std::this_thread::sleep_for(milliseconds(200));
    Client().Put("/w/y", "hello");
  });
  auto ev = c.Watch("/w", true, idx + 1, milliseconds(5000));
  writer.join();
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->node.key, "/w/y");
  EXPECT_EQ(ev->node.value, "hello");
}

TEST_F(EtcdLive, TorchEtcdStoreSemantics) {
  EtcdKvStore s(Client(), "/torch/elastic/store", milliseconds(3000));
  // torch's layout: <prefix>/<b64(key)> = b64(value)
  s.Set("foo", "bar");
  EXPECT_EQ(s.EtcdKey("foo"), "/torch/elastic/store/Zm9v");
  EXPECT_EQ(Client().Get("/torch/elastic/store/Zm9v").node.value, "YmFy");
  EXPECT_EQ(s.Get("foo"), "bar");
  EXPECT_EQ(s.Add("n", 3), 3);  // created as b64("3")
  EXPECT_EQ(Client().Get(s.EtcdKey("n")).node.value, "Mw==");
  EXPECT_EQ(s.Add("n", -5), -2);
  EXPECT_TRUE(s.Check({"foo", "n"}));
  EXPECT_FALSE(s.Check({"foo", "late"}));
  std::thread late([this] {
    std::this_thread::sleep_for(milliseconds(300));
    EtcdKvStore(Client(), "/torch/elastic/store", milliseconds(3000)).Set("late", "v");
  });
  const auto t0 = std::chrono::steady_clock::now();
  s.Wait({"foo", "late"});
  late.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(2500));
  EXPECT_EQ(s.Get("late"), "v");
  EXPECT_THROW(s.Wait({"never"}, milliseconds(300)), RendezvousTimeoutError);
}

TEST_F(EtcdLive, ConcurrentAddsAreAtomic) {
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([this] {
      EtcdKvStore s(Client(), "/cnt", milliseconds(3000));
      for (int i = 0; i < 5; ++i) s.Add("c", 1);
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(EtcdKvStore(Client(), "/cnt", milliseconds(3000)).Add("c", 0), 20);
}

}  // namespace
}  // namespace tzrun::rendezvous::detail
