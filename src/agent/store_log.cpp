#include "store_log.hpp"

#include <spdlog/spdlog.h>

#include <string_view>
#include <utility>

namespace tzrun::agent {

store::LogSink make_store_log(std::shared_ptr<spdlog::logger> log, std::string what) {
  return
      [log = std::move(log), what = std::move(what)](store::LogLevel level, std::string_view msg) {
        switch (level) {
          case store::LogLevel::kError:
            log->error("{}: {}", what, msg);
            break;
          case store::LogLevel::kWarning:
            log->warn("{}: {}", what, msg);
            break;
          case store::LogLevel::kInfo:
            log->info("{}: {}", what, msg);
            break;
          default:
            log->debug("{}: {}", what, msg);
            break;
        }
      };
}

}  // namespace tzrun::agent
