// src/worker/app/failure.hpp — how tzrec_train reports the error that ends a command (private to
// tzrec_train and its tests; target tzrec::app_failure, plain C++ without libtorch).
//
// The one boundary (main.cpp) turns the error into
//   - one stderr line, written with a single write(2) so the lines of ranks that share a terminal
//     never interleave mid-line (POSIX: a write of at most PIPE_BUF bytes to a pipe is atomic);
//     an error every rank agreed on (include/tzrec/comm/agree.hpp) is printed in full only on the
//     rank that raised it, every other rank prints "the same error as rank N";
//   - torchelastic's error file when TORCHELASTIC_ERROR_FILE is set (tzrun and torchrun set it for
//     each worker): the shape torch's @record writes (torch/distributed/elastic/multiprocessing/
//     errors/error_handler.py, record_exception):
//       {"message": {"message": "<text>", "extraInfo": {"timestamp": "<unix seconds>"}}}
//     without py_callstack (there is no Python stack), so the launcher's failure report shows the
//     message itself; every rank writes the full message, whichever rank the launcher names.
//     A deterministic failure — exit 2 (bad input or config) or 3 (no sharding plan) — fails the
//     same way on every retry, so its extraInfo also says "retryable": "false"; tzrun reads it and
//     does not restart the worker group (torchrun ignores the key and retries as usual). Exit 1
//     (internal) and 4 (collective, checkpoint I/O) may be transient and carry no such key.
// Thread-safety: pure functions, except the two writers (one thread at exit).
#pragma once

#include <cstdint>
#include <string>

namespace tzrec {

// Whether a retry of a command that failed with exit_code can succeed (false for 2 and 3).
bool IsRetryableExit(int exit_code);

struct FailureText {
  std::string console;     // the stderr line, ending in '\n'
  std::string error_json;  // the error-file JSON
};

// who: "tzrec_train train_eval rank 1" (or without " rank R" outside a launcher); label: the
// error's kind ("config", ...; empty: none); origin_rank: Error::OriginRank() (-1: raised here);
// my_rank: RANK (-1 when unset); unix_time: seconds since the epoch.
FailureText DescribeFailure(const std::string& who, const std::string& label,
                            const std::string& message, int exit_code, int origin_rank, int my_rank,
                            std::int64_t unix_time);

// Writes text to stderr (fd 2) in one write(2) call, retrying on EINTR and short writes.
void WriteStderr(const std::string& text);

// Writes json to path atomically (path + ".tmp", then rename). Returns "" or why it failed (the
// caller warns; a failed error file never changes the exit code).
std::string WriteErrorFile(const std::string& path, const std::string& json);

}  // namespace tzrec
