// src/worker/train/progress_report.hpp — tzrec_train's progress reports for tzrun --hang-timeout
// (private to tzrec::train). Under tzrun --hang-timeout every worker gets TZRUN_PROGRESS_FILE; the
// reporter replaces that file's content with "<step> <phase> <unix time>" (temporary file +
// rename, the protocol of src/agent/hang_detector.hpp), at most twice a second for steps of one
// phase and at once when the phase changes (train, eval, checkpoint). Without the variable every
// call is a no-op. Errors writing the file are ignored (a missed report only risks a hang
// verdict, never the training). Thread-safety: one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace tzrec {

class ProgressReporter {
 public:
  ProgressReporter();  // reads TZRUN_PROGRESS_FILE
  void Report(std::int64_t step, const char* phase);

 private:
  std::string path_;
  std::string phase_;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace tzrec
