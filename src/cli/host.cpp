// Host probing for --nproc-per-node cpu|gpu|auto, without CUDA libraries.
#include <sched.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <system_error>

#include "text.hpp"
#include "tzrun/base/strings.hpp"
#include "tzrun/cli/cli.hpp"

namespace tzrun::cli {
namespace {

namespace fs = std::filesystem;

/// Physical NVIDIA GPUs: one directory per GPU (named by PCI bus id) under
/// /proc/driver/nvidia/gpus; when the driver's /proc tree is absent (some
/// containers), the /dev/nvidia<N> device nodes.
int PhysicalGpus(const fs::path& sysroot) {
  std::error_code ec;
  const fs::path proc_dir = sysroot / "proc/driver/nvidia/gpus";
  if (fs::is_directory(proc_dir, ec)) {
    int n = 0;
    for (fs::directory_iterator it(proc_dir, ec), end; !ec && it != end; it.increment(ec)) ++n;
    return n;
  }
  int n = 0;
  const fs::path dev_dir = sysroot / "dev";
  for (fs::directory_iterator it(dev_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= 6 || name.compare(0, 6, "nvidia") != 0) continue;
    bool digits = true;
    for (std::size_t i = 6; i < name.size(); ++i) {
      digits = digits && std::isdigit(static_cast<unsigned char>(name[i])) != 0;
    }
    if (digits) ++n;
  }
  return n;
}

}  // namespace

int CountGpus(const std::map<std::string, std::string>& env, const fs::path& sysroot) {
  const int physical = PhysicalGpus(sysroot);
  const auto it = env.find("CUDA_VISIBLE_DEVICES");
  if (it == env.end()) return physical;
  const std::string value = base::Strip(it->second);
  if (value.empty() || value == "NoDevFiles") return 0;
  // Like the CUDA runtime: take entries up to the first invalid one.
  int visible = 0;
  std::set<std::int64_t> seen_ids;
  std::set<std::string> seen_uuids;
  for (const auto& raw : base::Split(value, ',')) {
    const std::string token = base::Strip(raw);
    if (auto id = detail::PythonInt(token)) {
      if (*id < 0 || *id >= physical || !seen_ids.insert(*id).second) break;
    } else if (token.rfind("GPU-", 0) == 0 || token.rfind("MIG-", 0) == 0) {
      if (!seen_uuids.insert(token).second) break;
    } else {
      break;
    }
    ++visible;
  }
  return visible < physical ? visible : physical;
}

int CountGpus(const std::map<std::string, std::string>& env) {
  return CountGpus(env, "/");
}

int CountCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

}  // namespace tzrun::cli
