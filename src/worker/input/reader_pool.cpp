// Parallel reader threads of a Dataset (data_config.num_workers >= 2; see dataset_impl.hpp): N
// lanes, lane t building the batches t, t + N, ... of the producer stream with its own file
// readers; NextBuilt() takes them back in stream order, so the batches and their order are those
// of one reader. TorchEasyRec runs num_workers DataLoader processes per rank over row slices
// (tzrec/datasets/dataset.py create_dataloader); the order of its batches depends on
// num_workers, ours does not.
#include <string>
#include <utility>

#include "dataset_impl.hpp"
#include "shuffle.hpp"

namespace tzrec {

input::TableReader& Dataset::Impl::Producer::Reader(std::size_t f) {
  if (!own_readers) return *impl->files[f].reader;
  auto& reader = own[f];
  if (!reader) {
    const std::string& path = impl->files[f].path;
    reader = impl->parquet ? input::OpenParquet(path) : input::OpenCsv(path, impl->csv);
  }
  return *reader;
}

void Dataset::Impl::StartLanes(const std::vector<RowRange>& ranges) {
  const auto n = static_cast<std::size_t>(num_workers);
  std::int64_t rows = 0;
  for (const auto& r : ranges) rows += r.Size();
  const std::int64_t num_batches = (rows + batch_size - 1) / batch_size;
  lanes = std::vector<Lane>(n);
  lane_next = 0;
  for (std::size_t t = 0; t < n; ++t) {
    std::vector<std::int64_t> others;
    for (std::int64_t k = 0; k < num_batches; ++k) {
      if (static_cast<std::size_t>(k) % n != t) others.push_back(k);
    }
    lanes[t].producer = std::make_unique<Producer>(
        this, input::RemoveBatches(ranges, std::move(others), batch_size), /*own_files=*/true);
  }
  for (std::size_t t = 0; t < n; ++t) lane_threads.emplace_back([this, t] { RunLane(t); });
}

void Dataset::Impl::RunLane(std::size_t t) {
  Lane& lane = lanes[t];
  try {
    while (true) {
      auto batch = lane.producer->NextBatch();
      std::unique_lock<std::mutex> lock(mu);
      if (!batch) {
        lane.done = true;
        cv.notify_all();
        return;
      }
      cv.wait(lock, [&] { return stop || lane.queue.size() < 2; });
      if (stop) return;
      lane.queue.push_back(std::move(*batch));
      cv.notify_all();
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu);
    lane.error = std::current_exception();
    lane.done = true;
    cv.notify_all();
  }
}

// Called with `stop` set and the emitter thread joined.
void Dataset::Impl::StopLanes() {
  for (auto& t : lane_threads) {
    if (t.joinable()) t.join();
  }
  lane_threads.clear();
  lanes.clear();
}

std::optional<Batch> Dataset::Impl::NextBuilt() {
  if (lanes.empty()) return producer->NextBatch();
  Lane& lane = lanes[lane_next % lanes.size()];
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return stop || !lane.queue.empty() || lane.done; });
  if (!lane.queue.empty()) {
    Batch b = std::move(lane.queue.front());
    lane.queue.pop_front();
    ++lane_next;
    cv.notify_all();
    return b;
  }
  if (lane.error) std::rethrow_exception(lane.error);
  return std::nullopt;  // the stream's end (or stopped)
}

}  // namespace tzrec
