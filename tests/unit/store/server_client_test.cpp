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
using testing::Eventually;
using testing::I64s;
using testing::RawConn;
using testing::Req;
using testing::U8s;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.host = "127.0.0.1";
    o.log = logs_.Sink();
    server_ = std::make_unique<Server>(std::move(o));
    server_->Start();
  }
  ClientOptions MakeClientOptions(Duration timeout = 20s) {
    ClientOptions o;
    o.host = "127.0.0.1";
    o.port = server_->Port();
    o.timeout = timeout;
    return o;
  }
  std::unique_ptr<Client> MakeClient(Duration timeout = 20s) {
    return std::make_unique<Client>(MakeClientOptions(timeout));
  }
  testing::LogCapture logs_;
  std::unique_ptr<Server> server_;
};

TEST_F(StoreTest, StartsOnEphemeralPort) {
  EXPECT_NE(server_->Port(), 0);
  EXPECT_TRUE(server_->Running());
  EXPECT_EQ(server_->Endpoint(), "127.0.0.1:" + std::to_string(server_->Port()));
  EXPECT_TRUE(logs_.Contains("listening on 127.0.0.1:"));
}

TEST_F(StoreTest, SetGetBinaryAndLargeValues) {
  auto c = MakeClient();
  const std::string bin("\0\x01\xff zero", 8);
  c->Set("bin", bin);
  EXPECT_EQ(c->Get("bin"), bin);
  const std::string big(4 * 1024 * 1024 + 17, 'z');
  c->Set("big", big);
  EXPECT_EQ(c->Get("big"), big);
  c->Set("bin", "overwritten");
  EXPECT_EQ(c->Get("bin"), "overwritten");
  c->Set("empty", "");
  EXPECT_EQ(c->Get("empty"), "");
  EXPECT_TRUE(c->Check({"empty"}));
}

TEST_F(StoreTest, GetTimesOutNamingKeyAndKeepsConnectionUsable) {
  auto c = MakeClient();
  try {
    (void)c->Get("missing", 150ms);
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("'/missing'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("150ms"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(c->Connected());
  c->Set("after", "ok");
  EXPECT_EQ(c->Get("after"), "ok");
  EXPECT_TRUE(Eventually([&] { return server_->Stats().waiters == 0; }));
}

TEST_F(StoreTest, WaitReleasedBySetFromAnotherClient) {
  auto waiter = MakeClient();
  auto setter = MakeClient();
  auto fut = std::async(std::launch::async, [&] { return waiter->Get("late"); });
  ASSERT_TRUE(Eventually([&] { return server_->Stats().waiters == 1; }));
  setter->Set("late", "value");
  EXPECT_EQ(fut.get(), "value");
  EXPECT_EQ(server_->Stats().waiters, 0u);
}

TEST_F(StoreTest, WaitReleasedByAddAndMultiKeyWaitNeedsAll) {
  auto waiter = MakeClient();
  auto setter = MakeClient();
  auto fut = std::async(std::launch::async, [&] { waiter->Wait({"a", "b"}); });
  ASSERT_TRUE(Eventually([&] { return server_->Stats().waiters == 1; }));
  setter->Add("a", 1);
  EXPECT_EQ(fut.wait_for(100ms), std::future_status::timeout);  // still needs b
  setter->Add("b", 5);
  fut.get();
  EXPECT_EQ(server_->Stats().waiters, 0u);
}

TEST_F(StoreTest, WaitOnPresentKeysReturnsAtOnceAndEmptyWait) {
  auto c = MakeClient();
  c->Set("x", "1");
  c->Wait({"x"}, 1s);
  c->Wait({}, 1s);
  EXPECT_THROW(c->Wait({"x", "nope"}, 100ms), TimeoutError);
}

TEST_F(StoreTest, CompareSetTable) {
  auto c = MakeClient();
  // missing + expected empty -> creates desired
  EXPECT_EQ(c->CompareSet("k", "", "first"), "first");
  EXPECT_EQ(c->Get("k"), "first");
  // present + matches -> replaced
  EXPECT_EQ(c->CompareSet("k", "first", "second"), "second");
  // present + mismatch -> current value, unchanged
  EXPECT_EQ(c->CompareSet("k", "wrong", "third"), "second");
  EXPECT_EQ(c->Get("k"), "second");
  // missing + expected non-empty -> returns expected, stores nothing ("lying")
  EXPECT_EQ(c->CompareSet("m", "exp", "des"), "exp");
  EXPECT_FALSE(c->Check({"m"}));
}

TEST_F(StoreTest, CompareSetWakesOnlyWhenItStores) {
  auto waiter = MakeClient();
  auto other = MakeClient();
  auto fut = std::async(std::launch::async, [&] { return waiter->Get("cas"); });
  ASSERT_TRUE(Eventually([&] { return server_->Stats().waiters == 1; }));
  EXPECT_EQ(other->CompareSet("cas", "nonempty", "x"), "nonempty");  // stores nothing
  EXPECT_EQ(fut.wait_for(200ms), std::future_status::timeout);
  EXPECT_EQ(server_->Stats().waiters, 1u);
  EXPECT_EQ(other->CompareSet("cas", "", "created"), "created");
  EXPECT_EQ(fut.get(), "created");
}

TEST_F(StoreTest, AddSemantics) {
  auto c = MakeClient();
  EXPECT_EQ(c->Add("n", 3), 3);
  EXPECT_EQ(c->Add("n", -5), -2);
  EXPECT_EQ(c->Add("n", 0), -2);
  EXPECT_EQ(c->Get("n"), "-2");
  c->Set("ws", " 12abc");
  EXPECT_EQ(c->Add("ws", 1), 13);  // std::stoll rules
}

TEST_F(StoreTest, AddOnNonNumericValueClosesOnlyThatConnection) {
  auto bad = MakeClient();
  auto good = MakeClient();
  bad->Set("text", "hello");
  EXPECT_THROW(bad->Add("text", 1), ConnectionError);
  EXPECT_FALSE(bad->Connected());
  EXPECT_THROW(bad->Set("x", "y"), ConnectionError);  // broken for good
  good->Set("x", "y");
  EXPECT_EQ(good->Get("x"), "y");
  EXPECT_TRUE(logs_.Contains("is not a decimal integer")) << logs_.Dump();
}

TEST_F(StoreTest, CheckNumKeysDeleteAppend) {
  auto c = MakeClient();
  EXPECT_FALSE(c->Check({"a"}));
  c->Set("a", "1");
  c->Set("b", "2");
  EXPECT_TRUE(c->Check({"a", "b"}));
  EXPECT_FALSE(c->Check({"a", "c"}));
  EXPECT_EQ(c->NumKeys(), 2);
  EXPECT_TRUE(c->DeleteKey("a"));
  EXPECT_FALSE(c->DeleteKey("a"));
  EXPECT_EQ(c->NumKeys(), 1);
  c->Append("log", "he");
  c->Append("log", "llo");
  EXPECT_EQ(c->Get("log"), "hello");
  // Append on a value another reader holds must not corrupt what that reader sees.
  auto other = MakeClient();
  const std::string before = other->Get("log");
  c->Append("log", "!");
  EXPECT_EQ(before, "hello");
  EXPECT_EQ(other->Get("log"), "hello!");
}

TEST_F(StoreTest, AppendWakesWaiter) {
  auto waiter = MakeClient();
  auto other = MakeClient();
  auto fut = std::async(std::launch::async, [&] { return waiter->Get("ap"); });
  ASSERT_TRUE(Eventually([&] { return server_->Stats().waiters == 1; }));
  other->Append("ap", "x");
  EXPECT_EQ(fut.get(), "x");
}

TEST_F(StoreTest, MultiGetMultiSet) {
  auto c = MakeClient();
  c->MultiSet({"m1", "m2", "m3"}, {"v1", "", "v3"});
  EXPECT_EQ(c->MultiGet({"m3", "m1", "m2"}), (std::vector<std::string>{"v3", "v1", ""}));
  EXPECT_THROW(c->MultiSet({"a"}, {}), std::invalid_argument);
  EXPECT_THROW((void)c->MultiGet({"m1", "absent"}, 100ms), TimeoutError);
}

TEST_F(StoreTest, GetOfMissingKeyOnTheWireIsEmpty) {
  RawConn raw(server_->Port());
  ASSERT_TRUE(raw.Send(Req(QueryType::kGet, {"/nothing"})));
  EXPECT_EQ(raw.Recv(8), I64s(0));
  ASSERT_TRUE(raw.Send(Req(QueryType::kMultiGet, {"/a", "/b"})));
  EXPECT_EQ(raw.Recv(16), I64s(0) + I64s(0));
}

TEST_F(StoreTest, PingEchoesNonce) {
  RawConn raw(server_->Port());
  ASSERT_TRUE(raw.Send(Req(QueryType::kPing, {}, {}, 0xA1B2C3D4)));
  EXPECT_EQ(raw.Recv(4), std::string("\xD4\xC3\xB2\xA1", 4));
}

// CANCEL_WAIT: always exactly one 01; a 00 that crossed the cancel comes first.
TEST_F(StoreTest, CancelWaitRace) {
  RawConn raw(server_->Port());
  auto setter = MakeClient();
  // Nothing pending: just 01.
  ASSERT_TRUE(raw.Send(Req(QueryType::kCancelWait)));
  EXPECT_EQ(raw.Recv(1), U8s(1));
  // Pending and cancelled: 01, and a later SET does not produce a stray 00.
  ASSERT_TRUE(raw.Send(Req(QueryType::kWait, {"/r1"})));
  ASSERT_TRUE(Eventually([&] { return server_->Stats().waiters == 1; }));
  ASSERT_TRUE(raw.Send(Req(QueryType::kCancelWait)));
  EXPECT_EQ(raw.Recv(1), U8s(1));
  EXPECT_EQ(server_->Stats().waiters, 0u);
  setter->Set("r1", "v");
  EXPECT_TRUE(raw.SilentFor(100ms));
  // The key arrives before the cancel is processed: 00 then 01.
  ASSERT_TRUE(raw.Send(Req(QueryType::kWait, {"/r2"})));
  ASSERT_TRUE(Eventually([&] { return server_->Stats().waiters == 1; }));
  setter->Set("r2", "v");
  ASSERT_TRUE(setter->Check({"r2"}));  // SET has no reply: be sure it was applied first
  ASSERT_TRUE(raw.Send(Req(QueryType::kCancelWait)));
  EXPECT_EQ(raw.Recv(2), U8s(0) + U8s(1));
  // The connection keeps working.
  ASSERT_TRUE(raw.Send(Req(QueryType::kGet, {"/r2"})));
  EXPECT_EQ(raw.Recv(9), I64s(1) + "v");
}

TEST_F(StoreTest, PipelinedWaitDoesNotBlockLaterCommands) {
  RawConn raw(server_->Port());
  ASSERT_TRUE(raw.Send(Req(QueryType::kWait, {"/later"})));
  ASSERT_TRUE(raw.Send(Req(QueryType::kPing, {}, {}, 7)));
  EXPECT_EQ(raw.Recv(4), std::string("\x07\0\0\0", 4));
  ASSERT_TRUE(raw.Send(Req(QueryType::kSet, {"/later"}, {"x"})));
  EXPECT_EQ(raw.Recv(1), U8s(0));
}

TEST_F(StoreTest, Queues) {
  auto c = MakeClient();
  EXPECT_EQ(c->QueueLen("q"), 0);
  EXPECT_EQ(c->TryQueuePop("q"), std::nullopt);
  c->QueuePush("q", "one");
  c->QueuePush("q", "two");
  EXPECT_EQ(c->QueueLen("q"), 2);
  EXPECT_TRUE(c->Check({"q"}));  // a non-empty queue counts as present
  EXPECT_EQ(c->NumKeys(), 0);    // ... but not as a key
  EXPECT_EQ(c->QueuePop("q"), "one");
  EXPECT_EQ(c->TryQueuePop("q"), std::optional<std::string>("two"));
  EXPECT_EQ(c->QueueLen("q"), 0);
  EXPECT_FALSE(c->Check({"q"}));
  EXPECT_THROW((void)c->QueuePop("q", 100ms), TimeoutError);
}

TEST_F(StoreTest, QueuePopOnTheWire) {
  RawConn raw(server_->Port());
  ASSERT_TRUE(raw.Send(Req(QueryType::kQueuePop, {"/wq"})));
  EXPECT_EQ(raw.Recv(8), I64s(0));
  ASSERT_TRUE(raw.Send(Req(QueryType::kQueuePush, {"/wq"}, {"a"})));
  ASSERT_TRUE(raw.Send(Req(QueryType::kQueuePush, {"/wq"}, {"b"})));
  ASSERT_TRUE(raw.Send(Req(QueryType::kQueuePop, {"/wq"})));
  EXPECT_EQ(raw.Recv(17), I64s(2) + I64s(1) + "a");
}

TEST_F(StoreTest, QueuePushWakesExactlyOneWaiter) {
  auto a = MakeClient();
  auto b = MakeClient();
  auto pusher = MakeClient();
  auto fa = std::async(std::launch::async, [&] { return a->QueuePop("jobs"); });
  auto fb = std::async(std::launch::async, [&] { return b->QueuePop("jobs"); });
  ASSERT_TRUE(Eventually([&] { return server_->Stats().waiters == 2; }));
  pusher->QueuePush("jobs", "job1");
  ASSERT_TRUE(Eventually([&] {
    return fa.wait_for(0s) == std::future_status::ready ||
           fb.wait_for(0s) == std::future_status::ready;
  }));
  std::this_thread::sleep_for(100ms);
  const bool a_done = fa.wait_for(0s) == std::future_status::ready;
  const bool b_done = fb.wait_for(0s) == std::future_status::ready;
  EXPECT_NE(a_done, b_done) << "exactly one consumer must be released";
  EXPECT_EQ(server_->Stats().waiters, 1u);
  pusher->QueuePush("jobs", "job2");
  std::vector<std::string> got{fa.get(), fb.get()};
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"job1", "job2"}));
  EXPECT_EQ(server_->Stats().waiters, 0u);
}

TEST_F(StoreTest, ListKeysAndPrefixConventions) {
  auto c = MakeClient();
  c->Set("user", "1");
  Client raw = c->WithKeyPrefix("");
  EXPECT_EQ(raw.Add("init/", 1), 1);
  auto keys = c->ListKeys();
  EXPECT_EQ(keys, std::vector<std::string>{"user"});  // init/ is hidden, "/" stripped
  auto raw_keys = raw.ListKeys();
  std::sort(raw_keys.begin(), raw_keys.end());
  EXPECT_EQ(raw_keys, (std::vector<std::string>{"/user", "init/"}));
  EXPECT_EQ(c->NumKeys(), 2);  // num_keys counts everything, like c10d
  EXPECT_TRUE(raw.Check({"/user"}));
}

TEST_F(StoreTest, PrefixStoreComposes) {
  auto inner = std::shared_ptr<Store>(MakeClient());
  PrefixStore pg("default_pg", inner);
  pg.Set("0", "nccl-id");
  auto nested = std::make_shared<PrefixStore>("cuda/", std::make_shared<PrefixStore>("0/", inner));
  nested->Set("k", "v");
  Client raw = dynamic_cast<Client&>(*inner).WithKeyPrefix("");
  auto raw_keys = raw.ListKeys();
  std::sort(raw_keys.begin(), raw_keys.end());
  // c10d: PrefixStore joins with "/", TCPStore adds a leading "/".
  EXPECT_EQ(raw_keys, (std::vector<std::string>{"/0//cuda//k", "/default_pg/0"}));
  EXPECT_EQ(pg.Get("0"), "nccl-id");
  EXPECT_EQ(pg.ListKeys(), std::vector<std::string>{"0"});
  EXPECT_EQ(nested->Get("k"), "v");
  EXPECT_EQ(nested->ListKeys(), std::vector<std::string>{"k"});
  EXPECT_EQ(pg.Add("cnt", 2), 2);
  EXPECT_EQ(inner->Add("default_pg/cnt", 1), 3);
  EXPECT_TRUE(pg.Check({"cnt"}));
  EXPECT_EQ(pg.NumKeys(), inner->NumKeys());
  auto cloned = pg.Clone();
  EXPECT_EQ(cloned->Get("0"), "nccl-id");
}

TEST_F(StoreTest, BarrierReleasesAllArrivals) {
  constexpr int kWorld = 4;
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < kWorld; ++i) clients.push_back(MakeClient());
  std::vector<std::future<void>> futs;
  for (int i = 0; i < kWorld - 1; ++i) {
    futs.push_back(std::async(std::launch::async, [&, i] { clients[i]->Barrier("b", kWorld); }));
  }
  ASSERT_TRUE(Eventually([&] { return server_->Stats().waiters == kWorld - 1; }));
  for (auto& f : futs) EXPECT_EQ(f.wait_for(0s), std::future_status::timeout);
  clients.back()->Barrier("b", kWorld);
  for (auto& f : futs) f.get();
  EXPECT_EQ(clients[0]->Get("b"), std::to_string(kWorld));  // arrivals counted as ASCII
}

TEST_F(StoreTest, BarrierTimeoutAndPrematureRelease) {
  auto a = MakeClient();
  try {
    a->Barrier("tb", 2, 150ms);
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("world_size=2"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(Eventually([&] { return server_->Stats().waiters == 0; }));
  auto b = MakeClient();
  auto fut = std::async(std::launch::async, [&] { b->Barrier("pb", 10); });
  ASSERT_TRUE(Eventually([&] { return server_->Stats().waiters == 1; }));
  a->Set("pb", "reset");  // any SET/ADD on the key releases the waiters early
  fut.get();
}

TEST_F(StoreTest, ManyConcurrentClients) {
  constexpr int kClients = 80;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      try {
        Client c(MakeClientOptions());
        c.Add("arrived", 1);
        c.Set("rank" + std::to_string(i), std::to_string(i));
        c.Wait({"go"});
        // Everyone reads a neighbour's key after the release.
        const int peer = (i + 1) % kClients;
        if (c.Get("rank" + std::to_string(peer)) != std::to_string(peer)) ++failures;
      } catch (const std::exception& e) {
        ++failures;
        ADD_FAILURE() << e.what();
      }
    });
  }
  auto master = MakeClient();
  ASSERT_TRUE(Eventually([&] { return master->Add("arrived", 0) == kClients; }, 60s));
  master->Set("go", "1");
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(master->NumKeys(), kClients + 2);
  EXPECT_GE(server_->Stats().accepted_total, static_cast<std::size_t>(kClients + 1));
}

TEST_F(StoreTest, CloneUsesANewConnection) {
  auto c = MakeClient();
  const auto before = server_->Stats().connections;
  auto copy = c->Clone();
  EXPECT_TRUE(Eventually([&] { return server_->Stats().connections == before + 1; }));
  copy->Set("c", "1");
  EXPECT_EQ(c->Get("c"), "1");
  EXPECT_EQ(copy->Timeout(), c->Timeout());
}

TEST_F(StoreTest, StopClosesConnectionsAndIsIdempotent) {
  auto c = MakeClient();
  c->Set("a", "b");
  server_->Stop();
  server_->Stop();
  EXPECT_FALSE(server_->Running());
  EXPECT_THROW((void)c->Get("a"), ConnectionError);
}

TEST_F(StoreTest, SecondServerOnSamePortFailsWithBindError) {
  ServerOptions o;
  o.host = "127.0.0.1";
  o.port = server_->Port();
  Server second(o);
  try {
    second.Start();
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
  server.Start();
  ClientOptions o;
  o.port = server.Port();
  o.timeout = 10s;
  o.host = "127.0.0.1";
  Client v4(o);
  v4.Set("k", "v4");
  // IPv6 loopback may be absent in some containers; only check it when it exists.
  RawConn probe(server.Port());
  ASSERT_TRUE(probe.Ok());
  const int fd6 = ::socket(AF_INET6, SOCK_STREAM, 0);
  sockaddr_in6 a6{};
  a6.sin6_family = AF_INET6;
  a6.sin6_port = htons(server.Port());
  a6.sin6_addr = in6addr_loopback;
  const bool has_v6 = fd6 >= 0 && ::connect(fd6, reinterpret_cast<sockaddr*>(&a6), sizeof a6) == 0;
  if (fd6 >= 0) ::close(fd6);
  if (has_v6) {
    o.host = "::1";
    Client v6(o);
    EXPECT_EQ(v6.Get("k"), "v4");
  }
  EXPECT_TRUE(server.Endpoint() == "[::]:" + std::to_string(server.Port()) ||
              server.Endpoint() == "0.0.0.0:" + std::to_string(server.Port()))
      << server.Endpoint();
}

TEST(StoreClient, ConnectRetriesUntilServerListens) {
  // Find a free port, then start the server only after the client began connecting.
  std::uint16_t port;
  {
    ServerOptions o;
    o.host = "127.0.0.1";
    Server probe(o);
    probe.Start();
    port = probe.Port();
  }
  ClientOptions co;
  co.port = port;
  co.timeout = 30s;
  co.initial_backoff = 20ms;
  testing::LogCapture client_logs;
  co.log = client_logs.Sink();
  auto fut = std::async(std::launch::async, [&] {
    Client c(co);
    c.Set("hello", "world");
    return c.Get("hello");
  });
  std::this_thread::sleep_for(300ms);
  ServerOptions o;
  o.host = "127.0.0.1";
  o.port = port;
  Server server(o);
  server.Start();
  EXPECT_EQ(fut.get(), "world");
  EXPECT_TRUE(client_logs.Contains("not reachable yet")) << client_logs.Dump();
}

TEST(StoreClient, ConnectTimeoutNamesEndpoint) {
  std::uint16_t port;
  {
    ServerOptions o;
    o.host = "127.0.0.1";
    Server probe(o);
    probe.Start();
    port = probe.Port();
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
