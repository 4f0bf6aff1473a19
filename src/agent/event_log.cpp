// --event-log FILE (event_log.hpp).
#include "event_log.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>

#include "agent_error.hpp"
#include "tzrun/base/system.hpp"

namespace tzrun::agent {

JsonEventLog::JsonEventLog(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "ae");
  if (file_ == nullptr) {
    throw AgentError("--event-log " + path + ": cannot open the file for appending: " +
                         base::ErrnoText(errno) + "; name a file in a writable directory",
                     exit_code::kInfrastructure);
  }
}

JsonEventLog::~JsonEventLog() {
  if (file_ != nullptr) std::fclose(file_);
}

void JsonEventLog::Write(const std::string& event, const nlohmann::json& fields) {
  nlohmann::ordered_json line;
  line["time"] =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  line["event"] = event;
  for (const auto& [k, v] : fields.items()) line[k] = v;
  const std::string text =
      line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (std::fputs(text.c_str(), file_) < 0 || std::fflush(file_) != 0) {
    if (!failed_) {
      spdlog::warn("--event-log {}: writing failed: {}; later events may be missing", path_,
                   base::ErrnoText(errno));
    }
    failed_ = true;
  }
}

}  // namespace tzrun::agent
