#include "tzrun/rendezvous/ranks.hpp"

#include <gtest/gtest.h>

#include <future>
#include <vector>

#include "tzrun/rendezvous/errors.hpp"
#include "tzrun/store/client.hpp"
#include "util.hpp"

namespace tzrun::rendezvous {
namespace {

using namespace std::chrono_literals;

TEST(RoleInfo, SerializesExactlyLikePythonJsonDumps) {
  EXPECT_EQ(SerializeRoleInfo({"default", 3, 8}),
            R"({"role": "default", "rank": 3, "local_world_size": 8})");
  // json.dumps escapes non-ASCII (ensure_ascii=True) and quotes.
  EXPECT_EQ(SerializeRoleInfo({"tr\"ainer\xc3\xa9", 0, 1}),
            R"({"role": "tr\"ainer\u00e9", "rank": 0, "local_world_size": 1})");
  EXPECT_EQ(SerializeAssignedRanks({4, 12, 4, 10}), "[4, 12, 4, 10]");
}

TEST(RoleInfo, ParsesAnySpacingAndRejectsGarbage) {
  EXPECT_EQ(ParseRoleInfo(R"({"rank":2,"role":"a","local_world_size":3})"),
            (RoleInstanceInfo{"a", 2, 3}));
  EXPECT_EQ(ParseAssignedRanks("[1,2,3,4]"), (AssignedRanks{1, 2, 3, 4}));
  EXPECT_THROW((void)ParseRoleInfo("gAR9lC4="), RendezvousStateError);
  EXPECT_THROW((void)ParseAssignedRanks("[1, 2]"), RendezvousStateError);
  EXPECT_THROW((void)ParseAssignedRanks("[1, 2, 3, \"x\"]"), RendezvousStateError);
}

TEST(AssignRanks, HomogeneousMatchesGroupRankTimesNproc) {
  std::vector<RoleInstanceInfo> infos{{"default", 0, 4}, {"default", 1, 4}, {"default", 2, 4}};
  const auto r = ComputeAssignedRanks(infos);
  ASSERT_EQ(r.size(), 3u);
  for (int g = 0; g < 3; ++g) {
    EXPECT_EQ(r[static_cast<std::size_t>(g)], (AssignedRanks{g * 4, 12, g * 4, 12}));
    EXPECT_EQ(r[static_cast<std::size_t>(g)], IdenticalRanks(g, 3, 4));
  }
}

TEST(AssignRanks, HeterogeneousNprocAndRolesUseRunningSums) {
  // torchrun's algorithm walks the nodes in group-rank order.
  std::vector<RoleInstanceInfo> infos{
      {"trainer", 0, 2}, {"ps", 1, 1}, {"trainer", 2, 3}, {"ps", 3, 2}};
  const auto r = ComputeAssignedRanks(infos);
  EXPECT_EQ(r[0], (AssignedRanks{0, 8, 0, 5}));
  EXPECT_EQ(r[1], (AssignedRanks{2, 8, 0, 3}));
  EXPECT_EQ(r[2], (AssignedRanks{3, 8, 2, 5}));
  EXPECT_EQ(r[3], (AssignedRanks{6, 8, 1, 3}));
}

TEST(AssignRanks, StoreExchangeAcrossThreeAgents) {
  auto server = testing::StartServer();
  const std::vector<int> nproc{3, 1, 2};
  std::vector<std::future<AssignedRanks>> futures;
  for (int g = 2; g >= 0; --g) {  // rank 0 arrives last: it must wait for everybody
    futures.push_back(std::async(std::launch::async, [&, g] {
      store::ClientOptions o;
      o.port = server->Port();
      auto client = std::make_shared<store::Client>(o);
      store::PrefixStore round("run", client);
      return AssignWorkerRanks(round, g, 3, "default", nproc[static_cast<std::size_t>(g)], 10s, {});
    }));
  }
  std::vector<AssignedRanks> got(3);
  for (int i = 0; i < 3; ++i)
    got[static_cast<std::size_t>(2 - i)] = futures[static_cast<std::size_t>(i)].get();
  EXPECT_EQ(got[0], (AssignedRanks{0, 6, 0, 6}));
  EXPECT_EQ(got[1], (AssignedRanks{3, 6, 3, 6}));
  EXPECT_EQ(got[2], (AssignedRanks{4, 6, 4, 6}));
  // The keys are torchrun's, under the round prefix.
  store::ClientOptions o;
  o.port = server->Port();
  store::Client c(o);
  EXPECT_EQ(c.Get("run/torchelastic/role_info/1"),
            R"({"role": "default", "rank": 1, "local_world_size": 1})");
  EXPECT_EQ(c.Get("run/torchelastic/assigned_ranks/2"), "[4, 6, 4, 6]");
}

TEST(AssignRanks, MissingNodeTimesOutNamingTheKeys) {
  auto server = testing::StartServer();
  store::ClientOptions o;
  o.port = server->Port();
  auto client = std::make_shared<store::Client>(o);
  try {
    (void)AssignWorkerRanks(*client, 0, 2, "default", 1, 300ms, {});
    FAIL() << "expected a timeout";
  } catch (const RendezvousTimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("torchelastic/role_info/1"), std::string::npos)
        << e.what();
  }
}

TEST(AssignRanks, InterruptAbandonsTheWait) {
  auto server = testing::StartServer();
  store::ClientOptions o;
  o.port = server->Port();
  auto client = std::make_shared<store::Client>(o);
  struct Stop {};
  int calls = 0;
  EXPECT_THROW((void)AssignWorkerRanks(*client, 1, 2, "default", 1, 60s,
                                       [&] {
                                         if (++calls == 2) throw Stop{};
                                       }),
               Stop);
}

}  // namespace
}  // namespace tzrun::rendezvous
