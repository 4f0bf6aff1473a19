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

bool has_bit(Std s, Std bit) {
  return (static_cast<unsigned>(s) & static_cast<unsigned>(bit)) != 0U;
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.release();
  }
  return *this;
}

int UniqueFd::release() noexcept {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

void UniqueFd::reset() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

ChildFds AttemptStdio::open_worker(const WorkerStdioSpec& spec) {
  ChildFds child;
  for (int stream = 1; stream <= 2; ++stream) open_stream(spec, stream, child);
  return child;
}

void AttemptStdio::open_stream(const WorkerStdioSpec& spec, int stream, ChildFds& child) {
  const Std bit = stream == 1 ? Std::kOut : Std::kErr;
  const bool tee = has_bit(spec.tee, bit);
  const bool redirect = tee || has_bit(spec.redirects, bit);
  int& child_fd = child.fds_[ChildFds::index(stream)];
  if (!redirect) {
    child_fd = spec.shown ? -1 : devnull_;
    return;
  }
  const std::string& path = stream == 1 ? spec.stdout_path : spec.stderr_path;
  UniqueFd file(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (file.get() < 0) {
    const int err = errno;
    throw AgentError("cannot open worker log file '" + path + "': " + base::errno_text(err) +
                         "; check --log-dir permissions and free space",
                     exit_code::kInfrastructure);
  }
  if (!(tee && spec.shown)) {
    child_fd = file.get();
    child.owned_.push_back(std::move(file));
    return;
  }
  std::array<int, 2> p{-1, -1};
  if (::pipe2(p.data(), O_CLOEXEC) != 0) {
    const int err = errno;
    throw AgentError("cannot create a pipe for worker output: " + base::errno_text(err) +
                         "; raise the open-file limit (ulimit -n)",
                     exit_code::kInfrastructure);
  }
  ::fcntl(p[0], F_SETFL, ::fcntl(p[0], F_GETFL) | O_NONBLOCK);
  Tee t;
  t.fd = UniqueFd(p[0]);
  t.router =
      std::make_unique<TeeRouter>(console_, spec.prefix, stream, file.get(), true, spec.local_rank);
  tees_.push_back(std::move(t));
  files_.push_back(std::move(file));
  child_fd = p[1];
  child.owned_.emplace_back(p[1]);
}

bool AttemptStdio::any_open() const noexcept {
  return std::any_of(tees_.begin(), tees_.end(), [](const Tee& t) { return t.fd.get() >= 0; });
}

void AttemptStdio::pump(std::size_t i) {
  auto& t = tees_[i];
  if (t.fd.get() < 0) return;
  std::array<char, 65536> buf{};
  while (true) {
    ssize_t n = ::read(t.fd.get(), buf.data(), buf.size());
    if (n > 0) {
      t.router->feed(std::string_view(buf.data(), static_cast<std::size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    // EOF or error: this stream is finished.
    t.router->finish();
    if (!t.router->file_error().empty()) log_.error("{}", t.router->file_error());
    t.fd.reset();
    return;
  }
}

void AttemptStdio::finish_all() {
  for (std::size_t i = 0; i < tees_.size(); ++i) {
    if (tees_[i].fd.get() < 0) continue;
    pump(i);
    if (tees_[i].fd.get() >= 0) {
      tees_[i].router->finish();
      tees_[i].fd.reset();
    }
  }
}

}  // namespace tzrun::agent
