#include "signals.hpp"

#include <spdlog/spdlog.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "agent_error.hpp"
#include "process.hpp"
#include "tzrun/base/system.hpp"

namespace tzrun::agent {

SignalState::SignalState(const std::vector<std::string>& names,
                         const std::vector<std::string>& forward, spdlog::logger& log) {
  ::sigprocmask(SIG_BLOCK, nullptr, &orig_mask_);
  sigemptyset(&blocked_);
  sigaddset(&blocked_, SIGCHLD);
  for (const auto& name : names) Add(name, log, handled_);
  for (const auto& name : forward) Add(name, log, forwarded_);
  ::sigprocmask(SIG_BLOCK, &blocked_, nullptr);
  fd_ = ::signalfd(-1, &blocked_, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd_ < 0) {
    int err = errno;
    ::sigprocmask(SIG_SETMASK, &orig_mask_, nullptr);
    throw AgentError(
        "cannot create a signalfd: " + base::ErrnoText(err) + "; tzrun needs Linux signalfd(2)",
        exit_code::kInfrastructure);
  }
  // The console may be a closed pipe; never die of SIGPIPE (workers get it back).
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  ::sigaction(SIGPIPE, &ign, &old_pipe_);
  // Workers start with SIGPIPE and SIGXFSZ at SIG_DFL, as Python's Popen(restore_signals=True)
  // gives torchrun's workers.
  reset_ = {SIGPIPE, SIGXFSZ};
}

void SignalState::Add(const std::string& name, spdlog::logger& log, std::vector<int>& list) {
  int sig = detail::SignalFromName(name);
  if (sig < 0) {
    log.warn(
        "Unknown signal name '{}' in --signals-to-handle; skipping it (use names "
        "like SIGTERM,SIGUSR1)",
        name);
    return;
  }
  if (sig == SIGKILL || sig == SIGSTOP || sig == SIGCHLD) {
    log.warn("{} in --signals-to-handle cannot be handled; skipping it", name);
    return;
  }
  struct sigaction old {};
  ::sigaction(sig, nullptr, &old);
  if (old.sa_handler == SIG_IGN) {
    // nohup & co: keep ignoring it (and so do the workers, which inherit SIG_IGN).
    log.info("{} was ignored when tzrun started (e.g. nohup); leaving it ignored", name);
    return;
  }
  if (!Handled(sig) && !Forwarded(sig)) {
    list.push_back(sig);
    sigaddset(&blocked_, sig);
  }
}

SignalState::~SignalState() {
  // Discard what is pending (a late SIGCHLD or a repeated SIGTERM) so unblocking does not
  // kill us after the decision was made, then restore the mask and SIGPIPE.
  signalfd_siginfo si{};
  while (::read(fd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
  }
  ::close(fd_);
  ::sigaction(SIGPIPE, &old_pipe_, nullptr);
  ::sigprocmask(SIG_SETMASK, &orig_mask_, nullptr);
}

bool SignalState::Handled(int sig) const {
  return std::find(handled_.begin(), handled_.end(), sig) != handled_.end();
}

bool SignalState::Forwarded(int sig) const {
  return std::find(forwarded_.begin(), forwarded_.end(), sig) != forwarded_.end();
}

}  // namespace tzrun::agent
