// The markdown report of tzrun_store_bench: see report.hpp.
#include "report.hpp"

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace store_bench {
namespace {

std::string Fmt(double v, const char* f) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

using Get = std::function<double(const ServerResults&)>;

// The table's columns: every server, then tzrun against each other server.
class Table {
 public:
  explicit Table(const Results& res) : res_(res) {
    for (const auto& [name, r] : res) {
      if (name == "tzrun") ours_ = &r;
    }
    for (const auto& e : res) {
      if (ours_ != nullptr && e.first != "tzrun") others_.push_back(&e);
    }
  }

  void Header() const {
    std::printf("\n| scenario | metric |");
    for (const auto& e : res_) std::printf(" %s |", e.first.c_str());
    for (const auto* e : others_) std::printf(" tzrun vs %s |", e->first.c_str());
    std::printf("\n|---|---|");
    for (std::size_t i = 0; i < res_.size() + others_.size(); ++i) std::printf("---|");
    std::printf("\n");
  }

  // One row; a negative value prints as "fail"; the ratio is "-" without `with_ratio`, or
  // when `comparable` (if given) is false for either server.
  void Row(const std::string& scen, const std::string& metric, const Get& get, const char* f,
           bool higher_better, bool with_ratio = true,
           const std::function<bool(const ServerResults&)>& comparable = nullptr) const {
    std::printf("| %s | %s |", scen.c_str(), metric.c_str());
    for (const auto& e : res_) {
      const double v = get(e.second);
      std::printf(" %s |", v < 0 ? "fail" : Fmt(v, f).c_str());
    }
    for (const auto* e : others_) {
      const double a = get(*ours_);
      const double b = get(e->second);
      const double q = higher_better ? a / b : b / a;
      const bool both = !comparable || (comparable(*ours_) && comparable(e->second));
      std::printf(" %s |", with_ratio && both && a > 0 && b > 0 ? Fmt(q, "%.2fx").c_str() : "-");
    }
    std::printf("\n");
  }

 private:
  const Results& res_;
  const ServerResults* ours_ = nullptr;
  std::vector<const std::pair<std::string, ServerResults>*> others_;
};

void MixRows(const Table& t, const Options& o) {
  for (std::size_t i = 0; i < o.mix_conns.size(); ++i) {
    const std::string sc = "mix " + std::to_string(o.mix_conns[i]) + " conns";
    t.Row(
        sc, "ops/s", [i](const ServerResults& r) { return r.mix[i].ok ? r.mix[i].ops_per_s : -1; },
        "%.0f", true);
    t.Row(
        sc, "server CPU per op (us)",
        [i](const ServerResults& r) { return r.mix[i].ok ? r.mix[i].server_cpu_us_per_op : -1; },
        "%.2f", false);
    t.Row(
        sc, "server CPU busy (cores)",
        [i](const ServerResults& r) { return r.mix[i].ok ? r.mix[i].server_busy : -1; }, "%.2f",
        false, false);
    t.Row(
        sc, "loader CPU busy (cores)",
        [i](const ServerResults& r) { return r.mix[i].ok ? r.mix[i].loader_busy : -1; }, "%.2f",
        false, false);
    t.Row(
        sc, "p50 latency (us)",
        [i](const ServerResults& r) { return r.mix[i].ok ? r.mix[i].p50_us : -1; }, "%.0f", false);
    t.Row(
        sc, "p99 latency (us)",
        [i](const ServerResults& r) { return r.mix[i].ok ? r.mix[i].p99_us : -1; }, "%.0f", false);
  }
}

void RendezvousRows(const Table& t, const Options& o) {
  for (std::size_t i = 0; i < o.rdzv.size(); ++i) {
    const std::string sc = "rendezvous " + std::to_string(o.rdzv[i]);
    t.Row(
        sc, "total (s)",
        [i](const ServerResults& r) { return r.rdzv[i].ok ? r.rdzv[i].total_s : -1; }, "%.3f",
        false);
    t.Row(
        sc, "all connected (s)",
        [i](const ServerResults& r) { return r.rdzv[i].ok ? r.rdzv[i].connect_s : -1; }, "%.3f",
        false);
    t.Row(
        sc, "release after last ADD (s)",
        [i](const ServerResults& r) { return r.rdzv[i].ok ? r.rdzv[i].release_s : -1; }, "%.3f",
        false);
    t.Row(
        sc, "connect retries",
        [i](const ServerResults& r) { return static_cast<double>(r.rdzv[i].retries); }, "%.0f",
        false, false);
    t.Row(
        sc, "accept-queue overflows",
        [i](const ServerResults& r) { return static_cast<double>(r.rdzv[i].listen_overflows); },
        "%.0f", false, false);
  }
}

// The --scale rows. Times are "fail" for a run that did not finish (its counts say how far it
// got); CPU and RSS are shown for every run but compared only between finished ones.
void ScaleRows(const Table& t, const Options& o) {
  using SGet = std::function<double(const ScaleResult&)>;
  for (std::size_t i = 0; i < o.scale.size(); ++i) {
    const std::string sc = "scale " + std::to_string(o.scale[i]);
    auto row = [&](const char* metric, const SGet& get, const char* f, bool ratio) {
      t.Row(
          sc, metric, [i, get](const ServerResults& r) { return get(r.scale[i]); }, f, false, ratio,
          [i](const ServerResults& r) { return r.scale[i].ok; });
    };
    auto count = [&](const char* metric, int ScaleResult::*field) {
      row(
          metric, [field](const ScaleResult& z) { return static_cast<double>(z.*field); }, "%.0f",
          false);
    };
    row(
        "total (s)", [](const ScaleResult& z) { return z.ok ? z.total_s : -1; }, "%.3f", true);
    row(
        "all validated (s)", [](const ScaleResult& z) { return z.connect_s; }, "%.3f", true);
    row(
        "release after last ADD (s)", [](const ScaleResult& z) { return z.release_s; }, "%.3f",
        true);
    count("clients validated", &ScaleResult::validated);
    count("clients finished", &ScaleResult::finished);
    row(
        "server CPU (s)",
        [](const ScaleResult& z) {
          return z.server_user_s < 0 ? -1 : z.server_user_s + z.server_sys_s;
        },
        "%.2f", true);
    row(
        "server CPU user (s)", [](const ScaleResult& z) { return z.server_user_s; }, "%.2f", false);
    row(
        "server CPU sys (s)", [](const ScaleResult& z) { return z.server_sys_s; }, "%.2f", false);
    row(
        "server peak RSS (MiB)",
        [](const ScaleResult& z) { return static_cast<double>(z.server_peak_rss_kib) / 1024; },
        "%.1f", true);
    row(
        "server RSS growth (MiB)",
        [](const ScaleResult& z) {
          return static_cast<double>(z.server_peak_rss_kib - z.server_start_rss_kib) / 1024;
        },
        "%.1f", true);
    row(
        "loader CPU (s)", [](const ScaleResult& z) { return z.loader_cpu_s; }, "%.2f", false);
    if (o.scale_abort) {
      row(
          "abort: server CPU for the disconnects (s)",
          [](const ScaleResult& z) { return z.abort_cpu_s; }, "%.2f", true);
      row(
          "abort: server idle after (s)", [](const ScaleResult& z) { return z.abort_settle_s; },
          "%.3f", true);
    }
    count("connect retries", &ScaleResult::retries);
    row(
        "accept-queue overflows",
        [](const ScaleResult& z) { return static_cast<double>(z.listen_overflows); }, "%.0f",
        false);
  }
}

}  // namespace

void PrintTable(const Options& o, const Results& res) {
  const Table t(res);
  t.Header();
  if (o.idle > 0) {
    t.Row(
        "idle " + std::to_string(o.idle) + " conns", "RSS per connection (KiB)",
        [](const ServerResults& r) { return r.idle.ok ? r.idle.bytes_per_conn / 1024 : -1; },
        "%.2f", false);
  }
  MixRows(t, o);
  RendezvousRows(t, o);
  if (!o.scale.empty()) {
    ScaleRows(t, o);
    for (const auto& [name, r] : res) {
      for (const auto& z : r.scale) {
        if (!z.ok) std::printf("note: %s %s\n", name.c_str(), ScaleSummary(z).c_str());
      }
    }
    return;
  }
  t.Row(
      "server process", "RSS after start (MiB)",
      [](const ServerResults& r) { return static_cast<double>(r.start_rss_kib) / 1024; }, "%.1f",
      false, false);
  t.Row(
      "server process", "peak RSS (MiB)",
      [](const ServerResults& r) { return static_cast<double>(r.peak_rss_kib) / 1024; }, "%.1f",
      false, false);
  for (const auto& [name, r] : res) {
    for (const auto& z : r.rdzv) {
      if (!z.ok) {
        std::printf("note: %s rendezvous %d failed: %s\n", name.c_str(), z.clients,
                    z.error.c_str());
      }
    }
  }
}

}  // namespace store_bench
