// Dataset: files → rank rows → transformed batches (optionally through the batch shuffle buffer),
// with a background reader thread (see tzrec/input/input.hpp). Construction steps:
// dataset_setup.cpp.
#include <ATen/ops/empty.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "dataset_impl.hpp"
#include "shuffle.hpp"
#include "tzrec/error.hpp"

namespace tzrec {
namespace {

using input::Cell;
using input::ColumnBlock;

// Rows per block read: a block holds a Cell (48 bytes) per row and column, so a whole Parquet row
// group (65,536 rows x 40 columns = 126 MB) would be fresh memory, page-faulted and zero-filled
// per row group; blocks of 4,096 rows reuse the heap. The reader keeps the decoded row group, so
// the smaller reads decode nothing again.
constexpr std::int64_t kMaxBlockRows = 4096;

// The first `count` rows of `ranges`, as ranges.
std::vector<RowRange> Prefix(const std::vector<RowRange>& ranges, std::int64_t count) {
  std::vector<RowRange> out;
  for (const auto& r : ranges) {
    if (count <= 0) break;
    const std::int64_t n = std::min(count, r.Size());
    out.push_back({r.begin, r.begin + n});
    count -= n;
  }
  return out;
}

template <typename T>
at::Tensor ToTensor(const std::vector<T>& data, std::vector<std::int64_t> shape,
                    at::ScalarType type) {
  auto t = at::empty(shape, at::TensorOptions().dtype(type));
  if (!data.empty()) std::memcpy(t.data_ptr(), data.data(), data.size() * sizeof(T));
  return t;
}

}  // namespace

// One batch under construction.
class Dataset::Impl::Builder {
 public:
  Builder(const Dataset::Impl& impl, std::int64_t capacity)
      : impl_(impl),
        ids_(impl.sparse_features.size()),
        lengths_(impl.sparse_features.size()),
        id_weights_(impl.weighted ? impl.sparse_features.size() : 0) {
    for (auto& l : lengths_) l.reserve(static_cast<std::size_t>(capacity));
    for (auto& v : ids_) v.reserve(static_cast<std::size_t>(capacity));
    dense_.reserve(static_cast<std::size_t>(capacity * impl.dense_dim));
    labels_.resize(impl.label_slots.size());
    for (auto& l : labels_) l.reserve(static_cast<std::size_t>(capacity));
  }
  std::int64_t Size() const { return n_; }

  // Rows [r0, r0 + count) of `block`, one column at a time (sequential reads of each column and
  // a tight loop per feature). An error names the row of the offending cell.
  void AddRows(const ColumnBlock& block, std::int64_t r0, std::int64_t count,
               std::int64_t global_row0) {
    std::int64_t failed = 0;
    auto column = [&](std::int64_t slot) {
      return block.columns[static_cast<std::size_t>(slot)].data() + r0;
    };
    try {
      for (std::size_t k = 0; k < impl_.sparse_features.size(); ++k) {
        const std::size_t f = impl_.sparse_features[k];
        if (impl_.transforms[f].MultiInput()) {
          AddMultiInputRows(k, f, column, count, &failed);
          continue;
        }
        impl_.transforms[f].AppendIdsColumn(column(impl_.feature_slot[f]), count, &ids_[k],
                                            &lengths_[k], &failed,
                                            impl_.weighted ? &id_weights_[k] : nullptr);
      }
      if (impl_.dense_dim > 0) {
        dense_.resize(dense_.size() + static_cast<std::size_t>(count * impl_.dense_dim));
        float* out = dense_.data() + n_ * impl_.dense_dim;
        for (std::size_t k = 0; k < impl_.dense_features.size(); ++k) {
          const std::size_t f = impl_.dense_features[k];
          if (impl_.transforms[f].MultiInput()) {
            WriteMultiInputRows(f, column, count, out + impl_.dense_offset[k], &failed);
            continue;
          }
          impl_.transforms[f].WriteDenseColumn(column(impl_.feature_slot[f]), count,
                                               out + impl_.dense_offset[k], impl_.dense_dim,
                                               &failed);
        }
      }
      for (std::size_t k = 0; k < impl_.label_slots.size(); ++k) {
        const int slot = impl_.label_slots[k];
        const Cell* cells = column(slot);
        for (failed = 0; failed < count; ++failed) {
          labels_[k].push_back(Number(cells[failed], slot, "label"));
        }
      }
      if (impl_.weight_slot >= 0) {
        const Cell* cells = column(impl_.weight_slot);
        for (failed = 0; failed < count; ++failed) {
          weights_.push_back(Number(cells[failed], impl_.weight_slot, "sample weight"));
        }
      }
      if (impl_.group_slot >= 0) {
        const Cell* cells = column(impl_.group_slot);
        for (failed = 0; failed < count; ++failed) {
          const auto text = input::CellText(cells[failed], &buffer_);
          groups_.push_back(
              static_cast<std::int64_t>(input::Fnv1a64(text) & 0x7fffffffffffffffULL));
        }
      }
    } catch (const std::exception& e) {
      throw InputError(impl_.Where(global_row0 + failed) + ": " + e.what());
    }
    n_ += count;
  }

  Batch Finish() {
    Batch b;
    b.size = n_;
    std::size_t total_ids = 0;
    for (const auto& v : ids_) total_ids += v.size();
    std::vector<std::int64_t> values;
    values.reserve(total_ids);
    for (const auto& v : ids_) values.insert(values.end(), v.begin(), v.end());
    std::vector<std::int64_t> lengths;
    lengths.reserve(lengths_.size() * static_cast<std::size_t>(n_));
    for (const auto& l : lengths_) lengths.insert(lengths.end(), l.begin(), l.end());
    std::optional<at::Tensor> weights;
    if (impl_.weighted) {  // per-id weights of every sparse feature (1 for unweighted ones)
      std::vector<float> w;
      w.reserve(total_ids);
      for (const auto& v : id_weights_) w.insert(w.end(), v.begin(), v.end());
      weights = ToTensor(w, {static_cast<std::int64_t>(w.size())}, at::kFloat);
    }
    b.sparse = KeyedJaggedTensor(
        impl_.sparse_names, ToTensor(values, {static_cast<std::int64_t>(values.size())}, at::kLong),
        ToTensor(lengths, {static_cast<std::int64_t>(lengths.size())}, at::kLong), weights, n_);
    b.dense = ToTensor(dense_, {n_, impl_.dense_dim}, at::kFloat);
    for (const auto& l : labels_) b.all_labels.push_back(ToTensor(l, {n_}, at::kFloat));
    if (!b.all_labels.empty()) b.labels = b.all_labels.front();
    if (impl_.weight_slot >= 0) b.sample_weights = ToTensor(weights_, {n_}, at::kFloat);
    if (impl_.group_slot >= 0) b.group_ids = ToTensor(groups_, {n_}, at::kLong);
    return b;
  }

 private:
  // The ids of multi-input feature f (sparse index k) of `count` rows, read from its columns.
  template <typename Column>
  void AddMultiInputRows(std::size_t k, std::size_t f, Column column, std::int64_t count,
                         std::int64_t* failed) {
    const auto& slots = impl_.input_slots[f];
    std::vector<const Cell*> first, row(slots.size());
    for (const int s : slots) first.push_back(column(s));
    for (*failed = 0; *failed < count; ++*failed) {
      for (std::size_t j = 0; j < slots.size(); ++j) row[j] = first[j] + *failed;
      const std::size_t before = ids_[k].size();
      impl_.transforms[f].AppendInputsIds(row.data(), &ids_[k]);
      const std::size_t added = ids_[k].size() - before;
      lengths_[k].push_back(static_cast<std::int64_t>(added));
      if (impl_.weighted) id_weights_[k].resize(id_weights_[k].size() + added, 1.0f);
    }
  }

  // The floats of dense multi-input feature f of `count` rows, row r at out + r * dense_dim.
  template <typename Column>
  void WriteMultiInputRows(std::size_t f, Column column, std::int64_t count, float* out,
                           std::int64_t* failed) {
    const auto& slots = impl_.input_slots[f];
    std::vector<const Cell*> first, row(slots.size());
    for (const int s : slots) first.push_back(column(s));
    for (*failed = 0; *failed < count; ++*failed) {
      for (std::size_t j = 0; j < slots.size(); ++j) row[j] = first[j] + *failed;
      impl_.transforms[f].WriteInputsDense(row.data(), out + *failed * impl_.dense_dim);
    }
  }

  // A label or sample weight cell as a float; `what` names it in errors.
  float Number(const Cell& cell, int slot, const char* what) const {
    const std::string& name = impl_.needed[static_cast<std::size_t>(slot)];
    switch (cell.kind) {
      case Cell::Kind::kInt:
        return static_cast<float>(cell.i);
      case Cell::Kind::kFloat:
        return static_cast<float>(cell.d);
      case Cell::Kind::kString: {
        const auto v = input::ParseDouble(cell.s);
        if (v) return static_cast<float>(*v);
        throw InputError(std::string(what) + " '" + name + "' value " + input::Describe(cell) +
                         " is not a number; " + what + "s must be numbers");
      }
      case Cell::Kind::kList:
        throw InputError(std::string(what) + " '" + name + "' value " + input::Describe(cell) +
                         " is a list; " + what + "s must be one number per row");
      case Cell::Kind::kNull:
        break;
    }
    throw InputError(std::string(what) + " '" + name + "' is missing; every row needs a " + what +
                     " (drop such rows from the data)");
  }

  const Dataset::Impl& impl_;
  std::vector<std::vector<std::int64_t>> ids_;
  std::vector<std::vector<std::int64_t>> lengths_;
  std::vector<std::vector<float>> id_weights_;  // per sparse feature, when impl_.weighted
  std::vector<float> dense_;
  std::vector<std::vector<float>> labels_;  // per label field
  std::vector<float> weights_;
  std::vector<std::int64_t> groups_;
  std::string buffer_;
  std::int64_t n_ = 0;
};

bool Dataset::Impl::Producer::LoadBlock() {
  while (range_idx < ranges.size() && row >= ranges[range_idx].end) {
    ++range_idx;
    if (range_idx < ranges.size()) row = ranges[range_idx].begin;
  }
  if (range_idx >= ranges.size()) return false;
  const auto it = std::upper_bound(impl->file_starts.begin(), impl->file_starts.end(), row);
  const auto f = static_cast<std::size_t>(it - impl->file_starts.begin()) - 1;
  if (file_idx != f) {
    if (file_idx < impl->files.size()) Reader(file_idx).Release();
    file_idx = f;
  }
  auto& file = impl->files[f];
  input::TableReader& reader = Reader(f);
  const std::int64_t local = row - file.start;
  const std::int64_t end = std::min({ranges[range_idx].end - file.start, file.rows,
                                     reader.ChunkEnd(local), local + kMaxBlockRows});
  block = reader.Read(local, end, file.column_index);
  block_start = row;
  block_pos = 0;
  row += end - local;
  return true;
}

std::optional<Batch> Dataset::Impl::Producer::NextBatch() {
  if (finished) return std::nullopt;
  Builder builder(*impl, impl->batch_size);
  while (builder.Size() < impl->batch_size) {
    if (block_pos >= block.num_rows) {
      block = {};
      if (!LoadBlock()) break;
      continue;
    }
    const std::int64_t take =
        std::min(impl->batch_size - builder.Size(), block.num_rows - block_pos);
    builder.AddRows(block, block_pos, take, block_start + block_pos);
    block_pos += take;
  }
  if (builder.Size() == 0 || (builder.Size() < impl->batch_size && impl->drop_remainder)) {
    finished = true;
    return std::nullopt;
  }
  return builder.Finish();
}

// This rank's rows of the epoch and the producer over them. With shuffle the batches (of the
// whole assigned row stream, as if nothing had been consumed) come in ShuffleOrder; the first
// resume_skip of that order were consumed before a resume, so their rows are never read.
void Dataset::Impl::BeginEpoch() {
  assigned = base.Assign(rank, world);
  std::int64_t stream_rows = 0;
  for (const auto& r : assigned) stream_rows += r.Size();
  rows_returned = 0;
  returned = 0;
  emitted.clear();
  epoch_done = false;
  order.clear();
  skipped = 0;
  std::vector<RowRange> ranges = assigned;
  emitter.order.clear();
  emitter.built.clear();
  if (shuffle) {
    const std::int64_t num_batches =
        drop_remainder ? stream_rows / batch_size : (stream_rows + batch_size - 1) / batch_size;
    order = input::ShuffleOrder(num_batches, shuffle_buffer,
                                input::EpochSeed(seed, base.epochs_completed, rank));
    skipped = std::min(resume_skip, num_batches);
    std::vector<std::int64_t> skip(order.begin(), order.begin() + skipped);
    std::vector<bool> is_skipped(static_cast<std::size_t>(num_batches), false);
    for (const std::int64_t i : skip) {
      is_skipped[static_cast<std::size_t>(i)] = true;
      const auto rows = input::SliceStream(assigned, i * batch_size, (i + 1) * batch_size);
      emitted.insert(emitted.end(), rows.begin(), rows.end());
    }
    emitted = NormalizeRanges(std::move(emitted));
    ranges = input::RemoveBatches(assigned, skip, batch_size);
    emitter.order.assign(order.begin() + skipped, order.end());
    for (std::int64_t i = 0; i < num_batches; ++i) {
      if (!is_skipped[static_cast<std::size_t>(i)]) emitter.built.push_back(i);
    }
  }
  assigned_rows = 0;
  for (const auto& r : ranges) assigned_rows += r.Size();
  Start(std::move(ranges));
}

std::vector<RowRange> Dataset::Impl::ConsumedThisEpoch() const {
  if (epoch_done) return assigned;  // the whole epoch (also a dropped remainder)
  if (shuffle) return emitted;
  return Prefix(assigned, rows_returned);
}

// The next batch in return order: the producer's next one, or through the shuffle buffer the next
// of `emitter.order` (the producer builds batches in index order; those built ahead wait in
// `emitter.buffer`, at most shuffle_buffer_size of them).
std::optional<Dataset::Impl::Item> Dataset::Impl::Emit() {
  if (!shuffle) {
    auto batch = NextBuilt();
    if (!batch) return std::nullopt;
    return Item{std::move(*batch), emitter.count++};
  }
  if (emitter.next >= emitter.order.size()) return std::nullopt;
  const std::int64_t target = emitter.order[emitter.next];
  while (emitter.buffer.count(target) == 0) {
    auto batch = NextBuilt();
    if (!batch || emitter.built_next >= emitter.built.size()) {
      throw InternalError("Dataset shuffle: the reader ran out of batches before batch " +
                          std::to_string(target) + " of the epoch's order");
    }
    emitter.buffer.emplace(emitter.built[emitter.built_next++], std::move(*batch));
  }
  auto node = emitter.buffer.extract(target);
  ++emitter.next;
  return Item{std::move(node.mapped()), target};
}

Dataset::Dataset(const PipelineConfig& config, const std::string& input_path, int rank, int world,
                 std::int64_t batch_size, const std::optional<DataCursor>& resume, bool train)
    : impl_(std::make_unique<Impl>()) {
  impl_->Configure(config, rank, world, batch_size, train);
  impl_->AddFeatures(config);
  impl_->OpenFiles(config, input_path);
  impl_->StartFrom(resume, input_path);
  impl_->BeginEpoch();
}

Dataset::~Dataset() {
  if (impl_) impl_->Stop();
}

std::optional<Batch> Dataset::Next() {
  auto& m = *impl_;
  if (m.epoch_done) return std::nullopt;
  auto item = m.Pop();
  if (!item) {
    m.epoch_done = true;
    m.rows_returned = m.assigned_rows;
    return std::nullopt;
  }
  m.rows_returned += item->batch.size;
  if (m.shuffle) {
    ++m.returned;
    auto rows = input::SliceStream(m.assigned, item->index * m.batch_size,
                                   item->index * m.batch_size + item->batch.size);
    rows.insert(rows.end(), m.emitted.begin(), m.emitted.end());
    m.emitted = NormalizeRanges(std::move(rows));
  }
  return std::move(item->batch);
}

void Dataset::StartNextEpoch() {
  auto& m = *impl_;
  m.Stop();
  m.base.epochs_completed += 1;
  m.base.consumed.clear();
  m.resume_skip = 0;
  m.BeginEpoch();
}

DataCursor Dataset::Cursor() const {
  const auto& m = *impl_;
  DataCursor c = m.base;
  auto ranges = c.consumed;
  for (const auto& r : m.ConsumedThisEpoch()) ranges.push_back(r);
  c.consumed = NormalizeRanges(std::move(ranges));
  if (m.shuffle) {
    DataCursor::Replay replay;
    replay.world = m.world;
    replay.epoch_base = m.base.consumed;
    replay.batches.assign(static_cast<std::size_t>(m.world), -1);
    replay.batches[static_cast<std::size_t>(m.rank)] =
        m.epoch_done ? static_cast<std::int64_t>(m.order.size()) : m.skipped + m.returned;
    c.replay = std::move(replay);
  }
  return c;
}

std::int64_t Dataset::RowsAssigned() const {
  return impl_->assigned_rows;
}
std::int64_t Dataset::TotalRows() const {
  return impl_->total;
}
const std::vector<std::string>& Dataset::Files() const {
  return impl_->file_names;
}
bool Dataset::Weighted() const {
  return impl_->weighted;
}

const std::vector<std::string>& Dataset::SparseFeatureNames() const {
  return impl_->sparse_names;
}
const std::vector<std::int64_t>& Dataset::SparseNumEmbeddings() const {
  return impl_->sparse_tables;
}
std::int64_t Dataset::DenseDim() const {
  return impl_->dense_dim;
}

}  // namespace tzrec
