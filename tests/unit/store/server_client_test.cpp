// Server + Client over loopback: every operation with c10d semantics.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <thread>

#include "test_util.hpp"
#include "tzrun/store/client.hpp"
#include "tzrun/store/server.hpp"
#include "tzrun/store/store.hpp"

namespace tzrun::store {
namespace {

using namespace std::chrono_literals;
using testing::eventually;
using testing::i64s;
using testing::RawConn;
using testing::req;
using testing::u8s;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.host = "127.0.0.1";
    o.log = logs_.sink();
    server_ = std::make_unique<Server>(std::move(o));
    server_->start();
  }
  ClientOptions client_options(Duration timeout = 20s) {
    ClientOptions o;
    o.host = "127.0.0.1";
    o.port = server_->port();
    o.timeout = timeout;
    return o;
  }
  std::unique_ptr<Client> client(Duration timeout = 20s) {
    return std::make_unique<Client>(client_options(timeout));
  }
  testing::LogCapture logs_;
  std::unique_ptr<Server> server_;
};

TEST_F(StoreTest, StartsOnEphemeralPort) {
  EXPECT_NE(server_->port(), 0);
  EXPECT_TRUE(server_->running());
  EXPECT_EQ(server_->endpoint(), "127.0.0.1:" + std::to_string(server_->port()));
  EXPECT_TRUE(logs_.contains("listening on 127.0.0.1:"));
}

TEST_F(StoreTest, SetGetBinaryAndLargeValues) {
  auto c = client();
  const std::string bin("\0\x01\xff zero", 8);
  c->set("bin", bin);
  EXPECT_EQ(c->get("bin"), bin);
  const std::string big(4 * 1024 * 1024 + 17, 'z');
  c->set("big", big);
  EXPECT_EQ(c->get("big"), big);
  c->set("bin", "overwritten");
  EXPECT_EQ(c->get("bin"), "overwritten");
  c->set("empty", "");
  EXPECT_EQ(c->get("empty"), "");
  EXPECT_TRUE(c->check({"empty"}));
}

TEST_F(StoreTest, GetTimesOutNamingKeyAndKeepsConnectionUsable) {
  auto c = client();
  try {
    (void)c->get("missing", 150ms);
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("'/missing'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("150ms"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(c->connected());
  c->set("after", "ok");
  EXPECT_EQ(c->get("after"), "ok");
  EXPECT_TRUE(eventually([&] { return server_->stats().waiters == 0; }));
}

TEST_F(StoreTest, WaitReleasedBySetFromAnotherClient) {
  auto waiter = client();
  auto setter = client();
  auto fut = std::async(std::launch::async, [&] { return waiter->get("late"); });
  ASSERT_TRUE(eventually([&] { return server_->stats().waiters == 1; }));
  setter->set("late", "value");
  EXPECT_EQ(fut.get(), "value");
  EXPECT_EQ(server_->stats().waiters, 0u);
}

TEST_F(StoreTest, WaitReleasedByAddAndMultiKeyWaitNeedsAll) {
  auto waiter = client();
  auto setter = client();
  auto fut = std::async(std::launch::async, [&] { waiter->wait({"a", "b"}); });
  ASSERT_TRUE(eventually([&] { return server_->stats().waiters == 1; }));
  setter->add("a", 1);
  EXPECT_EQ(fut.wait_for(100ms), std::future_status::timeout);  // still needs b
  setter->add("b", 5);
  fut.get();
  EXPECT_EQ(server_->stats().waiters, 0u);
}

TEST_F(StoreTest, WaitOnPresentKeysReturnsAtOnceAndEmptyWait) {
  auto c = client();
  c->set("x", "1");
  c->wait({"x"}, 1s);
  c->wait({}, 1s);
  EXPECT_THROW(c->wait({"x", "nope"}, 100ms), TimeoutError);
}

TEST_F(StoreTest, CompareSetTable) {
  auto c = client();
  // missing + expected empty -> creates desired
  EXPECT_EQ(c->compare_set("k", "", "first"), "first");
  EXPECT_EQ(c->get("k"), "first");
  // present + matches -> replaced
  EXPECT_EQ(c->compare_set("k", "first", "second"), "second");
  // present + mismatch -> current value, unchanged
  EXPECT_EQ(c->compare_set("k", "wrong", "third"), "second");
  EXPECT_EQ(c->get("k"), "second");
  // missing + expected non-empty -> returns expected, stores nothing ("lying")
  EXPECT_EQ(c->compare_set("m", "exp", "des"), "exp");
  EXPECT_FALSE(c->check({"m"}));
}

TEST_F(StoreTest, CompareSetWakesOnlyWhenItStores) {
  auto waiter = client();
  auto other = client();
  auto fut = std::async(std::launch::async, [&] { return waiter->get("cas"); });
  ASSERT_TRUE(eventually([&] { return server_->stats().waiters == 1; }));
  EXPECT_EQ(other->compare_set("cas", "nonempty", "x"), "nonempty");  // stores nothing
  EXPECT_EQ(fut.wait_for(200ms), std::future_status::timeout);
  EXPECT_EQ(server_->stats().waiters, 1u);
  EXPECT_EQ(other->compare_set("cas", "", "created"), "created");
  EXPECT_EQ(fut.get(), "created");
}

TEST_F(StoreTest, AddSemantics) {
  auto c = client();
  EXPECT_EQ(c->add("n", 3), 3);
  EXPECT_EQ(c->add("n", -5), -2);
  EXPECT_EQ(c->add("n", 0), -2);
  EXPECT_EQ(c->get("n"), "-2");
  c->set("ws", " 12abc");
  EXPECT_EQ(c->add("ws", 1), 13);  // std::stoll rules
}

TEST_F(StoreTest, AddOnNonNumericValueClosesOnlyThatConnection) {
  auto bad = client();
  auto good = client();
  bad->set("text", "hello");
  EXPECT_THROW(bad->add("text", 1), ConnectionError);
  EXPECT_FALSE(bad->connected());
  EXPECT_THROW(bad->set("x", "y"), ConnectionError);  // broken for good
  good->set("x", "y");
  EXPECT_EQ(good->get("x"), "y");
  EXPECT_TRUE(logs_.contains("is not a decimal integer")) << logs_.dump();
}

TEST_F(StoreTest, CheckNumKeysDeleteAppend) {
  auto c = client();
  EXPECT_FALSE(c->check({"a"}));
  c->set("a", "1");
  c->set("b", "2");
  EXPECT_TRUE(c->check({"a", "b"}));
  EXPECT_FALSE(c->check({"a", "c"}));
  EXPECT_EQ(c->num_keys(), 2);
  EXPECT_TRUE(c->delete_key("a"));
  EXPECT_FALSE(c->delete_key("a"));
  EXPECT_EQ(c->num_keys(), 1);
  c->append("log", "he");
  c->append("log", "llo");
  EXPECT_EQ(c->get("log"), "hello");
  // Append on a value another reader holds must not corrupt what that reader sees.
  auto other = client();
  const std::string before = other->get("log");
  c->append("log", "!");
  EXPECT_EQ(before, "hello");
  EXPECT_EQ(other->get("log"), "hello!");
}

TEST_F(StoreTest, AppendWakesWaiter) {
  auto waiter = client();
  auto other = client();
  auto fut = std::async(std::launch::async, [&] { return waiter->get("ap"); });
  ASSERT_TRUE(eventually([&] { return server_->stats().waiters == 1; }));
  other->append("ap", "x");
  EXPECT_EQ(fut.get(), "x");
}

TEST_F(StoreTest, MultiGetMultiSet) {
  auto c = client();
  c->multi_set({"m1", "m2", "m3"}, {"v1", "", "v3"});
  EXPECT_EQ(c->multi_get({"m3", "m1", "m2"}), (std::vector<std::string>{"v3", "v1", ""}));
  EXPECT_THROW(c->multi_set({"a"}, {}), std::invalid_argument);
  EXPECT_THROW((void)c->multi_get({"m1", "absent"}, 100ms), TimeoutError);
}

TEST_F(StoreTest, GetOfMissingKeyOnTheWireIsEmpty) {
  RawConn raw(server_->port());
  ASSERT_TRUE(raw.send(req(QueryType::kGet, {"/nothing"})));
  EXPECT_EQ(raw.recv(8), i64s(0));
  ASSERT_TRUE(raw.send(req(QueryType::kMultiGet, {"/a", "/b"})));
  EXPECT_EQ(raw.recv(16), i64s(0) + i64s(0));
}

TEST_F(StoreTest, PingEchoesNonce) {
  RawConn raw(server_->port());
  ASSERT_TRUE(raw.send(req(QueryType::kPing, {}, {}, 0xA1B2C3D4)));
  EXPECT_EQ(raw.recv(4), std::string("\xD4\xC3\xB2\xA1", 4));
}

// CANCEL_WAIT: always exactly one 01; a 00 that crossed the cancel comes first.
TEST_F(StoreTest, CancelWaitRace) {
  RawConn raw(server_->port());
  auto setter = client();
  // Nothing pending: just 01.
  ASSERT_TRUE(raw.send(req(QueryType::kCancelWait)));
  EXPECT_EQ(raw.recv(1), u8s(1));
  // Pending and cancelled: 01, and a later SET does not produce a stray 00.
  ASSERT_TRUE(raw.send(req(QueryType::kWait, {"/r1"})));
  ASSERT_TRUE(eventually([&] { return server_->stats().waiters == 1; }));
  ASSERT_TRUE(raw.send(req(QueryType::kCancelWait)));
  EXPECT_EQ(raw.recv(1), u8s(1));
  EXPECT_EQ(server_->stats().waiters, 0u);
  setter->set("r1", "v");
  EXPECT_TRUE(raw.silent_for(100ms));
  // The key arrives before the cancel is processed: 00 then 01.
  ASSERT_TRUE(raw.send(req(QueryType::kWait, {"/r2"})));
  ASSERT_TRUE(eventually([&] { return server_->stats().waiters == 1; }));
  setter->set("r2", "v");
  ASSERT_TRUE(setter->check({"r2"}));  // SET has no reply: be sure it was applied first
  ASSERT_TRUE(raw.send(req(QueryType::kCancelWait)));
  EXPECT_EQ(raw.recv(2), u8s(0) + u8s(1));
  // The connection keeps working.
  ASSERT_TRUE(raw.send(req(QueryType::kGet, {"/r2"})));
  EXPECT_EQ(raw.recv(9), i64s(1) + "v");
}

TEST_F(StoreTest, PipelinedWaitDoesNotBlockLaterCommands) {
  RawConn raw(server_->port());
  ASSERT_TRUE(raw.send(req(QueryType::kWait, {"/later"})));
  ASSERT_TRUE(raw.send(req(QueryType::kPing, {}, {}, 7)));
  EXPECT_EQ(raw.recv(4), std::string("\x07\0\0\0", 4));
  ASSERT_TRUE(raw.send(req(QueryType::kSet, {"/later"}, {"x"})));
  EXPECT_EQ(raw.recv(1), u8s(0));
}

TEST_F(StoreTest, Queues) {
  auto c = client();
  EXPECT_EQ(c->queue_len("q"), 0);
  EXPECT_EQ(c->try_queue_pop("q"), std::nullopt);
  c->queue_push("q", "one");
  c->queue_push("q", "two");
  EXPECT_EQ(c->queue_len("q"), 2);
  EXPECT_TRUE(c->check({"q"}));  // a non-empty queue counts as present
  EXPECT_EQ(c->num_keys(), 0);   // ... but not as a key
  EXPECT_EQ(c->queue_pop("q"), "one");
  EXPECT_EQ(c->try_queue_pop("q"), std::optional<std::string>("two"));
  EXPECT_EQ(c->queue_len("q"), 0);
  EXPECT_FALSE(c->check({"q"}));
  EXPECT_THROW((void)c->queue_pop("q", 100ms), TimeoutError);
}

TEST_F(StoreTest, QueuePopOnTheWire) {
  RawConn raw(server_->port());
  ASSERT_TRUE(raw.send(req(QueryType::kQueuePop, {"/wq"})));
  EXPECT_EQ(raw.recv(8), i64s(0));
  ASSERT_TRUE(raw.send(req(QueryType::kQueuePush, {"/wq"}, {"a"})));
  ASSERT_TRUE(raw.send(req(QueryType::kQueuePush, {"/wq"}, {"b"})));
  ASSERT_TRUE(raw.send(req(QueryType::kQueuePop, {"/wq"})));
  EXPECT_EQ(raw.recv(17), i64s(2) + i64s(1) + "a");
}

TEST_F(StoreTest, QueuePushWakesExactlyOneWaiter) {
  auto a = client();
  auto b = client();
  auto pusher = client();
  auto fa = std::async(std::launch::async, [&] { return a->queue_pop("jobs"); });
  auto fb = std::async(std::launch::async, [&] { return b->queue_pop("jobs"); });
  ASSERT_TRUE(eventually([&] { return server_->stats().waiters == 2; }));
  pusher->queue_push("jobs", "job1");
  ASSERT_TRUE(eventually([&] {
    return fa.wait_for(0s) == std::future_status::ready ||
           fb.wait_for(0s) == std::future_status::ready;
  }));
  std::this_thread::sleep_for(100ms);
  const bool a_done = fa.wait_for(0s) == std::future_status::ready;
  const bool b_done = fb.wait_for(0s) == std::future_status::ready;
  EXPECT_NE(a_done, b_done) << "exactly one consumer must be released";
  EXPECT_EQ(server_->stats().waiters, 1u);
  pusher->queue_push("jobs", "job2");
  std::vector<std::string> got{fa.get(), fb.get()};
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"job1", "job2"}));
  EXPECT_EQ(server_->stats().waiters, 0u);
}

TEST_F(StoreTest, ListKeysAndPrefixConventions) {
  auto c = client();
  c->set("user", "1");
  Client raw = c->with_key_prefix("");
  EXPECT_EQ(raw.add("init/", 1), 1);
  auto keys = c->list_keys();
  EXPECT_EQ(keys, std::vector<std::string>{"user"});  // init/ is hidden, "/" stripped
  auto raw_keys = raw.list_keys();
  std::sort(raw_keys.begin(), raw_keys.end());
  EXPECT_EQ(raw_keys, (std::vector<std::string>{"/user", "init/"}));
  EXPECT_EQ(c->num_keys(), 2);  // num_keys counts everything, like c10d
  EXPECT_TRUE(raw.check({"/user"}));
}

TEST_F(StoreTest, PrefixStoreComposes) {
  auto inner = std::shared_ptr<Store>(client());
  PrefixStore pg("default_pg", inner);
  pg.set("0", "nccl-id");
  auto nested = std::make_shared<PrefixStore>("cuda/", std::make_shared<PrefixStore>("0/", inner));
  nested->set("k", "v");
  Client raw = dynamic_cast<Client&>(*inner).with_key_prefix("");
  auto raw_keys = raw.list_keys();
  std::sort(raw_keys.begin(), raw_keys.end());
  // c10d: PrefixStore joins with "/", TCPStore adds a leading "/".
  EXPECT_EQ(raw_keys, (std::vector<std::string>{"/0//cuda//k", "/default_pg/0"}));
  EXPECT_EQ(pg.get("0"), "nccl-id");
  EXPECT_EQ(pg.list_keys(), std::vector<std::string>{"0"});
  EXPECT_EQ(nested->get("k"), "v");
  EXPECT_EQ(nested->list_keys(), std::vector<std::string>{"k"});
  EXPECT_EQ(pg.add("cnt", 2), 2);
  EXPECT_EQ(inner->add("default_pg/cnt", 1), 3);
  EXPECT_TRUE(pg.check({"cnt"}));
  EXPECT_EQ(pg.num_keys(), inner->num_keys());
  auto cloned = pg.clone();
  EXPECT_EQ(cloned->get("0"), "nccl-id");
}

TEST_F(StoreTest, BarrierReleasesAllArrivals) {
  constexpr int kWorld = 4;
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < kWorld; ++i) clients.push_back(client());
  std::vector<std::future<void>> futs;
  for (int i = 0; i < kWorld - 1; ++i) {
    futs.push_back(std::async(std::launch::async, [&, i] { clients[i]->barrier("b", kWorld); }));
  }
  ASSERT_TRUE(eventually([&] { return server_->stats().waiters == kWorld - 1; }));
  for (auto& f : futs) EXPECT_EQ(f.wait_for(0s), std::future_status::timeout);
  clients.back()->barrier("b", kWorld);
  for (auto& f : futs) f.get();
  EXPECT_EQ(clients[0]->get("b"), std::to_string(kWorld));  // arrivals counted as ASCII
}

TEST_F(StoreTest, BarrierTimeoutAndPrematureRelease) {
  auto a = client();
  try {
    a->barrier("tb", 2, 150ms);
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("world_size=2"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(eventually([&] { return server_->stats().waiters == 0; }));
  auto b = client();
  auto fut = std::async(std::launch::async, [&] { b->barrier("pb", 10); });
  ASSERT_TRUE(eventually([&] { return server_->stats().waiters == 1; }));
  a->set("pb", "reset");  // any SET/ADD on the key releases the waiters early
  fut.get();
}

TEST_F(StoreTest, ManyConcurrentClients) {
  constexpr int kClients = 80;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      try {
        Client c(client_options());
        c.add("arrived", 1);
        c.set("rank" + std::to_string(i), std::to_string(i));
        c.wait({"go"});
        // Everyone reads a neighbour's key after the release.
        const int peer = (i + 1) % kClients;
        if (c.get("rank" + std::to_string(peer)) != std::to_string(peer)) ++failures;
      } catch (const std::exception& e) {
        ++failures;
        ADD_FAILURE() << e.what();
      }
    });
  }
  auto master = client();
  ASSERT_TRUE(eventually([&] { return master->add("arrived", 0) == kClients; }, 60s));
  master->set("go", "1");
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(master->num_keys(), kClients + 2);
  EXPECT_GE(server_->stats().accepted_total, static_cast<std::size_t>(kClients + 1));
}

TEST_F(StoreTest, CloneUsesANewConnection) {
  auto c = client();
  const auto before = server_->stats().connections;
  auto copy = c->clone();
  EXPECT_TRUE(eventually([&] { return server_->stats().connections == before + 1; }));
  copy->set("c", "1");
  EXPECT_EQ(c->get("c"), "1");
  EXPECT_EQ(copy->timeout(), c->timeout());
}

TEST_F(StoreTest, StopClosesConnectionsAndIsIdempotent) {
  auto c = client();
  c->set("a", "b");
  server_->stop();
  server_->stop();
  EXPECT_FALSE(server_->running());
  EXPECT_THROW((void)c->get("a"), ConnectionError);
}

TEST_F(StoreTest, SecondServerOnSamePortFailsWithBindError) {
  ServerOptions o;
  o.host = "127.0.0.1";
  o.port = server_->port();
  Server second(o);
  try {
    second.start();
    FAIL() << "expected BindError";
  } catch (const BindError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("127.0.0.1:" + std::to_string(o.port)), std::string::npos) << what;
    EXPECT_NE(what.find("already in use"), std::string::npos) << what;
    EXPECT_NE(what.find("choose another port"), std::string::npos) << what;
  }
}

TEST(StoreServer, DefaultHostIsDualStack) {
  Server server(ServerOptions{});
  server.start();
  ClientOptions o;
  o.port = server.port();
  o.timeout = 10s;
  o.host = "127.0.0.1";
  Client v4(o);
  v4.set("k", "v4");
  // IPv6 loopback may be absent in some containers; only check it when it exists.
  RawConn probe(server.port());
  ASSERT_TRUE(probe.ok());
  const int fd6 = ::socket(AF_INET6, SOCK_STREAM, 0);
  sockaddr_in6 a6{};
  a6.sin6_family = AF_INET6;
  a6.sin6_port = htons(server.port());
  a6.sin6_addr = in6addr_loopback;
  const bool has_v6 = fd6 >= 0 && ::connect(fd6, reinterpret_cast<sockaddr*>(&a6), sizeof a6) == 0;
  if (fd6 >= 0) ::close(fd6);
  if (has_v6) {
    o.host = "::1";
    Client v6(o);
    EXPECT_EQ(v6.get("k"), "v4");
  }
  EXPECT_TRUE(server.endpoint() == "[::]:" + std::to_string(server.port()) ||
              server.endpoint() == "0.0.0.0:" + std::to_string(server.port()))
      << server.endpoint();
}

TEST(StoreClient, ConnectRetriesUntilServerListens) {
  // Find a free port, then start the server only after the client began connecting.
  std::uint16_t port;
  {
    ServerOptions o;
    o.host = "127.0.0.1";
    Server probe(o);
    probe.start();
    port = probe.port();
  }
  ClientOptions co;
  co.port = port;
  co.timeout = 30s;
  co.initial_backoff = 20ms;
  testing::LogCapture client_logs;
  co.log = client_logs.sink();
  auto fut = std::async(std::launch::async, [&] {
    Client c(co);
    c.set("hello", "world");
    return c.get("hello");
  });
  std::this_thread::sleep_for(300ms);
  ServerOptions o;
  o.host = "127.0.0.1";
  o.port = port;
  Server server(o);
  server.start();
  EXPECT_EQ(fut.get(), "world");
  EXPECT_TRUE(client_logs.contains("not reachable yet")) << client_logs.dump();
}

TEST(StoreClient, ConnectTimeoutNamesEndpoint) {
  std::uint16_t port;
  {
    ServerOptions o;
    o.host = "127.0.0.1";
    Server probe(o);
    probe.start();
    port = probe.port();
  }
  ClientOptions co;
  co.port = port;
  co.timeout = 400ms;
  co.initial_backoff = 20ms;
  const auto start = std::chrono::steady_clock::now();
  try {
    Client c(co);
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 15s);
}

TEST(StoreClient, RejectsNonStorePeer) {
  // A listener that answers the handshake with a wrong nonce.
  const int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(lfd, 4), 0);
  socklen_t len = sizeof a;
  ::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len);
  std::thread fake([lfd] {
    const int fd = ::accept(lfd, nullptr, nullptr);
    char buf[10];
    std::size_t got = 0;
    while (got < sizeof buf) {
      const ssize_t r = ::recv(fd, buf + got, sizeof buf - got, 0);
      if (r <= 0) break;
      got += static_cast<std::size_t>(r);
    }
    ::send(fd, "HTTP", 4, MSG_NOSIGNAL);
    ::close(fd);
  });
  ClientOptions co;
  co.port = ntohs(a.sin_port);
  co.timeout = 5s;
  EXPECT_THROW(Client c(co), ConnectionError);
  fake.join();
  ::close(lfd);
}

}  // namespace
}  // namespace tzrun::store
