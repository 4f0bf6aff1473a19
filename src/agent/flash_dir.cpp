#include "flash_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "agent_error.hpp"
#include "tzrun/base/system.hpp"

namespace tzrun::agent::detail {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPrefix = "model.ckpt-";

void FsyncPath(const fs::path& p, int flags) {
  const int fd = ::open(p.c_str(), flags | O_CLOEXEC);
  if (fd < 0)
    throw std::runtime_error("cannot open '" + p.string() + "': " + base::ErrnoText(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0)
    throw std::runtime_error("fsync '" + p.string() + "' failed: " + base::ErrnoText(err));
}

/// Copies `from` (a checkpoint directory) to `to` recursively, fsyncing every file and directory.
void CopyTreeSync(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(from)) {
    const fs::path dst = to / e.path().filename();
    if (e.is_directory()) {
      CopyTreeSync(e.path(), dst);
    } else {
      fs::copy_file(e.path(), dst, fs::copy_options::overwrite_existing);
      FsyncPath(dst, O_RDONLY);
    }
  }
  FsyncPath(to, O_RDONLY | O_DIRECTORY);
}

std::string ReadModelDir(const fs::path& flash) {
  std::ifstream in(flash / "persist.json");
  if (!in) return "";
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object() || !j.contains("model_dir") || !j["model_dir"].is_string()) {
    throw std::runtime_error("'" + (flash / "persist.json").string() +
                             "' is not {\"model_dir\": \"...\"}");
  }
  return j["model_dir"].get<std::string>();
}

}  // namespace

std::optional<std::int64_t> CheckpointStep(const std::string& name) {
  if (name.size() <= kPrefix.size() || name.compare(0, kPrefix.size(), kPrefix) != 0) {
    return std::nullopt;
  }
  std::int64_t step = 0;
  for (std::size_t i = kPrefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || step > (INT64_MAX - 9) / 10) return std::nullopt;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

std::optional<std::string> NewestCheckpoint(const std::string& dir) {
  std::error_code ec;
  std::optional<std::string> best;
  std::int64_t best_step = -1;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const auto step = CheckpointStep(name);
    if (step && *step > best_step && it->is_directory(ec)) {
      best_step = *step;
      best = name;
    }
  }
  return best;
}

FlashDir FlashDir::Create(const std::string& root) {
  std::string tmpl = root + "/tzrun-flash-" + std::to_string(::getpid()) + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    throw AgentError("--flash-checkpoint: cannot create the flash checkpoint directory under '" +
                         root + "': " + base::ErrnoText(errno) +
                         "; it needs a writable memory-backed /dev/shm (in a container: "
                         "--shm-size large enough for one checkpoint per node, twice while "
                         "it is replaced)",
                     exit_code::kInfrastructure);
  }
  FlashDir d;
  d.path_ = buf.data();
  return d;
}

std::optional<std::string> FlashDir::PersistNewest(
    const std::function<void(const std::string&)>& warn) {
  if (path_.empty()) return std::nullopt;
  const auto newest = NewestCheckpoint(path_);
  if (!newest) return std::nullopt;
  try {
    const std::string model_dir = ReadModelDir(path_);
    if (model_dir.empty()) return std::nullopt;  // the workers never named one
    const std::int64_t step = *CheckpointStep(*newest);
    if (const auto on_disk = NewestCheckpoint(model_dir);
        on_disk && *CheckpointStep(*on_disk) >= step) {
      return std::nullopt;
    }
    const fs::path tmp = fs::path(model_dir) / ("." + *newest + ".tmp");
    const fs::path dst = fs::path(model_dir) / *newest;
    fs::remove_all(tmp);
    CopyTreeSync(fs::path(path_) / *newest, tmp);
    if (fs::exists(dst)) {
      fs::remove_all(tmp);
      return std::nullopt;
    }
    fs::rename(tmp, dst);
    FsyncPath(model_dir, O_RDONLY | O_DIRECTORY);
    return dst.string();
  } catch (const std::exception& e) {
    warn(std::string("--flash-checkpoint: persisting flash checkpoint ") + *newest +
         " to the model_dir failed (" + e.what() +
         "); the disk checkpoints tzrec_train saved itself are unaffected");
    return std::nullopt;
  }
}

void FlashDir::Remove() noexcept {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
  path_.clear();
}

}  // namespace tzrun::agent::detail
