// torch's c10d FileStore over a shared file (see file_store.hpp); the format is
// file_store_codec.hpp.
#include "file_store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "file_store_codec.hpp"
#include "tzrun/base/strings.hpp"
#include "tzrun/base/system.hpp"
#include "tzrun/store/errors.hpp"

namespace tzrun::rendezvous::detail {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
constexpr milliseconds kPollInterval{10};  // FileStore's sleep between two looks at the file

[[noreturn]] void Fail(const std::string& path, const std::string& what, int err) {
  throw store::ConnectionError("FileStore " + path + ": " + what + ": " + base::ErrnoText(err));
}

// The call's end; nullopt = no timeout.
std::optional<Clock::time_point> DeadlineOf(store::Duration timeout) {
  if (timeout == store::Store::kNoTimeout) return std::nullopt;
  return Clock::now() + timeout;
}

bool Expired(const std::optional<Clock::time_point>& deadline) {
  return deadline && Clock::now() >= *deadline;
}

// The file, open and flock'ed for one operation (FileStore.cpp's File + Lock).
class LockedFile {
 public:
  LockedFile(const std::string& path, int flags, bool exclusive,
             const std::optional<Clock::time_point>& deadline)
      : path_(path) {
    int err = 0;
    while (true) {
      fd_ = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
      err = errno;
      if (fd_ >= 0 || (err != ENOENT && err != EINTR)) break;
      if (err == ENOENT && Expired(deadline)) break;  // readers wait for a writer to create it
      if (err == ENOENT) std::this_thread::sleep_for(kPollInterval);
    }
    if (fd_ < 0) Fail(path, "cannot open the file", err);
    while (::flock(fd_, exclusive ? LOCK_EX : LOCK_SH) != 0) {
      if (errno != EINTR) {
        const int lock_err = errno;
        ::close(fd_);
        Fail(path, "cannot lock the file (flock)", lock_err);
      }
    }
  }
  ~LockedFile() { ::close(fd_); }  // closing drops the flock
  LockedFile(const LockedFile&) = delete;
  LockedFile& operator=(const LockedFile&) = delete;

  [[nodiscard]] off_t Size() const {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) Fail(path_, "cannot stat the file", errno);
    return st.st_size;
  }

  [[nodiscard]] std::string Read(off_t from, off_t to) const {
    std::string out(static_cast<std::size_t>(to - from), '\0');
    std::size_t done = 0;
    while (done < out.size()) {
      const ssize_t n =
          ::pread(fd_, out.data() + done, out.size() - done, from + static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) Fail(path_, "cannot read the file", errno);
      if (n == 0) break;  // shorter than fstat said: what was read is replayed
      done += static_cast<std::size_t>(n);
    }
    out.resize(done);
    return out;
  }

  void Append(std::string_view bytes) const {
    if (::lseek(fd_, 0, SEEK_END) < 0) Fail(path_, "cannot seek to the end of the file", errno);
    while (!bytes.empty()) {
      const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) Fail(path_, "cannot append to the file", errno);
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
};

// What one process knows of the file: the keys replayed so far and where it stopped. Shared by
// the handles of one MakeFileStore; counts itself in "refcount/" while it lives.
class FileLog {
 public:
  FileLog(std::string path, int num_workers, store::Duration timeout)
      : path_(std::move(path)), num_workers_(num_workers) {
    std::lock_guard lock(mu_);
    AddLocked(std::string(kFileStoreRefCountKey), 1, DeadlineOf(timeout));
  }

  ~FileLog() {
    // torch's ~FileStore: nothing when the file is gone already.
    if (::access(path_.c_str(), F_OK) != 0) return;
    try {
      std::lock_guard lock(mu_);
      const auto deadline = DeadlineOf(milliseconds(5000));
      const auto cleanups = AddLocked(std::string(kFileStoreCleanupKey), 1, deadline);
      const auto refs = AddLocked(std::string(kFileStoreRefCountKey), -1, deadline);
      if (FileStoreRemovesFile(refs, cleanups, num_workers_)) ::unlink(path_.c_str());
    } catch (const std::exception&) {  // best effort, as torch's
    }
  }
  FileLog(const FileLog&) = delete;
  FileLog& operator=(const FileLog&) = delete;

  [[nodiscard]] const std::string& Path() const { return path_; }
  std::mutex& Mutex() { return mu_; }
  const FileStoreKeys& Keys() const { return keys_; }

  // Replays what was appended since the last call (the file is open and locked).
  void Refresh(const LockedFile& f) {
    const off_t size = f.Size();
    if (size < pos_) {
      throw store::ConnectionError("FileStore " + path_ + ": the file shrank from " +
                                   std::to_string(pos_) + " to " + std::to_string(size) +
                                   " bytes: another program truncated or replaced it; use a file "
                                   "only this job's FileStores write");
    }
    if (size == pos_) return;
    const std::string bytes = f.Read(pos_, size);
    const auto r = ReplayFileRecords(bytes, keys_);
    if (r.error) {
      throw store::ConnectionError(
          "FileStore " + path_ + ": not a FileStore log at offset " +
          std::to_string(pos_ + static_cast<off_t>(r.error->offset)) + " (" + r.error->what +
          "); the file belongs to another program or a writer died mid-record: use a new file");
    }
    pos_ += static_cast<off_t>(r.consumed);
  }

  // FileStore::addHelper on a raw key (mu_ held).
  std::int64_t AddLocked(const std::string& raw_key, std::int64_t delta,
                         const std::optional<Clock::time_point>& deadline) {
    const LockedFile f(path_, O_RDWR | O_CREAT, true, deadline);
    Refresh(f);
    const auto sum = FileAddResult(keys_, raw_key, delta);
    if (!sum) {
      throw store::StoreError("FileStore " + path_ + ": add on key '" + raw_key +
                              "', whose value '" + keys_.find(raw_key)->second +
                              "' is not a number");
    }
    f.Append(EncodeFileRecord(raw_key, std::to_string(*sum)));
    return *sum;
  }

 private:
  std::string path_;
  int num_workers_;
  std::mutex mu_;
  off_t pos_ = 0;
  FileStoreKeys keys_;
};

class FileStore final : public store::Store {
 public:
  FileStore(std::shared_ptr<FileLog> log, store::Duration timeout)
      : log_(std::move(log)), timeout_(timeout.count()) {}

  using Store::Barrier;
  using Store::Get;
  using Store::MultiGet;
  using Store::QueuePop;
  using Store::Wait;

  void Set(std::string_view key, std::string_view value) override {
    std::lock_guard lock(log_->Mutex());
    const LockedFile f(log_->Path(), O_RDWR | O_CREAT, true, DeadlineOf(Timeout()));
    f.Append(EncodeFileRecord(FileUserKey(key), value));
  }

  std::string Get(std::string_view key, store::Duration timeout) override {
    std::string value;
    PollUntil({std::string(key)}, timeout, [&](const FileStoreKeys& keys) {
      const auto it = keys.find(FileUserKey(key));
      if (it == keys.end()) return false;
      value = it->second;
      return true;
    });
    return value;
  }

  std::int64_t Add(std::string_view key, std::int64_t delta) override {
    std::lock_guard lock(log_->Mutex());
    return log_->AddLocked(FileUserKey(key), delta, DeadlineOf(Timeout()));
  }

  std::string CompareSet(std::string_view key, std::string_view expected,
                         std::string_view desired) override {
    std::lock_guard lock(log_->Mutex());
    const LockedFile f(log_->Path(), O_RDWR | O_CREAT, true, DeadlineOf(Timeout()));
    log_->Refresh(f);
    const std::string raw = FileUserKey(key);
    auto outcome = FileCompareSet(log_->Keys(), raw, expected, desired);
    if (outcome.write) f.Append(EncodeFileRecord(raw, desired));
    return std::move(outcome.result);
  }

  bool Check(const std::vector<std::string>& keys) override {
    std::lock_guard lock(log_->Mutex());
    const LockedFile f(log_->Path(), O_RDONLY, false, DeadlineOf(Timeout()));
    log_->Refresh(f);
    return HasAll(log_->Keys(), keys);
  }

  void Wait(const std::vector<std::string>& keys, store::Duration timeout) override {
    PollUntil(keys, timeout, [&](const FileStoreKeys& all) { return HasAll(all, keys); });
  }

  std::int64_t NumKeys() override {
    std::lock_guard lock(log_->Mutex());
    const LockedFile f(log_->Path(), O_RDONLY, false, DeadlineOf(Timeout()));
    log_->Refresh(f);
    return static_cast<std::int64_t>(log_->Keys().size());  // counters included, as torch's
  }

  bool DeleteKey(std::string_view key) override {
    std::lock_guard lock(log_->Mutex());
    const LockedFile f(log_->Path(), O_RDWR, true, DeadlineOf(Timeout()));
    log_->Refresh(f);
    const std::string raw = FileUserKey(key);
    const bool existed = log_->Keys().contains(raw);
    f.Append(EncodeFileRecord(std::string(kFileStoreDeletePrefix) + raw, ""));
    return existed;
  }

  void Append(std::string_view key, std::string_view value) override {
    std::lock_guard lock(log_->Mutex());
    const LockedFile f(log_->Path(), O_RDWR | O_CREAT, true, DeadlineOf(Timeout()));
    log_->Refresh(f);
    const std::string raw = FileUserKey(key);
    const auto it = log_->Keys().find(raw);
    std::string next = it == log_->Keys().end() ? "" : it->second;
    next.append(value);
    f.Append(EncodeFileRecord(raw, next));
  }

  std::vector<std::string> MultiGet(const std::vector<std::string>& keys,
                                    store::Duration timeout) override {
    std::vector<std::string> out;
    for (const auto& k : keys) out.push_back(Get(k, timeout));
    return out;
  }

  void MultiSet(const std::vector<std::string>& keys,
                const std::vector<std::string>& values) override {
    if (keys.size() != values.size()) {
      throw std::invalid_argument("MultiSet: " + std::to_string(keys.size()) + " keys but " +
                                  std::to_string(values.size()) + " values");
    }
    for (std::size_t k = 0; k < keys.size(); ++k) Set(keys[k], values[k]);
  }

  void QueuePush(std::string_view, std::string_view) override { Unsupported("queue_push"); }
  std::string QueuePop(std::string_view, store::Duration) override { Unsupported("queue_pop"); }
  std::optional<std::string> TryQueuePop(std::string_view) override { Unsupported("queue_pop"); }
  std::int64_t QueueLen(std::string_view) override { Unsupported("queue_len"); }
  void Barrier(std::string_view, std::int64_t, store::Duration) override { Unsupported("barrier"); }

  std::vector<std::string> ListKeys() override {
    std::lock_guard lock(log_->Mutex());
    const LockedFile f(log_->Path(), O_RDONLY, false, DeadlineOf(Timeout()));
    log_->Refresh(f);
    std::vector<std::string> out;
    for (const auto& [raw, value] : log_->Keys()) {
      if (raw.starts_with(kFileStoreUserPrefix)) out.push_back(raw.substr(1));
    }
    return out;
  }

  [[nodiscard]] store::Duration Timeout() const override { return store::Duration(timeout_); }
  void SetTimeout(store::Duration timeout) override { timeout_ = timeout.count(); }
  [[nodiscard]] std::unique_ptr<store::Store> Clone() const override {
    return std::make_unique<FileStore>(log_, Timeout());
  }

 private:
  static bool HasAll(const FileStoreKeys& all, const std::vector<std::string>& keys) {
    for (const auto& k : keys) {
      if (!all.contains(FileUserKey(k))) return false;
    }
    return true;
  }

  // Looks at the file every 10 ms until `done(keys)` (FileStore::get / wait).
  template <typename Done>
  void PollUntil(const std::vector<std::string>& keys, store::Duration timeout, Done done) {
    const auto deadline = DeadlineOf(timeout);
    while (true) {
      {
        std::lock_guard lock(log_->Mutex());
        const LockedFile f(log_->Path(), O_RDONLY, false, deadline);
        log_->Refresh(f);
        if (done(log_->Keys())) return;
      }
      if (Expired(deadline)) {
        throw store::TimeoutError("timed out after " + base::DurationText(timeout) +
                                  " waiting for key(s) " + base::QuotedList(keys, 8) +
                                  " in the FileStore " + log_->Path() +
                                  "; the agent that writes them did not (yet)");
      }
      std::this_thread::sleep_for(kPollInterval);
    }
  }

  [[noreturn]] void Unsupported(const char* what) const {
    throw store::StoreError(std::string("the FileStore ") + log_->Path() + " has no " + what +
                            " (torch's FileStore neither)");
  }

  std::shared_ptr<FileLog> log_;
  std::atomic<store::Duration::rep> timeout_;
};

// Python's tempfile candidates (tempfile._candidate_tempdir_list).
std::vector<std::string> TempDirCandidates() {
  std::vector<std::string> dirs;
  for (const char* var : {"TMPDIR", "TEMP", "TMP"}) {
    if (const char* v = std::getenv(var); v != nullptr && *v != '\0') dirs.emplace_back(v);
  }
  for (const char* d : {"/tmp", "/var/tmp", "/usr/tmp"}) dirs.emplace_back(d);
  std::error_code ec;
  dirs.push_back(std::filesystem::current_path(ec).string());
  return dirs;
}

}  // namespace

std::shared_ptr<store::Store> MakeFileStore(const std::string& path, store::Duration timeout,
                                            int num_workers) {
  if (path.empty()) throw store::ConnectionError("FileStore: the file path is empty");
  return std::make_shared<FileStore>(std::make_shared<FileLog>(path, num_workers, timeout),
                                     timeout);
}

std::string MakeTempStoreFile() {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789_";
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_int_distribution<std::size_t> pick(0, sizeof kChars - 2);
  int last_errno = 0;
  for (const auto& dir : TempDirCandidates()) {
    for (int attempt = 0; attempt < 100; ++attempt) {
      std::string name = "tmp";
      for (int k = 0; k < 8; ++k) name.push_back(kChars[pick(rng)]);
      const std::string path = (std::filesystem::absolute(dir) / name).string();
      const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd >= 0) {
        ::close(fd);
        return path;
      }
      last_errno = errno;
      if (errno != EEXIST) break;  // not writable: the next candidate directory
    }
  }
  throw store::ConnectionError(
      "cannot create a temporary file for the c10d FileStore in $TMPDIR, /tmp, /var/tmp, /usr/tmp "
      "or the working directory: " +
      base::ErrnoText(last_errno) + "; set TMPDIR to a writable directory or pass --rdzv-endpoint");
}

}  // namespace tzrun::rendezvous::detail
