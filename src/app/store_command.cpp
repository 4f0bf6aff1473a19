// `tzrun store`: run a standalone c10d-TCPStore-compatible store until SIGTERM/SIGINT.
//
//   tzrun store [--host H] [--port P] [--max-connections N] [--max-key-size B]
//               [--max-value-size B] [--max-count N] [--log-level LEVEL]
//
// Prints "tzrun store: listening on ADDR:PORT" on stdout (flushed) once it accepts
// connections. Exit codes: 0 after SIGTERM/SIGINT, 2 for bad flags, 125 when the store cannot
// start (e.g. the port is in use) — tzrun::ExitCode.
#include "store_command.hpp"

#include <signal.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "tzrun/launch_config.hpp"
#include "tzrun/store/server.hpp"
#include "tzrun/store/spdlog_sink.hpp"

namespace tzrun::app {
namespace {

// The flags of `tzrun store`, with their defaults.
struct StoreFlags {
  std::string host;
  int port = 29500;
  std::size_t max_connections = 0;
  std::size_t max_key_size = store::Limits::kDefaultMaxKeyBytes;
  std::size_t max_value_size = store::Limits::kDefaultMaxValueBytes;
  std::size_t max_count = store::Limits::kDefaultMaxCount;
  std::string log_level = "info";
};

void AddFlags(CLI::App& app, StoreFlags& f) {
  app.add_option("--host", f.host,
                 "Address to listen on; empty (default) = all interfaces, IPv6 dual-stack "
                 "with IPv4 fallback");
  app.add_option("--port", f.port, "TCP port; 0 picks a free one")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("--max-connections", f.max_connections,
                 "Most client connections at once; 0 = unlimited")
      ->capture_default_str();
  app.add_option("--max-key-size", f.max_key_size, "Largest key in bytes; 0 = no cap")
      ->capture_default_str();
  app.add_option("--max-value-size", f.max_value_size, "Largest value in bytes; 0 = no cap")
      ->capture_default_str();
  app.add_option("--max-count", f.max_count,
                 "Most keys in one CHECK/WAIT/MULTI_GET/MULTI_SET request; 0 = no cap")
      ->capture_default_str();
  app.add_option("--log-level", f.log_level, "trace|debug|info|warning|error|critical|off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warning", "error", "critical", "off"}))
      ->capture_default_str();
}

std::shared_ptr<spdlog::logger> MakeLogger(const std::string& log_level) {
  auto logger = std::make_shared<spdlog::logger>("tzrun-store",
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [tzrun store] [%l] %v");
  logger->set_level(spdlog::level::from_str(log_level == "warning" ? "warn" : log_level));
  logger->flush_on(spdlog::level::trace);
  return logger;
}

store::ServerOptions ServerOptions(const StoreFlags& f, std::shared_ptr<spdlog::logger> logger) {
  store::ServerOptions options;
  options.host = f.host;
  options.port = static_cast<std::uint16_t>(f.port);
  options.max_connections = f.max_connections;
  options.max_key_bytes = f.max_key_size;
  options.max_value_bytes = f.max_value_size;
  options.max_count = f.max_count;
  options.log = store::SpdlogSink(std::move(logger));
  return options;
}

// Serves until SIGTERM/SIGINT; returns the exit code.
int Serve(const store::ServerOptions& options, spdlog::logger& logger) {
  // Block the stop signals before the server thread starts so only sigwait() sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigset_t previous;
  pthread_sigmask(SIG_BLOCK, &stop_signals, &previous);

  store::Server server(options);
  try {
    server.Start();
  } catch (const store::BindError& e) {
    std::fprintf(stderr, "tzrun store: error: %s; pass another one with --port\n", e.what());
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    return ExitCode::kInfrastructure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tzrun store: error: cannot start the store: %s\n", e.what());
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    return ExitCode::kInfrastructure;
  }
  std::fprintf(stdout, "tzrun store: listening on %s\n", server.Endpoint().c_str());
  std::fflush(stdout);

  int signal_number = 0;
  while (sigwait(&stop_signals, &signal_number) != 0) {
  }
  logger.info("received {}, stopping", signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
  server.Stop();
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return ExitCode::kSuccess;
}

}  // namespace

int StoreMain(int argc, char** argv) {
  CLI::App app{
      "Run a standalone c10d-TCPStore-compatible key/value store (PyTorch "
      "torch.distributed.TCPStore clients can connect to it).",
      "tzrun store"};
  StoreFlags flags;
  AddFlags(app, flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? ExitCode::kSuccess : ExitCode::kUsage;
  }
  auto logger = MakeLogger(flags.log_level);
  return Serve(ServerOptions(flags, logger), *logger);
}

}  // namespace tzrun::app
