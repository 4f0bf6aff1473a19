// count_gpus / count_cpus without CUDA libraries, on fake sysroots.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "tzrun/cli/cli.hpp"

namespace tzrun::cli {
namespace {

namespace fs = std::filesystem;
using Env = std::map<std::string, std::string>;

class Sysroot {
 public:
  Sysroot() {
    root_ = fs::temp_directory_path() /
            ("tzrun_host_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(root_);
  }
  ~Sysroot() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  Sysroot(const Sysroot&) = delete;
  Sysroot& operator=(const Sysroot&) = delete;
  void ProcGpus(int n) const {
    fs::create_directories(root_ / "proc/driver/nvidia/gpus");
    for (int i = 0; i < n; ++i) {
      fs::create_directories(root_ / "proc/driver/nvidia/gpus" /
                             ("0000:8" + std::to_string(i) + ":00.0"));
    }
  }
  void Dev(const std::string& name) const {
    fs::create_directories(root_ / "dev");
    std::ofstream(root_ / "dev" / name).put('x');
  }
  [[nodiscard]] const fs::path& Path() const { return root_; }

 private:
  static inline int counter_ = 0;
  fs::path root_;
};

TEST(CountGpus, ProcDriverEntries) {
  Sysroot root;
  EXPECT_EQ(CountGpus({}, root.Path()), 0);
  root.ProcGpus(4);
  EXPECT_EQ(CountGpus({}, root.Path()), 4);
}

TEST(CountGpus, DevNodesFallback) {
  Sysroot root;
  for (const char* name :
       {"nvidia0", "nvidia1", "nvidia12", "nvidiactl", "nvidia-uvm", "nvidia-modeset", "null"}) {
    root.Dev(name);
  }
  EXPECT_EQ(CountGpus({}, root.Path()), 3);
  // The /proc tree, when present, is authoritative.
  root.ProcGpus(1);
  EXPECT_EQ(CountGpus({}, root.Path()), 1);
}

TEST(CountGpus, CudaVisibleDevices) {
  Sysroot root;
  root.ProcGpus(2);
  const auto n = [&](const std::string& cvd) {
    return CountGpus(Env{{"CUDA_VISIBLE_DEVICES", cvd}}, root.Path());
  };
  EXPECT_EQ(n(""), 0);
  EXPECT_EQ(n("  "), 0);
  EXPECT_EQ(n("-1"), 0);
  EXPECT_EQ(n("NoDevFiles"), 0);
  EXPECT_EQ(n("0"), 1);
  EXPECT_EQ(n("1,0"), 2);
  EXPECT_EQ(n("0,1,5"), 2);  // stops at the first invalid id
  EXPECT_EQ(n("5,0"), 0);
  EXPECT_EQ(n("0,-1,1"), 1);
  EXPECT_EQ(n("0,0"), 1);  // a repeated id ends the list
  EXPECT_EQ(n("GPU-8a1b2c3d"), 1);
  EXPECT_EQ(n("GPU-a,GPU-b,GPU-c"), 2);  // capped at the physical count
  EXPECT_EQ(n("MIG-x,junk,1"), 1);
  EXPECT_EQ(CountGpus(Env{}, root.Path()), 2);  // unset => all
}

TEST(CountGpus, NoDriverMeansZero) {
  Sysroot root;
  EXPECT_EQ(CountGpus(Env{{"CUDA_VISIBLE_DEVICES", "0,1"}}, root.Path()), 0);
}

TEST(CountCpus, PositiveAndAtMostOnline) {
  const int n = CountCpus();
  EXPECT_GE(n, 1);
  EXPECT_LE(n, static_cast<int>(::sysconf(_SC_NPROCESSORS_CONF)));
}

}  // namespace
}  // namespace tzrun::cli
