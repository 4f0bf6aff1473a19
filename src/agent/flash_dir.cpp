#include "flash_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>
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

struct Hint {
  std::string model_dir;  // "" when the workers named none
  std::int64_t keep_max = 0;
};

Hint ReadHint(const fs::path& flash) {
  std::ifstream in(flash / "persist.json");
  if (!in) return {};
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object() || !j.contains("model_dir") || !j["model_dir"].is_string()) {
    throw std::runtime_error("'" + (flash / "persist.json").string() +
                             "' is not {\"model_dir\": \"...\", \"keep_checkpoint_max\": N}");
  }
  Hint h;
  h.model_dir = j["model_dir"].get<std::string>();
  if (auto k = j.find("keep_checkpoint_max"); k != j.end() && k->is_number_integer()) {
    h.keep_max = k->get<std::int64_t>();
  }
  return h;
}

/// Copies checkpoint directory `src` to model_dir/<its name> atomically; false when a checkpoint
/// of that name is there already (never replaced).
bool PersistOne(const fs::path& src, const fs::path& model_dir) {
  const std::string name = src.filename().string();
  const fs::path dst = model_dir / name;
  if (fs::exists(dst)) return false;
  fs::create_directories(model_dir);
  const fs::path tmp = model_dir / ("." + name + ".tmp");
  fs::remove_all(tmp);
  CopyTreeSync(src, tmp);
  if (fs::exists(dst)) {
    fs::remove_all(tmp);
    return false;
  }
  fs::rename(tmp, dst);
  FsyncPath(model_dir, O_RDONLY | O_DIRECTORY);
  return true;
}

/// keep_max > 0: keeps the newest keep_max complete checkpoints (with metadata.json) of
/// model_dir, removing the others as tzrec_train does (rename to .tmp, then delete).
void Prune(const fs::path& model_dir, std::int64_t keep_max) {
  if (keep_max <= 0) return;
  std::vector<std::pair<std::int64_t, fs::path>> complete;
  for (const auto& e : fs::directory_iterator(model_dir)) {
    const auto step = CheckpointStep(e.path().filename().string());
    if (step && e.is_directory() && fs::exists(e.path() / "metadata.json")) {
      complete.emplace_back(*step, e.path());
    }
  }
  std::sort(complete.begin(), complete.end());
  for (std::size_t i = 0; i + static_cast<std::size_t>(keep_max) < complete.size(); ++i) {
    const fs::path doomed = model_dir / ("." + complete[i].second.filename().string() + ".tmp");
    fs::rename(complete[i].second, doomed);
    fs::remove_all(doomed);
  }
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
    const Hint hint = ReadHint(path_);
    if (hint.model_dir.empty()) return std::nullopt;  // the workers never named one
    const std::int64_t step = *CheckpointStep(*newest);
    if (const auto on_disk = NewestCheckpoint(hint.model_dir);
        on_disk && *CheckpointStep(*on_disk) >= step) {
      return std::nullopt;
    }
    if (!PersistOne(fs::path(path_) / *newest, hint.model_dir)) return std::nullopt;
    Prune(hint.model_dir, hint.keep_max);
    return (fs::path(hint.model_dir) / *newest).string();
  } catch (const std::exception& e) {
    warn(std::string("--flash-checkpoint: persisting flash checkpoint ") + *newest +
         " to the model_dir failed (" + e.what() +
         "); the disk checkpoints tzrec_train saved itself are unaffected");
    return std::nullopt;
  }
}

std::vector<std::string> FlashDir::PersistStaged(
    const std::function<void(const std::string&)>& warn) {
  std::vector<std::string> written;
  const fs::path staging = fs::path(path_) / "persist";
  std::error_code ec;
  if (path_.empty() || !fs::is_directory(staging, ec)) return written;
  std::vector<std::pair<std::int64_t, fs::path>> staged;
  for (fs::directory_iterator it(staging, ec), end; !ec && it != end; it.increment(ec)) {
    if (const auto step = CheckpointStep(it->path().filename().string())) {
      staged.emplace_back(*step, it->path());
    }
  }
  std::sort(staged.begin(), staged.end());
  for (const auto& [step, src] : staged) {
    try {
      const Hint hint = ReadHint(path_);
      if (hint.model_dir.empty()) break;
      if (PersistOne(src, hint.model_dir)) {
        written.push_back((fs::path(hint.model_dir) / src.filename()).string());
        Prune(hint.model_dir, hint.keep_max);
      }
      fs::remove_all(src);
    } catch (const std::exception& e) {
      warn("--flash-checkpoint: persisting checkpoint " + src.filename().string() +
           " to the model_dir failed (" + e.what() + "); retrying");
      break;
    }
  }
  return written;
}

struct FlashPersister::State {
  FlashDir& dir;
  std::function<void(const std::string&)> info, warn;
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::thread thread;
};

FlashPersister::FlashPersister(FlashDir& dir, std::function<void(const std::string&)> info,
                               std::function<void(const std::string&)> warn)
    : state_(new State{dir, std::move(info), std::move(warn), {}, {}, false, {}}) {
  State* s = state_.get();
  s->thread = std::thread([s] {
    std::unique_lock lock(s->mu);
    while (!s->cv.wait_for(lock, std::chrono::milliseconds(200), [s] { return s->stop; })) {
      lock.unlock();
      for (const auto& d : s->dir.PersistStaged(s->warn)) {
        s->info("flash checkpoint persisted to " + d);
      }
      lock.lock();
    }
  });
}

FlashPersister::~FlashPersister() {
  Stop();
}

void FlashPersister::Stop() {
  if (!state_ || !state_->thread.joinable()) return;
  {
    std::lock_guard lock(state_->mu);
    state_->stop = true;
  }
  state_->cv.notify_all();
  state_->thread.join();
}

void FlashDir::Remove() noexcept {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
  path_.clear();
}

}  // namespace tzrun::agent::detail
