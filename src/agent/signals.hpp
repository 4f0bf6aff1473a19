// tzrun agent internals: handled signals and SIGCHLD, blocked and read from a signalfd.
//
// Follows torchrun's signal handling (torch/distributed/elastic/multiprocessing/api.py:
// _terminate_process_handler turns TORCHELASTIC_SIGNALS_TO_HANDLE into a SignalException),
// except that the signals are read from a signalfd in the agent's poll loop. A signal that
// was ignored when tzrun started (nohup) stays ignored.
//
// Thread-safety: one instance per process, used from the agent's supervision thread; it
// changes the calling thread's signal mask and the process' SIGPIPE disposition for its
// lifetime and restores both when destroyed.
#pragma once

#include <signal.h>
#include <spdlog/fwd.h>  // spdlog::logger, declared only

#include <string>
#include <vector>

namespace tzrun::agent {

class SignalState {
 public:
  /// Blocks SIGCHLD and the signals named in `names` (--signals-to-handle; unknown names
  /// and SIGKILL/SIGSTOP/SIGCHLD are skipped with a warning on `log`), opens the signalfd
  /// and ignores SIGPIPE. Throws AgentError (125) when signalfd(2) fails.
  /// `forward` (--forward-signals) are blocked and read the same way; the agent passes them on
  /// to the workers without stopping the job (Forwarded()).
  SignalState(const std::vector<std::string>& names, const std::vector<std::string>& forward,
              spdlog::logger& log);
  SignalState(const SignalState&) = delete;
  SignalState& operator=(const SignalState&) = delete;
  /// Discards pending signals, restores the mask and SIGPIPE.
  ~SignalState();

  /// Non-blocking signalfd delivering SIGCHLD and the handled signals.
  [[nodiscard]] int Fd() const noexcept { return fd_; }
  [[nodiscard]] bool Handled(int sig) const;
  [[nodiscard]] bool Forwarded(int sig) const;
  /// The signal mask tzrun started with (the workers start with it).
  [[nodiscard]] const sigset_t& ChildMask() const noexcept { return orig_mask_; }
  /// Signals the workers get back at SIG_DFL (SIGPIPE, SIGXFSZ).
  [[nodiscard]] const std::vector<int>& ResetToDefault() const noexcept { return reset_; }

 private:
  void Add(const std::string& name, spdlog::logger& log, std::vector<int>& list);

  sigset_t orig_mask_{};
  sigset_t blocked_{};
  int fd_ = -1;
  std::vector<int> handled_;
  std::vector<int> forwarded_;
  std::vector<int> reset_;
  struct sigaction old_pipe_ {};
};

}  // namespace tzrun::agent
