// Unit tests of --numa-binding's CPU choice (src/agent/numa_binding.hpp) on synthetic
// topologies; tests/integration/test_numa_binding.py compares the same modes with torch's own
// functions on a fake sysfs tree.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "numa_binding.hpp"

namespace tzrun::agent {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

CpuSet Cpus(const char* list) {
  return ParseCpuList(list).value();
}

CpuSet Range(int lo, int hi) {
  CpuSet s;
  for (int c = lo; c <= hi; ++c) s.insert(c);
  return s;
}

// Two sockets of two NUMA nodes, two physical cores per node, two threads per core (CPU c and
// c + 8 are siblings); GPUs 0 and 1 on node 0, GPU 2 on node 1, GPU 3 on node 3. The last-level
// cache is shared per node.
NumaTopology TwoSockets() {
  NumaTopology t;
  t.possible_nodes = std::set<int>{0, 1, 2, 3};
  for (int node = 0; node < 4; ++node) {
    const int c0 = 2 * node;
    const CpuSet cpus{c0, c0 + 1, c0 + 8, c0 + 9};
    t.node_cpus[node] = cpus;
    for (const int c : cpus) {
      t.cpu_package[c] = node / 2;
      t.cpu_core[c] = {c % 8, c % 8 + 8};
      t.cpu_top_cache[c] = cpus;
    }
  }
  t.gpu_node = {0, 0, 1, 3};
  t.allowed = Range(0, 15);
  return t;
}

// One node, `cores` cores without SMT, `gpus` GPUs on it.
NumaTopology OneNode(int cores, int gpus) {
  NumaTopology t;
  t.possible_nodes = std::set<int>{0};
  t.node_cpus[0] = Range(0, cores - 1);
  for (int c = 0; c < cores; ++c) {
    t.cpu_package[c] = 0;
    t.cpu_core[c] = {c};
    t.cpu_top_cache[c] = Range(0, cores - 1);
  }
  t.gpu_node.assign(static_cast<std::size_t>(gpus), 0);
  t.allowed = Range(0, cores - 1);
  return t;
}

std::string ErrorOf(NumaMode mode, int gpu, const NumaTopology& t) {
  try {
    (void)CpusForGpu(mode, gpu, t);
  } catch (const NumaError& e) {
    return e.what();
  }
  return "";
}

TEST(NumaBinding, CpuListsParseAsSysfsWritesThemAndPrintCompactly) {
  EXPECT_EQ(ParseCpuList("0-3,8,10-11\n"), (CpuSet{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(ParseCpuList(" 4 , 6-7 ,"), (CpuSet{4, 6, 7}));
  EXPECT_EQ(ParseCpuList(""), CpuSet{});
  EXPECT_EQ(ParseCpuList("\n"), CpuSet{});
  EXPECT_EQ(ParseCpuList("5-3"), CpuSet{});  // Python's range(5, 4): nothing
  EXPECT_FALSE(ParseCpuList("a"));
  EXPECT_FALSE(ParseCpuList("1-2-3"));
  EXPECT_FALSE(ParseCpuList("-1"));
  EXPECT_FALSE(ParseCpuList("0-99999999"));  // not a CPU list: refused, not looped over
  EXPECT_EQ(CpuListText({0, 1, 2, 4, 6, 7}), "0-2,4,6-7");
  EXPECT_EQ(CpuListText({5}), "5");
  EXPECT_EQ(CpuListText({}), "");
  EXPECT_EQ(CpuListText(Cpus("0-3,8,10-11")), "0-3,8,10-11");
}

TEST(NumaBinding, ModesHaveTorchsNames) {
  for (const char* name : {"node", "socket", "exclusive", "core-complex"}) {
    ASSERT_TRUE(ParseNumaMode(name)) << name;
    EXPECT_EQ(NumaModeName(*ParseNumaMode(name)), name);
  }
  EXPECT_FALSE(ParseNumaMode("core_complex"));
  EXPECT_FALSE(ParseNumaMode("Node"));
}

TEST(NumaBinding, NodeIsEveryAllowedCpuOfTheGpusNode) {
  auto t = TwoSockets();
  EXPECT_EQ(CpusForGpu(NumaMode::kNode, 0, t), Cpus("0-1,8-9"));
  EXPECT_EQ(CpusForGpu(NumaMode::kNode, 1, t), Cpus("0-1,8-9"));
  EXPECT_EQ(CpusForGpu(NumaMode::kNode, 2, t), Cpus("2-3,10-11"));
  EXPECT_EQ(CpusForGpu(NumaMode::kNode, 3, t), Cpus("6-7,14-15"));
  t.allowed.erase(8);  // the agent's affinity bounds every mode
  EXPECT_EQ(CpusForGpu(NumaMode::kNode, 0, t), Cpus("0-1,9"));
}

TEST(NumaBinding, SocketIsEveryNodeOfTheSameSocket) {
  auto t = TwoSockets();
  EXPECT_EQ(CpusForGpu(NumaMode::kSocket, 0, t), Cpus("0-3,8-11"));
  EXPECT_EQ(CpusForGpu(NumaMode::kSocket, 2, t), Cpus("0-3,8-11"));
  EXPECT_EQ(CpusForGpu(NumaMode::kSocket, 3, t), Cpus("4-7,12-15"));
  // A node's socket is that of its lowest allowed CPU.
  t.allowed = Cpus("1-3,8-15");
  EXPECT_EQ(CpusForGpu(NumaMode::kSocket, 0, t), Cpus("1-3,8-11"));
}

TEST(NumaBinding, SocketFailsLikeTorchWhenAPossibleNodeHasNoAllowedCpu) {
  auto t = TwoSockets();
  t.allowed = Range(0, 3);  // node 2 (and 3) out of reach: torch's min() of an empty set raises
  EXPECT_THAT(ErrorOf(NumaMode::kSocket, 0, t),
              AllOf(HasSubstr("NUMA node 2 has no CPU this process may use"),
                    HasSubstr("its CPUs: 4-5,12-13"), HasSubstr("allowed: 0-3")));
  t = TwoSockets();
  t.node_cpus[2] = {};  // a memory-only node (CXL, HBM, a GPU's memory)
  EXPECT_THAT(ErrorOf(NumaMode::kSocket, 0, t), HasSubstr("NUMA node 2 has no CPU"));
  EXPECT_EQ(CpusForGpu(NumaMode::kNode, 0, t), Cpus("0-1,8-9"));  // node mode never looks there
  t = TwoSockets();
  t.cpu_package.erase(0);
  EXPECT_THAT(ErrorOf(NumaMode::kSocket, 0, t), HasSubstr("the socket of CPU 0 is unknown"));
  t = TwoSockets();
  t.possible_nodes.reset();
  EXPECT_THAT(ErrorOf(NumaMode::kSocket, 0, t), HasSubstr("node/possible"));
}

TEST(NumaBinding, ExclusiveSplitsWholeCoresWithTheirSmtSiblings) {
  const auto t = TwoSockets();
  // Node 0: cores {0,8} and {1,9} for GPUs 0 and 1.
  EXPECT_EQ(CpusForGpu(NumaMode::kExclusive, 0, t), Cpus("0,8"));
  EXPECT_EQ(CpusForGpu(NumaMode::kExclusive, 1, t), Cpus("1,9"));
  // Node 1 has one GPU: it gets every core.
  EXPECT_EQ(CpusForGpu(NumaMode::kExclusive, 2, t), Cpus("2-3,10-11"));
}

TEST(NumaBinding, ExclusiveGivesTheExtraCoresToTheLowerGpus) {
  const auto t = OneNode(5, 2);
  EXPECT_EQ(CpusForGpu(NumaMode::kExclusive, 0, t), Cpus("0-2"));
  EXPECT_EQ(CpusForGpu(NumaMode::kExclusive, 1, t), Cpus("3-4"));
  const auto u = OneNode(5, 3);
  EXPECT_EQ(CpusForGpu(NumaMode::kExclusive, 0, u), Cpus("0-1"));
  EXPECT_EQ(CpusForGpu(NumaMode::kExclusive, 1, u), Cpus("2-3"));
  EXPECT_EQ(CpusForGpu(NumaMode::kExclusive, 2, u), Cpus("4"));
}

TEST(NumaBinding, ExclusiveCountsOnlyAllowedCoresAndNeedsOnePerGpu) {
  auto t = TwoSockets();
  t.allowed.erase(0);  // core {0,8} keeps CPU 8, still a core
  EXPECT_EQ(CpusForGpu(NumaMode::kExclusive, 0, t), Cpus("8"));
  t.allowed.erase(8);  // node 0 has one core left for two GPUs
  EXPECT_THAT(ErrorOf(NumaMode::kExclusive, 1, t),
              AllOf(HasSubstr("NUMA node 0 has 1 physical core(s)"), HasSubstr("2 GPUs")));
  t = TwoSockets();
  t.cpu_core.erase(9);
  EXPECT_THAT(ErrorOf(NumaMode::kExclusive, 0, t),
              HasSubstr("physical core (thread_siblings_list) of CPU 9 is unknown"));
}

TEST(NumaBinding, CoreComplexTakesTheLargestCacheGroupsInTurn) {
  auto t = OneNode(12, 4);
  for (int c = 0; c < 12; ++c)
    t.cpu_top_cache[c] = c < 4 ? Range(0, 3) : c < 10 ? Range(4, 9) : Range(10, 11);
  // Groups by size, then lowest CPU: 4-9 (6), 0-3 (4), 10-11 (2); GPU k takes k % 3.
  EXPECT_EQ(CpusForGpu(NumaMode::kCoreComplex, 0, t), Cpus("4-9"));
  EXPECT_EQ(CpusForGpu(NumaMode::kCoreComplex, 1, t), Cpus("0-3"));
  EXPECT_EQ(CpusForGpu(NumaMode::kCoreComplex, 2, t), Cpus("10-11"));
  EXPECT_EQ(CpusForGpu(NumaMode::kCoreComplex, 3, t), Cpus("4-9"));
  // Sizes count allowed CPUs only; equal sizes go by the group's lowest CPU (allowed or not).
  t.allowed = Cpus("0-3,8-11");
  EXPECT_EQ(CpusForGpu(NumaMode::kCoreComplex, 0, t), Cpus("0-3"));
  EXPECT_EQ(CpusForGpu(NumaMode::kCoreComplex, 1, t), Cpus("8-9"));
  EXPECT_EQ(CpusForGpu(NumaMode::kCoreComplex, 2, t), Cpus("10-11"));
  t.cpu_top_cache[0] = {};  // a CPU without a data or unified cache
  EXPECT_THAT(ErrorOf(NumaMode::kCoreComplex, 0, t), HasSubstr("highest-level cache"));
}

TEST(NumaBinding, GpusAreNumberedWithinTheirNode) {
  // core-complex and exclusive rank a GPU among the GPUs of its own node.
  auto t = TwoSockets();
  t.gpu_node = {1, 0, 1};  // node 1 has GPUs 0 and 2: GPU 2 is the second one there
  EXPECT_EQ(CpusForGpu(NumaMode::kExclusive, 0, t), Cpus("2,10"));
  EXPECT_EQ(CpusForGpu(NumaMode::kExclusive, 2, t), Cpus("3,11"));
  EXPECT_EQ(CpusForGpu(NumaMode::kExclusive, 1, t), Cpus("0-1,8-9"));
}

TEST(NumaBinding, WhatTorchCannotReadIsAnError) {
  auto t = TwoSockets();
  EXPECT_THAT(ErrorOf(NumaMode::kNode, 4, t), HasSubstr("there is no CUDA device 4 (4 visible)"));
  t.gpu_node[1].reset();
  EXPECT_THAT(ErrorOf(NumaMode::kNode, 1, t), HasSubstr("NUMA node of CUDA device 1 is unknown"));
  EXPECT_EQ(CpusForGpu(NumaMode::kNode, 0, t), Cpus("0-1,8-9"));
  // exclusive looks at every GPU to find the node's GPUs (as torch does).
  EXPECT_THAT(ErrorOf(NumaMode::kExclusive, 0, t), HasSubstr("CUDA device 1 is unknown"));
  t = TwoSockets();
  t.node_cpus.erase(3);
  EXPECT_THAT(ErrorOf(NumaMode::kNode, 3, t), HasSubstr("no readable node3/cpulist"));
  t = TwoSockets();
  t.allowed = Cpus("2-7,10-15");  // node 0 entirely out of reach: numactl would get nothing
  EXPECT_THAT(ErrorOf(NumaMode::kNode, 0, t),
              AllOf(HasSubstr("no CPU to bind to"), HasSubstr("CPUs 0-1,8-9"),
                    HasSubstr("may use 2-7,10-15")));
}

}  // namespace
}  // namespace tzrun::agent
