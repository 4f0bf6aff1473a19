// Unit tests of tzrec::comm without a launcher: DistEnv::FromEnvironment (values and error
// messages) and a world-1 Comm, where every collective is the identity.
#include "tzrec/comm/comm.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tzrec {
namespace {

const char* const kVars[] = {
    "RANK",         "WORLD_SIZE",  "LOCAL_RANK",  "LOCAL_WORLD_SIZE",
    "GROUP_RANK",   "MASTER_ADDR", "MASTER_PORT", "PROCESS_GROUP_TIMEOUT_SECONDS",
    "TZREC_BACKEND"};

// Clears the launcher variables for a test and restores them afterwards.
class EnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kVars) {
      const char* v = std::getenv(name);
      saved_[name] = v ? std::optional<std::string>(v) : std::nullopt;
      unsetenv(name);
    }
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }
  static void Set(const std::map<std::string, std::string>& vars) {
    for (const auto& [k, v] : vars) setenv(k.c_str(), v.c_str(), 1);
  }
  static void SetLaunched(int rank, int world) {
    Set({{"RANK", std::to_string(rank)},
         {"WORLD_SIZE", std::to_string(world)},
         {"LOCAL_RANK", std::to_string(rank)},
         {"LOCAL_WORLD_SIZE", std::to_string(world)},
         {"GROUP_RANK", "0"},
         {"MASTER_ADDR", "10.1.2.3"},
         {"MASTER_PORT", "29500"}});
  }
  // The CommError message of FromEnvironment(), or "" when it did not throw.
  static std::string ErrorOf() {
    try {
      DistEnv::FromEnvironment();
    } catch (const CommError& e) {
      return e.what();
    }
    return "";
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST_F(EnvTest, NoLauncherVariablesGiveASingleProcess) {
  const DistEnv env = DistEnv::FromEnvironment();
  EXPECT_EQ(env.rank, 0);
  EXPECT_EQ(env.world_size, 1);
  EXPECT_EQ(env.local_rank, 0);
  EXPECT_EQ(env.local_world_size, 1);
  EXPECT_EQ(env.timeout, std::chrono::milliseconds(1'800'000));
}

TEST_F(EnvTest, ParsesTheLauncherContract) {
  Set({{"RANK", "5"},
       {"WORLD_SIZE", "8"},
       {"LOCAL_RANK", "1"},
       {"LOCAL_WORLD_SIZE", "4"},
       {"GROUP_RANK", "1"},
       {"MASTER_ADDR", "node-0.example"},
       {"MASTER_PORT", "29511"},
       {"PROCESS_GROUP_TIMEOUT_SECONDS", "120"}});
  const DistEnv env = DistEnv::FromEnvironment();
  EXPECT_EQ(env.rank, 5);
  EXPECT_EQ(env.world_size, 8);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_world_size, 4);
  EXPECT_EQ(env.group_rank, 1);
  EXPECT_EQ(env.master_addr, "node-0.example");
  EXPECT_EQ(env.master_port, 29511);
  EXPECT_EQ(env.timeout, std::chrono::milliseconds(120'000));
}

TEST_F(EnvTest, WorldOneUnderTheLauncherNeedsNoStoreAddress) {
  Set({{"RANK", "0"}, {"WORLD_SIZE", "1"}});
  const DistEnv env = DistEnv::FromEnvironment();
  EXPECT_EQ(env.world_size, 1);
  EXPECT_EQ(env.local_world_size, 1);
  EXPECT_EQ(env.master_port, 0);
}

TEST_F(EnvTest, TimeoutAppliesWithoutLauncher) {
  Set({{"PROCESS_GROUP_TIMEOUT_SECONDS", "7"}});
  EXPECT_EQ(DistEnv::FromEnvironment().timeout, std::chrono::milliseconds(7000));
}

TEST_F(EnvTest, RankWithoutWorldSizeNamesTheMissingOne) {
  Set({{"RANK", "0"}});
  const std::string msg = ErrorOf();
  EXPECT_NE(msg.find("WORLD_SIZE is not set but RANK is"), std::string::npos) << msg;
  EXPECT_NE(msg.find("tzrun"), std::string::npos) << msg;
  unsetenv("RANK");
  Set({{"WORLD_SIZE", "2"}});
  const std::string msg2 = ErrorOf();
  EXPECT_NE(msg2.find("RANK is not set but WORLD_SIZE is"), std::string::npos) << msg2;
}

TEST_F(EnvTest, MalformedIntegersAreNamedWithTheirValueAndRange) {
  SetLaunched(0, 2);
  Set({{"RANK", "abc"}});
  EXPECT_NE(ErrorOf().find("RANK='abc' is not an integer in [0, 1]"), std::string::npos)
      << ErrorOf();
  Set({{"RANK", "2"}});
  EXPECT_NE(ErrorOf().find("RANK='2' is not an integer in [0, 1]"), std::string::npos) << ErrorOf();
  Set({{"RANK", "1x"}});
  EXPECT_NE(ErrorOf().find("RANK='1x'"), std::string::npos) << ErrorOf();
  Set({{"RANK", "1"}, {"WORLD_SIZE", "0"}});
  EXPECT_NE(ErrorOf().find("WORLD_SIZE='0' is not an integer in [1, "), std::string::npos)
      << ErrorOf();
  Set({{"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}});
  EXPECT_NE(ErrorOf().find("MASTER_PORT='70000' is not an integer in [1, 65535]"),
            std::string::npos)
      << ErrorOf();
  Set({{"MASTER_PORT", "29500"}, {"LOCAL_RANK", "2"}});
  EXPECT_NE(ErrorOf().find("LOCAL_RANK='2' is not an integer in [0, 1]"), std::string::npos)
      << ErrorOf();
  Set({{"LOCAL_RANK", "0"}, {"PROCESS_GROUP_TIMEOUT_SECONDS", "0"}});
  EXPECT_NE(ErrorOf().find("PROCESS_GROUP_TIMEOUT_SECONDS='0' is not an integer in [1, "),
            std::string::npos)
      << ErrorOf();
  Set({{"PROCESS_GROUP_TIMEOUT_SECONDS", "-5"}});
  EXPECT_NE(ErrorOf().find("PROCESS_GROUP_TIMEOUT_SECONDS='-5'"), std::string::npos) << ErrorOf();
  Set({{"PROCESS_GROUP_TIMEOUT_SECONDS", "60"}});
  EXPECT_EQ(ErrorOf(), "");
}

TEST_F(EnvTest, MultiProcessNeedsStoreAndLocalVariables) {
  SetLaunched(1, 2);
  unsetenv("MASTER_ADDR");
  EXPECT_NE(ErrorOf().find("MASTER_ADDR is not set (WORLD_SIZE=2)"), std::string::npos)
      << ErrorOf();
  Set({{"MASTER_ADDR", "127.0.0.1"}});
  unsetenv("MASTER_PORT");
  EXPECT_NE(ErrorOf().find("MASTER_PORT is not set"), std::string::npos) << ErrorOf();
  Set({{"MASTER_PORT", "29500"}});
  unsetenv("LOCAL_RANK");
  EXPECT_NE(ErrorOf().find("LOCAL_RANK is not set"), std::string::npos) << ErrorOf();
  Set({{"LOCAL_RANK", "1"}});
  unsetenv("LOCAL_WORLD_SIZE");
  EXPECT_NE(ErrorOf().find("LOCAL_WORLD_SIZE is not set"), std::string::npos) << ErrorOf();
}

TEST_F(EnvTest, BadBackendOverrideIsRejected) {
  Set({{"TZREC_BACKEND", "mpi"}});
  try {
    Comm::Init(DistEnv{});
    FAIL() << "TZREC_BACKEND=mpi was accepted";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("TZREC_BACKEND='mpi' is not one of gloo, nccl, auto"),
              std::string::npos)
        << e.what();
  }
  Set({{"TZREC_BACKEND", "gloo"}});
  auto comm = Comm::Init(DistEnv{});
  EXPECT_EQ(comm->Device(), at::Device(at::kCPU));
}

TEST(CommInit, InvalidRankIsRejected) {
  DistEnv env;
  env.rank = 2;
  env.world_size = 2;
  EXPECT_THROW(Comm::Init(env, BackendKind::kGloo), CommError);
}

TEST(CommInit, GroupAtWorldOneNeedsTheStore) {
  try {
    Comm::InitGroup(DistEnv{}, BackendKind::kGloo);
    FAIL() << "InitGroup without MASTER_PORT did not throw";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("MASTER_PORT is unset or 0"), std::string::npos)
        << e.what();
  }
}

TEST(CommInit, NcclWorldOneNeedsAGpu) {
  // With a GPU this is a world-1 NCCL comm on cuda:0; without, a CommError saying why.
  try {
    auto comm = Comm::Init(DistEnv{}, BackendKind::kNccl);
    EXPECT_EQ(comm->Device(), at::Device(at::kCUDA, 0));
    EXPECT_EQ(comm->BackendName(), "none");
  } catch (const CommError& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(msg.find("CUDA device(s) are visible") != std::string::npos ||
                msg.find("no NCCL support") != std::string::npos)
        << msg;
    EXPECT_NE(msg.find("TZREC_BACKEND=gloo"), std::string::npos) << msg;
  }
}

class WorldOne : public ::testing::Test {
 protected:
  std::shared_ptr<Comm> comm_ = Comm::Init(DistEnv{}, BackendKind::kGloo);
  const at::TensorOptions f32_ = at::TensorOptions().dtype(at::kFloat);
  const at::TensorOptions i64_ = at::TensorOptions().dtype(at::kLong);
};

TEST_F(WorldOne, Identity) {
  EXPECT_EQ(comm_->Rank(), 0);
  EXPECT_EQ(comm_->WorldSize(), 1);
  EXPECT_EQ(comm_->LocalRank(), 0);
  EXPECT_EQ(comm_->LocalWorldSize(), 1);
  EXPECT_EQ(comm_->BackendName(), "none");
  EXPECT_EQ(comm_->Device(), at::Device(at::kCPU));
}

TEST_F(WorldOne, ReductionsAndBroadcastLeaveValues) {
  at::Tensor t = at::arange(6, f32_).view({2, 3});
  comm_->AllReduceSum(t);
  EXPECT_TRUE(at::equal(t, at::arange(6, f32_).view({2, 3})));
  at::Tensor m = at::tensor({-3, 7, 0}, i64_);
  comm_->AllReduceMax(m);
  EXPECT_TRUE(at::equal(m, at::tensor({-3, 7, 0}, i64_)));
  comm_->Broadcast(t, 0);
  EXPECT_TRUE(at::equal(t, at::arange(6, f32_).view({2, 3})));
  EXPECT_THROW(comm_->Broadcast(t, 1), CommError);
  comm_->Barrier();
}

TEST_F(WorldOne, GathersAndAllToAllCopyWithTheRightShapes) {
  at::Tensor t = at::arange(12, f32_).view({4, 3});
  at::Tensor g = comm_->AllGather(t);
  EXPECT_EQ(g.sizes(), t.sizes());
  EXPECT_TRUE(at::equal(g, t));
  EXPECT_NE(g.data_ptr(), t.data_ptr());  // a new tensor, as for W > 1

  at::Tensor a = comm_->AllToAll(t, {4}, {4});
  EXPECT_TRUE(at::equal(a, t));
  at::Tensor one_d = comm_->AllToAll(at::arange(5, i64_), {5}, {5});
  EXPECT_TRUE(at::equal(one_d, at::arange(5, i64_)));
  at::Tensor empty = comm_->AllToAll(at::empty({0, 3}, f32_), {0}, {0});
  EXPECT_EQ(empty.sizes(), (std::vector<std::int64_t>{0, 3}));

  PendingTensor pending = comm_->AllToAllAsync(t, {4}, {4});
  ASSERT_TRUE(pending.Valid());
  EXPECT_TRUE(at::equal(pending.Wait(), t));
  EXPECT_TRUE(at::equal(pending.Wait(), t));  // idempotent
  EXPECT_FALSE(PendingTensor().Valid());

  EXPECT_TRUE(at::equal(comm_->ReduceScatterV(t, {4}), t));
  EXPECT_TRUE(at::equal(comm_->AllGatherV(t, {4}), t));
  EXPECT_EQ(comm_->BroadcastString("plan", 0), "plan");
  EXPECT_EQ(comm_->BroadcastString("", 0), "");
}

TEST_F(WorldOne, SplitMistakesAreCommErrorsNamingTheSplits) {
  at::Tensor t = at::arange(12, f32_).view({4, 3});
  auto message = [&](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const CommError& e) {
      return e.what();
    }
    return "(no error)";
  };
  std::string msg = message([&] { comm_->AllToAll(t, {3}, {3}); });
  EXPECT_NE(msg.find("input_splits [3] sums to 3 rows but the tensor has 4 rows"),
            std::string::npos)
      << msg;
  msg = message([&] { comm_->AllToAll(t, {4, 0}, {4}); });
  EXPECT_NE(msg.find("has 2 entries; it needs one per rank (1)"), std::string::npos) << msg;
  msg = message([&] { comm_->AllToAll(t, {4}, {-1}); });
  EXPECT_NE(msg.find("negative"), std::string::npos) << msg;
  msg = message([&] { comm_->AllToAll(t, {4}, {2}); });
  EXPECT_NE(msg.find("must equal input_splits"), std::string::npos) << msg;
  msg = message([&] { comm_->AllGatherV(t, {3}); });
  EXPECT_NE(msg.find("the input has 4 rows but splits [3] gives this rank 3"), std::string::npos)
      << msg;
  at::Tensor undefined;
  msg = message([&] { comm_->AllReduceSum(undefined); });
  EXPECT_NE(msg.find("undefined"), std::string::npos) << msg;
}

TEST_F(WorldOne, DenseSyncAveragesOverOneRank) {
  at::Tensor a = at::arange(4, f32_).requires_grad_(true);
  at::Tensor b = at::ones({2, 2}, f32_).requires_grad_(true);
  a.mutable_grad() = at::full({4}, 3.0f, f32_);
  DenseSync sync(comm_, {a, b}, /*bucket_bytes=*/8);
  sync.BroadcastParameters();
  EXPECT_TRUE(at::equal(a.detach(), at::arange(4, f32_)));
  sync.AllReduceGradients();
  EXPECT_TRUE(at::equal(a.grad(), at::full({4}, 3.0f, f32_)));
  ASSERT_TRUE(b.grad().defined());  // undefined counts as zeros
  EXPECT_TRUE(at::equal(b.grad(), at::zeros({2, 2}, f32_)));
}

TEST_F(WorldOne, DenseSyncRejectsBadInput) {
  EXPECT_THROW(DenseSync(comm_, {at::arange(3, i64_)}), CommError);
  EXPECT_THROW(DenseSync(comm_, {at::Tensor()}), CommError);
  EXPECT_THROW(DenseSync(comm_, {}, 0), CommError);
  EXPECT_THROW(DenseSync(nullptr, {}), CommError);
}

}  // namespace
}  // namespace tzrec
