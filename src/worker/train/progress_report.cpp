#include "progress_report.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace tzrec {

ProgressReporter::ProgressReporter() {
  if (const char* p = std::getenv("TZRUN_PROGRESS_FILE"); p != nullptr) path_ = p;
}

void ProgressReporter::Report(std::int64_t step, const char* phase) {
  if (path_.empty()) return;
  const auto now = std::chrono::steady_clock::now();
  if (phase_ == phase && now - last_ < std::chrono::milliseconds(500)) return;
  last_ = now;
  phase_ = phase;
  const std::string tmp = path_ + "." + std::to_string(::getpid()) + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return;
  const double wall =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::fprintf(f, "%lld %s %.3f\n", static_cast<long long>(step), phase, wall);
  if (std::fclose(f) == 0) std::rename(tmp.c_str(), path_.c_str());
}

}  // namespace tzrec
