#include "agent_logger.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "tzrun/base/strings.hpp"

namespace tzrun::agent {

std::shared_ptr<spdlog::logger> MakeLogger(const std::string& level) {
  auto existing = spdlog::get("tzrun.agent");
  if (existing) return existing;
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>("tzrun.agent", sink);
  // glog-like, as torchrun's own log lines: "W1129 18:01:12.922000 5745 tzrun/agent] ..."
  logger->set_pattern("%L%m%d %H:%M:%S.%f %P tzrun/agent] %v");
  const std::string lv = base::Lower(level);
  spdlog::level::level_enum l = spdlog::level::warn;
  if (lv == "debug" || lv == "trace" || lv == "notset") l = spdlog::level::debug;
  if (lv == "info") l = spdlog::level::info;
  if (lv == "error") l = spdlog::level::err;
  if (lv == "critical" || lv == "fatal") l = spdlog::level::critical;
  if (lv == "off") l = spdlog::level::off;
  logger->set_level(l);
  logger->flush_on(spdlog::level::trace);
  return logger;
}

}  // namespace tzrun::agent
