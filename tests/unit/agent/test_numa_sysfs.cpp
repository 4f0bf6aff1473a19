// Unit tests of --numa-binding's sysfs reader and plan (src/agent/numa_sysfs.hpp) on a fake
// sysfs tree.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "agent_error.hpp"
#include "numa_sysfs.hpp"

namespace tzrun::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "tzrun_sysfs_XXXXXX").string();
    root_ = ::mkdtemp(tmpl.data());
  }
  void TearDown() override { fs::remove_all(root_); }

  // A PCI device; `driver` "" leaves it unbound.
  void Device(const std::string& addr, const std::string& vendor, const std::string& cls,
              const std::string& numa_node, const std::string& driver = "nvidia",
              const std::string& model = "0x2330") {
    const fs::path dev = root_ / "bus/pci/devices" / addr;
    Write(dev / "vendor", vendor + "\n");
    Write(dev / "class", cls + "\n");
    Write(dev / "device", model + "\n");
    if (!numa_node.empty()) Write(dev / "numa_node", numa_node + "\n");
    if (!driver.empty())
      fs::create_directory_symlink("../../../bus/pci/drivers/" + driver, dev / "driver");
  }

  void Cache(int cpu, int index, const std::string& type, int level, const std::string& shared) {
    const fs::path dir = root_ / "devices/system/cpu" / ("cpu" + std::to_string(cpu)) / "cache" /
                         ("index" + std::to_string(index));
    Write(dir / "type", type + "\n");
    Write(dir / "level", std::to_string(level) + "\n");
    Write(dir / "shared_cpu_list", shared + "\n");
  }

  fs::path root_;
};

TEST_F(FakeSysfs, GpusAreNvidiaDisplayOr3dControllersOfTheNvidiaDriverInBusOrder) {
  Device("0000:b3:00.0", "0x10de", "0x030200", "1");
  Device("0000:1b:00.0", "0x10de", "0x030000", "-1");
  Device("0000:3d:00.0", "0x10de", "0x030200", "0", "vfio-pci");  // passed through: not CUDA's
  Device("0000:4e:00.0", "0x10de", "0x068000", "0");              // an NVSwitch bridge
  Device("0000:5f:00.0", "0x1002", "0x030000", "0", "amdgpu");    // another vendor
  Device("0000:6a:00.0", "0x10de", "0x030200", "0", "");          // no driver bound
  Device("0000:c1:00.0", "0x10de", "0x030200", "");               // numa_node unreadable
  const auto gpus = ReadPciGpus(root_.string());
  ASSERT_EQ(gpus.size(), 3U);
  EXPECT_EQ(gpus[0], (PciGpu{"0000:1b:00.0", "0x2330", -1}));
  EXPECT_EQ(gpus[1], (PciGpu{"0000:b3:00.0", "0x2330", 1}));
  EXPECT_EQ(gpus[2], (PciGpu{"0000:c1:00.0", "0x2330", std::nullopt}));
  EXPECT_TRUE(ReadPciGpus((root_ / "missing").string()).empty());
}

TEST_F(FakeSysfs, TopologyReadsNodesCoresSocketsAndTheHighestDataCache) {
  Write(root_ / "devices/system/node/possible", "0-1\n");
  Write(root_ / "devices/system/node/node0/cpulist", "0,2\n");
  Write(root_ / "devices/system/node/node1/cpulist", "1,3\n");
  Write(root_ / "devices/system/node/has_cpu", "0-1\n");  // not a node<N>
  for (int c = 0; c < 4; ++c) {
    const fs::path topo = root_ / "devices/system/cpu" / ("cpu" + std::to_string(c)) / "topology";
    Write(topo / "physical_package_id", std::to_string(c % 2) + "\n");
    Write(topo / "thread_siblings_list", std::to_string(c) + "\n");
  }
  Cache(0, 0, "Data", 1, "0");
  Cache(0, 1, "Instruction", 3, "0-3");  // an instruction cache never counts
  Cache(0, 2, "Unified", 2, "0,2");
  Cache(0, 10, "Unified", 2, "0-3");  // the first index of the top level wins (numeric order)
  const auto t = ReadNumaTopology(
      root_.string(), {PciGpu{"a", "m", -1}, PciGpu{"b", "m", 1}, PciGpu{"c", "m", std::nullopt}},
      CpuSet{0, 1, 7});
  EXPECT_EQ(t.possible_nodes, (std::set<int>{0, 1}));
  EXPECT_EQ(t.node_cpus.size(), 2U);
  EXPECT_EQ(t.node_cpus.at(1), (CpuSet{1, 3}));
  EXPECT_EQ(t.cpu_package, (std::map<int, int>{{0, 0}, {1, 1}}));  // CPU 7 has no files
  EXPECT_EQ(t.cpu_core.at(1), CpuSet{1});
  EXPECT_EQ(t.cpu_top_cache.at(0), (CpuSet{0, 2}));
  EXPECT_EQ(t.cpu_top_cache.at(1), CpuSet{});                // no cache directory
  EXPECT_THAT(t.gpu_node, ElementsAre(0, 1, std::nullopt));  // -1 reads as node 0 (torch)
  EXPECT_EQ(t.allowed, (CpuSet{0, 1, 7}));
}

TEST_F(FakeSysfs, PlanBindsEachLocalRankToItsGpusNode) {
  // Node 0 and node 1 each hold every CPU this process may use (whatever the host has).
  const CpuSet mine = ThisThreadCpus();
  ASSERT_FALSE(mine.empty());
  Write(root_ / "devices/system/node/possible", "0-1\n");
  Write(root_ / "devices/system/node/node0/cpulist", CpuListText(mine) + ",4095\n");
  Write(root_ / "devices/system/node/node1/cpulist", "\n");
  Device("0000:1b:00.0", "0x10de", "0x030200", "0");
  Device("0000:3d:00.0", "0x10de", "0x030200", "1");
  const std::map<std::string, std::string> env{{"TZRUN_SYSFS_ROOT", root_.string()}};
  const auto plan = PlanNumaBinding(NumaMode::kNode, 1, env);
  ASSERT_EQ(plan.size(), 1U);
  EXPECT_EQ(plan[0], mine);

  auto error = [&](int nproc, std::map<std::string, std::string> e) {
    try {
      (void)PlanNumaBinding(NumaMode::kNode, nproc, e);
    } catch (const AgentError& err) {
      EXPECT_EQ(err.ExitCode(), 2);
      return std::string(err.what());
    }
    return std::string();
  };
  // Local rank 1 = CUDA device 1 on node 1, which has no CPU.
  EXPECT_THAT(error(2, env), AllOf(HasSubstr("--numa-binding=node: cannot bind local rank 1"),
                                   HasSubstr("PCI 0000:3d:00.0"), HasSubstr("no CPU to bind to"),
                                   HasSubstr("drop --numa-binding")));
  // CUDA_VISIBLE_DEVICES renumbers: device 0 is now the GPU on node 1.
  auto swapped = env;
  swapped["CUDA_VISIBLE_DEVICES"] = "1,0";
  EXPECT_THAT(error(1, swapped), HasSubstr("cannot bind local rank 0 (CUDA device 0, PCI 0000:3d"));
  // More ranks than GPUs: refused before anything starts, naming the rank and the fix.
  EXPECT_THAT(error(3, env), AllOf(HasSubstr("--numa-binding=node: local rank 2 has no GPU"),
                                   HasSubstr("2 NVIDIA GPU(s) are visible (0=0000:1b:00.0, "
                                             "1=0000:3d:00.0"),
                                   HasSubstr("--nproc-per-node")));
  auto hidden = env;
  hidden["CUDA_VISIBLE_DEVICES"] = "";
  EXPECT_THAT(error(1, hidden),
              AllOf(HasSubstr("no NVIDIA GPU is visible"), HasSubstr("CUDA_VISIBLE_DEVICES=)")));
  auto uuid = env;
  uuid["CUDA_VISIBLE_DEVICES"] = "GPU-0f";
  EXPECT_THAT(error(1, uuid), HasSubstr("--numa-binding=node: CUDA_VISIBLE_DEVICES=GPU-0f"));
}

TEST_F(FakeSysfs, PlanOnAMachineWithoutNvidiaGpusSaysSoWhateverCudaVisibleDevicesHolds) {
  Write(root_ / "devices/system/node/possible", "0\n");
  Device("0000:3d:00.0", "0x10de", "0x030200", "0", "vfio-pci");  // passed through: not CUDA's
  for (const char* visible : {"", "GPU-0f", "0", "unset"}) {
    std::map<std::string, std::string> env{{"TZRUN_SYSFS_ROOT", root_.string()}};
    if (std::string(visible) != "unset") env["CUDA_VISIBLE_DEVICES"] = visible;
    try {
      (void)PlanNumaBinding(NumaMode::kNode, 1, env);
      ADD_FAILURE() << "no error with CUDA_VISIBLE_DEVICES " << visible;
    } catch (const AgentError& err) {
      EXPECT_EQ(err.ExitCode(), 2);
      EXPECT_THAT(
          err.what(),
          AllOf(HasSubstr("--numa-binding=node: local rank 0 has no GPU to bind to: this "
                          "machine has no NVIDIA GPU (none is bound to the nvidia driver "
                          "under " +
                          root_.string() + "/bus/pci/devices)"),
                HasSubstr("drop --numa-binding on a machine without GPUs"), Not(HasSubstr("UUID"))))
          << visible;
    }
  }
}

}  // namespace
}  // namespace tzrun::agent
