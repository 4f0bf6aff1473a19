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
    child_fd = spec.shown ? -1 : devnull_;
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
    child_fd = file.Get();
    child.owned_.push_back(std::move(file));
    return;
  }
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
  t.router =
      std::make_unique<TeeRouter>(console_, spec.prefix, stream, file.Get(), true, spec.local_rank);
  tees_.push_back(std::move(t));
  files_.push_back(std::move(file));
  child_fd = p[1];
  child.owned_.emplace_back(p[1]);
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
      t.router->Feed(std::string_view(buf.data(), static_cast<std::size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    // EOF or error: this stream is finished.
    t.router->Finish();
    if (!t.router->FileError().empty()) log_.error("{}", t.router->FileError());
    t.fd.Reset();
    return;
  }
}

void AttemptStdio::FinishAll() {
  for (std::size_t i = 0; i < tees_.size(); ++i) {
    if (tees_[i].fd.Get() < 0) continue;
    Pump(i);
    if (tees_[i].fd.Get() >= 0) {
      tees_[i].router->Finish();
      tees_[i].fd.Reset();
    }
  }
}

}  // namespace tzrun::agent
