// Unit tests of CUDA device numbering from sysfs (src/agent/cuda_devices.hpp).
// tests/integration/test_numa_binding.py checks VisibleOrdinals against
// torch.cuda._parse_visible_devices on the same strings.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cuda_devices.hpp"
#include "numa_binding.hpp"

namespace tzrun::agent {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

PciGpu Gpu(const char* address, const char* model = "0x2330") {
  return PciGpu{address, model, 0};
}

std::vector<std::string> Addresses(const std::vector<PciGpu>& gpus) {
  std::vector<std::string> out;
  for (const auto& g : gpus) out.push_back(g.address);
  return out;
}

TEST(CudaDevices, PciBusIdOrderIsNumeric) {
  const auto sorted = SortByBusId({Gpu("0000:b3:00.0"), Gpu("0000:1b:00.0"), Gpu("10000:01:00.0"),
                                   Gpu("0001:00:00.0"), Gpu("0000:1b:00.1"), Gpu("0000:3d:00.0")});
  EXPECT_THAT(Addresses(sorted), ElementsAre("0000:1b:00.0", "0000:1b:00.1", "0000:3d:00.0",
                                             "0000:b3:00.0", "0001:00:00.0", "10000:01:00.0"));
  // Upper-case hex reads the same.
  EXPECT_THAT(Addresses(SortByBusId({Gpu("0000:B3:00.0"), Gpu("0000:1b:00.0")})),
              ElementsAre("0000:1b:00.0", "0000:B3:00.0"));
}

TEST(CudaDevices, VisibleDevicesFollowTorchsParser) {
  EXPECT_THAT(VisibleOrdinals(std::nullopt, 3), ElementsAre(0, 1, 2));
  EXPECT_THAT(VisibleOrdinals("2,0", 4), ElementsAre(2, 0));
  EXPECT_THAT(VisibleOrdinals(" 1 , 3 ", 4), ElementsAre(1, 3));
  EXPECT_THAT(VisibleOrdinals("1gpu2,2ampere", 4), ElementsAre(1, 2));  // strtoul prefixes
  EXPECT_THAT(VisibleOrdinals("0,-1,1", 4), ElementsAre(0));  // a negative item ends the list
  EXPECT_THAT(VisibleOrdinals("0,x,1", 4), ElementsAre(0));   // so does one without digits
  EXPECT_THAT(VisibleOrdinals("+1", 4), ElementsAre(1));
  EXPECT_THAT(VisibleOrdinals("0,1,0", 4), IsEmpty());  // a repeat hides every GPU
  EXPECT_THAT(VisibleOrdinals("", 4), IsEmpty());
  EXPECT_THAT(VisibleOrdinals("1,5,0", 4), ElementsAre(1));  // past the last GPU: the end
  EXPECT_THAT(VisibleOrdinals("0", 0), IsEmpty());
}

TEST(CudaDevices, UuidFormsAreRefusedByName) {
  for (const char* v : {"GPU-8f1c2e5a-1111-2222-3333-444455556666", "MIG-GPU-1/1/0"}) {
    try {
      (void)VisibleOrdinals(v, 2);
      ADD_FAILURE() << v;
    } catch (const NumaError& e) {
      EXPECT_THAT(e.what(), AllOf(HasSubstr(std::string("CUDA_VISIBLE_DEVICES=") + v),
                                  HasSubstr("by UUID"), HasSubstr("by index")));
    }
  }
}

TEST(CudaDevices, CudaIndexPicksFromThePciOrder) {
  const std::vector<PciGpu> pci = {Gpu("0000:1b:00.0"), Gpu("0000:3d:00.0"), Gpu("0000:b3:00.0")};
  EXPECT_THAT(Addresses(CudaDevices(pci, std::nullopt, std::nullopt)),
              ElementsAre("0000:1b:00.0", "0000:3d:00.0", "0000:b3:00.0"));
  EXPECT_THAT(Addresses(CudaDevices(pci, "2,1", "FASTEST_FIRST")),
              ElementsAre("0000:b3:00.0", "0000:3d:00.0"));
}

TEST(CudaDevices, MixedModelsNeedPciBusIdOrder) {
  const std::vector<PciGpu> pci = {Gpu("0000:1b:00.0", "0x2330"), Gpu("0000:3d:00.0", "0x1eb8")};
  EXPECT_THAT(Addresses(CudaDevices(pci, std::nullopt, "PCI_BUS_ID")),
              ElementsAre("0000:1b:00.0", "0000:3d:00.0"));
  for (const std::optional<std::string>& order :
       {std::optional<std::string>(), std::optional<std::string>("FASTEST_FIRST")}) {
    try {
      (void)CudaDevices(pci, std::nullopt, order);
      ADD_FAILURE();
    } catch (const NumaError& e) {
      EXPECT_THAT(e.what(), AllOf(HasSubstr("several models"), HasSubstr("CUDA_DEVICE_ORDER is"),
                                  HasSubstr("set CUDA_DEVICE_ORDER=PCI_BUS_ID")));
    }
  }
}

}  // namespace
}  // namespace tzrun::agent
