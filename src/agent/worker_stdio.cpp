#include "worker_stdio.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string_view>
#include <utility>

#include "agent_error.hpp"
#include "tzrun/base/system.hpp"

namespace tzrun::agent {
namespace {

bool HasBit(Std s, Std bit) {
  return (static_cast<unsigned>(s) & static_cast<unsigned>(bit)) != 0U;
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    Reset();
    fd_ = o.Release();
  }
  return *this;
}

int UniqueFd::Release() noexcept {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

void UniqueFd::Reset() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void AttemptStdio::OpenFiltered(int stream, const std::string& path,
                                const std::vector<std::string>& filters) {
  filtered_[ChildFds::Index(stream)] = std::make_unique<FilteredLog>(path, filters);
}

ChildFds AttemptStdio::OpenWorker(const WorkerStdioSpec& spec) {
  ChildFds child;
  for (int stream = 1; stream <= 2; ++stream) OpenStream(spec, stream, child);
  return child;
}

void AttemptStdio::OpenStream(const WorkerStdioSpec& spec, int stream, ChildFds& child) {
  const Std bit = stream == 1 ? Std::kOut : Std::kErr;
  const bool tee = HasBit(spec.tee, bit);
  const bool redirect = tee || HasBit(spec.redirects, bit);
  int& child_fd = child.fds_[ChildFds::Index(stream)];
  if (!redirect) {
    if (spec.shown) {
      child_fd = -1;  // the console: not captured
    } else if (stream == 1) {
      child_fd = devnull_;
    } else {
      OpenPipe(spec, stream, -1, child);  // muted: kept for the failure report only
    }
    return;
  }
  const std::string& path = stream == 1 ? spec.stdout_path : spec.stderr_path;
  UniqueFd file(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (file.Get() < 0) {
    const int err = errno;
    throw AgentError("cannot open worker log file '" + path + "': " + base::ErrnoText(err) +
                         "; check --log-dir permissions and free space",
                     exit_code::kInfrastructure);
  }
  if (!(tee && spec.shown)) {
    if (stream == 2) tails_[spec.local_rank].file = path;
    child_fd = file.Get();
    child.owned_.push_back(std::move(file));
    return;
  }
  OpenPipe(spec, stream, file.Get(), child);
  files_.push_back(std::move(file));
}

void AttemptStdio::OpenPipe(const WorkerStdioSpec& spec, int stream, int file_fd, ChildFds& child) {
  std::array<int, 2> p{-1, -1};
  if (::pipe2(p.data(), O_CLOEXEC) != 0) {
    const int err = errno;
    throw AgentError("cannot create a pipe for worker output: " + base::ErrnoText(err) +
                         "; raise the open-file limit (ulimit -n)",
                     exit_code::kInfrastructure);
  }
  ::fcntl(p[0], F_SETFL, ::fcntl(p[0], F_GETFL) | O_NONBLOCK);
  Tee t;
  t.fd = UniqueFd(p[0]);
  if (file_fd >= 0) {
    t.router =
        std::make_unique<TeeRouter>(console_, spec.prefix, stream, file_fd, true, spec.local_rank);
    t.router->DuplicateTo(filtered_[ChildFds::Index(stream)].get());
  }
  if (stream == 2) {
    t.tail = std::make_unique<StderrTail>();
    tails_[spec.local_rank].tee = static_cast<int>(tees_.size());
  }
  tees_.push_back(std::move(t));
  child.fds_[ChildFds::Index(stream)] = p[1];
  child.owned_.emplace_back(p[1]);
}

std::optional<std::string> AttemptStdio::StderrTailOf(int local_rank) const {
  const auto it = tails_.find(local_rank);
  if (it == tails_.end()) return std::nullopt;
  if (it->second.tee >= 0) return tees_[static_cast<std::size_t>(it->second.tee)].tail->Text();
  if (!it->second.file.empty()) return ReadFileTail(it->second.file);
  return std::nullopt;
}

bool AttemptStdio::AnyOpen() const noexcept {
  return std::any_of(tees_.begin(), tees_.end(), [](const Tee& t) { return t.fd.Get() >= 0; });
}

void AttemptStdio::Pump(std::size_t i) {
  auto& t = tees_[i];
  if (t.fd.Get() < 0) return;
  std::array<char, 65536> buf{};
  while (true) {
    ssize_t n = ::read(t.fd.Get(), buf.data(), buf.size());
    if (n > 0) {
      const std::string_view bytes(buf.data(), static_cast<std::size_t>(n));
      if (t.router) t.router->Feed(bytes);
      if (t.tail) t.tail->Feed(bytes);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    // EOF or error: this stream is finished.
    if (t.router) {
      t.router->Finish();
      if (!t.router->FileError().empty()) log_.error("{}", t.router->FileError());
    }
    t.fd.Reset();
    return;
  }
}

void AttemptStdio::LogFilteredErrors() {
  for (auto& f : filtered_) {
    if (f && !f->WriteError().empty()) log_.error("{}", f->WriteError());
  }
}

void AttemptStdio::FinishAll() {
  for (std::size_t i = 0; i < tees_.size(); ++i) {
    if (tees_[i].fd.Get() < 0) continue;
    Pump(i);
    if (tees_[i].fd.Get() >= 0) {
      if (tees_[i].router) tees_[i].router->Finish();
      tees_[i].fd.Reset();
    }
  }
  LogFilteredErrors();
}

}  // namespace tzrun::agent
