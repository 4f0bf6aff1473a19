// Internal to tzrec::input: Dataset::Impl, shared by dataset.cpp (batches, epochs, cursor) and
// dataset_setup.cpp (construction steps). Thread-safety: see tzrec/input/input.hpp (Dataset); the
// producer state is touched by the reader thread only, the queue under `mu`.
#pragma once

#include <ATen/core/Tensor.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "reader.hpp"
#include "transform.hpp"
#include "tzrec/input/input.hpp"

namespace tzrec {

struct Dataset::Impl {
  struct FileInfo {
    std::string path;
    std::int64_t start = 0;  // global row of the file's row 0
    std::int64_t rows = 0;
    std::vector<int> column_index;  // per needed column: index in the file's columns
    std::unique_ptr<input::TableReader> reader;
  };

  // --- configuration (immutable after the constructor) ---
  bool parquet = true;
  input::CsvOptions csv;
  std::int64_t batch_size = 0;
  bool drop_remainder = false;
  std::int64_t num_workers = 1;
  int rank = 0;
  int world = 1;
  std::vector<input::FeatureTransform> transforms;
  std::vector<int> feature_slot;              // per feature: index into needed
  std::vector<std::vector<int>> input_slots;  // per feature: a multi-input feature's columns
  std::vector<std::size_t> sparse_features;
  std::vector<std::size_t> dense_features;
  std::vector<std::int64_t> dense_offset;  // per dense feature: first column in Batch::dense
  std::vector<std::string> sparse_names;
  std::vector<std::int64_t> sparse_tables;
  bool weighted = false;  // some sparse feature is a weighted id_feature: batches carry weights
  std::int64_t dense_dim = 0;
  std::vector<int> label_slots;  // per data_config.label_fields entry: index into needed
  int weight_slot = -1;          // data_config.sample_weight_fields[0]
  int group_slot = -1;
  bool shuffle = false;  // data_config.shuffle on a training dataset
  std::int64_t shuffle_buffer = 32;
  std::uint64_t seed = 42;             // train_config.seed
  std::vector<std::string> needed;     // column names read
  std::vector<std::string> needed_by;  // who needs each column (for errors)
  std::vector<FileInfo> files;
  std::vector<std::string> file_names;
  std::vector<std::int64_t> file_starts;  // files.size() + 1
  std::int64_t total = 0;

  // --- epoch state (consumer thread) ---
  DataCursor base;  // consumed rows before this epoch's reading started + epochs_completed
  std::vector<RowRange> assigned;
  std::int64_t assigned_rows = 0;
  std::int64_t rows_returned = 0;
  bool epoch_done = false;
  // shuffle: the epoch's batch order (shuffle.hpp), the first `skipped` of it consumed before a
  // resume, the batches returned since (`returned`) and the rows of both (`emitted`, normalised).
  std::vector<std::int64_t> order;
  std::int64_t skipped = 0;
  std::int64_t returned = 0;
  std::vector<RowRange> emitted;
  std::int64_t resume_skip = 0;  // batches of the first epoch to skip (exact shuffle replay)

  class Builder;

  // --- producer (the reader thread, or Next() itself when num_workers == 0) ---
  struct Producer {
    Impl* impl;
    std::vector<RowRange> ranges;
    std::size_t range_idx = 0;
    std::int64_t row = 0;  // next global row to load
    input::ColumnBlock block;
    std::int64_t block_start = 0;
    std::int64_t block_pos = 0;
    bool finished = false;
    std::size_t file_idx = static_cast<std::size_t>(-1);  // file read last
    // Parallel readers: this producer's own reader per file (opened when first read), so reader
    // threads share no TableReader; else the files' readers.
    bool own_readers = false;
    std::vector<std::unique_ptr<input::TableReader>> own;

    ~Producer() {
      if (file_idx < impl->files.size()) Reader(file_idx).Release();
    }

    Producer(Impl* owner, std::vector<RowRange> r, bool own_files = false)
        : impl(owner), ranges(std::move(r)), own_readers(own_files) {
      if (!ranges.empty()) row = ranges.front().begin;
      if (own_readers) own.resize(impl->files.size());
    }
    input::TableReader& Reader(std::size_t f);
    bool LoadBlock();
    std::optional<Batch> NextBatch();
  };
  // num_workers >= 2: that many reader threads ("lanes"); lane t builds the batches t, t + N,
  // t + 2N, ... of the producer stream with its own readers, and NextBuilt() takes them back in
  // stream order, so the batches and their order do not depend on num_workers (reader_pool.cpp).
  struct Lane {
    std::unique_ptr<Producer> producer;
    std::deque<Batch> queue;  // at most 2 batches ahead
    bool done = false;
    std::exception_ptr error;
  };
  std::vector<Lane> lanes;
  std::vector<std::thread> lane_threads;
  std::size_t lane_next = 0;  // the stream position NextBuilt() returns next
  void StartLanes(const std::vector<RowRange>& ranges);
  void RunLane(std::size_t t);
  void StopLanes();
  // The producer stream's next batch: from the lanes, or the producer itself.
  std::optional<Batch> NextBuilt();
  // A built batch and its index in the epoch's batch stream.
  struct Item {
    Batch batch;
    std::int64_t index = 0;
  };
  // Batches in the order Next() returns them: the producer's, through the shuffle buffer when
  // shuffling (producer thread, or Next() when num_workers == 0).
  struct Emitter {
    std::vector<std::int64_t> order;  // empty: no shuffle
    std::size_t next = 0;             // order[next] is returned next
    std::vector<std::int64_t> built;  // indices of the producer's batches, in build order
    std::size_t built_next = 0;
    std::map<std::int64_t, Batch> buffer;
    std::int64_t count = 0;  // batches returned (no shuffle)
  };
  std::optional<Item> Emit();
  Emitter emitter;
  std::unique_ptr<Producer> producer;
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Item> queue;
  bool producer_done = false;
  bool stop = false;
  std::exception_ptr error;
  std::size_t capacity = 2;

  std::string Where(std::int64_t global_row) const {
    const auto it = std::upper_bound(file_starts.begin(), file_starts.end(), global_row);
    const auto f = static_cast<std::size_t>(it - file_starts.begin()) - 1;
    if (f >= files.size()) return "global row " + std::to_string(global_row);
    return files[f].path + " row " + std::to_string(global_row - files[f].start) +
           (parquet ? "" : (csv.with_header ? " (0-based, after the header)" : " (0-based)")) +
           " (global row " + std::to_string(global_row) + ")";
  }

  void Start(std::vector<RowRange> ranges) {
    emitter.next = 0;
    emitter.built_next = 0;
    emitter.buffer.clear();
    emitter.count = 0;
    queue.clear();
    producer_done = false;
    stop = false;  // before the lanes start: they stop when they see it set
    error = nullptr;
    if (num_workers >= 2) {
      producer.reset();
      StartLanes(ranges);
    } else {
      producer = std::make_unique<Producer>(this, std::move(ranges));
    }
    if (num_workers >= 1) thread = std::thread([this] { Run(); });
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    cv.notify_all();
    if (thread.joinable()) thread.join();
    StopLanes();
    queue.clear();
  }

  void Run() {
    try {
      while (true) {
        auto batch = Emit();
        std::unique_lock<std::mutex> lock(mu);
        if (!batch) {
          producer_done = true;
          cv.notify_all();
          return;
        }
        cv.wait(lock, [this] { return stop || queue.size() < capacity; });
        if (stop) return;
        queue.push_back(std::move(*batch));
        cv.notify_all();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (stop) return;  // stopped while waiting for a lane
      error = std::current_exception();
      producer_done = true;
      cv.notify_all();
    }
  }

  std::optional<Item> Pop() {
    if (num_workers < 1) return Emit();
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [this] { return !queue.empty() || producer_done; });
    if (!queue.empty()) {
      Item b = std::move(queue.front());
      queue.pop_front();
      cv.notify_all();
      return b;
    }
    if (error) std::rethrow_exception(error);
    return std::nullopt;
  }

  // Construction steps (Dataset::Dataset runs them in this order).
  void Configure(const PipelineConfig& config, int for_rank, int of_world, std::int64_t batch_rows,
                 bool train);
  int Need(const std::string& column, const std::string& who);
  void AddFeatures(const PipelineConfig& config);
  void OpenFiles(const PipelineConfig& config, const std::string& input_path);
  void StartFrom(const std::optional<DataCursor>& resume, const std::string& input_path);

  // The epoch's rows, batch order and producer (dataset.cpp).
  void BeginEpoch();
  // The rows consumed so far in this epoch (Cursor()).
  std::vector<RowRange> ConsumedThisEpoch() const;
};

}  // namespace tzrec
