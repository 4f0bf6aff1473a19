// Dataset: files → rank rows → transformed batches, with a background reader thread (see
// tzrec/input/input.hpp).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

#include "reader.hpp"
#include "transform.hpp"
#include "tzrec/error.hpp"
#include "tzrec/input/input.hpp"

namespace tzrec {
namespace {

using input::Cell;
using input::ColumnBlock;
using input::FeatureTransform;
using input::TableReader;

std::string NameList(const std::vector<std::string>& names) {
  std::string out = "[";
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i) out += ", ";
    if (i == 64) {
      out += "... (" + std::to_string(names.size()) + " columns)";
      break;
    }
    out += "'" + names[i] + "'";
  }
  return out + "]";
}

char ParseDelimiter(const std::string& delimiter) {
  if (delimiter.size() == 1) return delimiter[0];
  if (delimiter == "\\t" || delimiter == "tab" || delimiter == "TAB") return '\t';
  throw InputError("data_config.delimiter \"" + delimiter +
                   "\" must be one character (\",\", \"\\t\", \"|\", ...)");
}

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

struct Dataset::Impl {
  struct FileInfo {
    std::string path;
    std::int64_t start = 0;  // global row of the file's row 0
    std::int64_t rows = 0;
    std::vector<int> column_index;  // per needed column: index in the file's columns
    std::unique_ptr<TableReader> reader;
  };

  // --- configuration (immutable after the constructor) ---
  bool parquet = true;
  input::CsvOptions csv;
  std::int64_t batch_size = 0;
  bool drop_remainder = false;
  std::int64_t num_workers = 1;
  int rank = 0;
  int world = 1;
  std::vector<FeatureTransform> transforms;
  std::vector<int> feature_slot;  // per feature: index into needed
  std::vector<std::size_t> sparse_features;
  std::vector<std::size_t> dense_features;
  std::vector<std::int64_t> dense_offset;  // per dense feature: first column in Batch::dense
  std::vector<std::string> sparse_names;
  std::vector<std::int64_t> sparse_tables;
  std::int64_t dense_dim = 0;
  int label_slot = -1;
  int group_slot = -1;
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

  class Builder;

  // --- producer (the reader thread, or Next() itself when num_workers == 0) ---
  struct Producer {
    Impl* impl;
    std::vector<RowRange> ranges;
    std::size_t range_idx = 0;
    std::int64_t row = 0;  // next global row to load
    ColumnBlock block;
    std::int64_t block_start = 0;
    std::int64_t block_pos = 0;
    bool finished = false;
    std::size_t file_idx = static_cast<std::size_t>(-1);  // file read last

    ~Producer() {
      if (file_idx < impl->files.size()) impl->files[file_idx].reader->Release();
    }

    Producer(Impl* owner, std::vector<RowRange> r) : impl(owner), ranges(std::move(r)) {
      if (!ranges.empty()) row = ranges.front().begin;
    }
    bool LoadBlock();
    std::optional<Batch> NextBatch();
  };
  std::unique_ptr<Producer> producer;
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Batch> queue;
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
    producer = std::make_unique<Producer>(this, std::move(ranges));
    queue.clear();
    producer_done = false;
    stop = false;
    error = nullptr;
    if (num_workers >= 1) thread = std::thread([this] { Run(); });
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    cv.notify_all();
    if (thread.joinable()) thread.join();
    queue.clear();
  }

  void Run() {
    try {
      while (true) {
        auto batch = producer->NextBatch();
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
      error = std::current_exception();
      producer_done = true;
      cv.notify_all();
    }
  }

  std::optional<Batch> Pop() {
    if (num_workers < 1) return producer->NextBatch();
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [this] { return !queue.empty() || producer_done; });
    if (!queue.empty()) {
      Batch b = std::move(queue.front());
      queue.pop_front();
      cv.notify_all();
      return b;
    }
    if (error) std::rethrow_exception(error);
    return std::nullopt;
  }

  // Construction steps (Dataset::Dataset runs them in this order).
  void Configure(const protos::DataConfig& data, int for_rank, int of_world,
                 std::int64_t batch_rows);
  int Need(const std::string& column, const std::string& who);
  void AddFeatures(const PipelineConfig& config);
  void OpenFiles(const PipelineConfig& config, const std::string& input_path);
  void StartFrom(const std::optional<DataCursor>& resume, const std::string& input_path);

  void BeginEpoch() {
    assigned = base.Assign(rank, world);
    assigned_rows = 0;
    for (const auto& r : assigned) assigned_rows += r.Size();
    rows_returned = 0;
    epoch_done = false;
    Start(assigned);
  }
};

// One batch under construction.
class Dataset::Impl::Builder {
 public:
  Builder(const Dataset::Impl& impl, std::int64_t capacity)
      : impl_(impl), ids_(impl.sparse_features.size()), lengths_(impl.sparse_features.size()) {
    for (auto& l : lengths_) l.reserve(static_cast<std::size_t>(capacity));
    for (auto& v : ids_) v.reserve(static_cast<std::size_t>(capacity));
    dense_.reserve(static_cast<std::size_t>(capacity * impl.dense_dim));
    labels_.reserve(static_cast<std::size_t>(capacity));
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
        impl_.transforms[f].AppendIdsColumn(column(impl_.feature_slot[f]), count, &ids_[k],
                                            &lengths_[k], &failed);
      }
      if (impl_.dense_dim > 0) {
        dense_.resize(dense_.size() + static_cast<std::size_t>(count * impl_.dense_dim));
        float* out = dense_.data() + n_ * impl_.dense_dim;
        for (std::size_t k = 0; k < impl_.dense_features.size(); ++k) {
          const std::size_t f = impl_.dense_features[k];
          impl_.transforms[f].WriteDenseColumn(column(impl_.feature_slot[f]), count,
                                               out + impl_.dense_offset[k], impl_.dense_dim,
                                               &failed);
        }
      }
      if (impl_.label_slot >= 0) {
        const Cell* cells = column(impl_.label_slot);
        for (failed = 0; failed < count; ++failed) labels_.push_back(Label(cells[failed]));
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
    std::size_t total = 0;
    for (const auto& v : ids_) total += v.size();
    std::vector<std::int64_t> values;
    values.reserve(total);
    for (const auto& v : ids_) values.insert(values.end(), v.begin(), v.end());
    std::vector<std::int64_t> lengths;
    lengths.reserve(lengths_.size() * static_cast<std::size_t>(n_));
    for (const auto& l : lengths_) lengths.insert(lengths.end(), l.begin(), l.end());
    b.sparse = KeyedJaggedTensor(
        impl_.sparse_names, ToTensor(values, {static_cast<std::int64_t>(values.size())}, at::kLong),
        ToTensor(lengths, {static_cast<std::int64_t>(lengths.size())}, at::kLong), std::nullopt,
        n_);
    b.dense = ToTensor(dense_, {n_, impl_.dense_dim}, at::kFloat);
    if (impl_.label_slot >= 0) b.labels = ToTensor(labels_, {n_}, at::kFloat);
    if (impl_.group_slot >= 0) b.group_ids = ToTensor(groups_, {n_}, at::kLong);
    return b;
  }

 private:
  float Label(const Cell& cell) {
    switch (cell.kind) {
      case Cell::Kind::kInt:
        return static_cast<float>(cell.i);
      case Cell::Kind::kFloat:
        return static_cast<float>(cell.d);
      case Cell::Kind::kString: {
        const auto v = input::ParseDouble(cell.s);
        if (v) return static_cast<float>(*v);
        throw InputError("label '" + impl_.needed[static_cast<std::size_t>(impl_.label_slot)] +
                         "' value " + input::Describe(cell) +
                         " is not a number; labels must be 0/1 or numbers");
      }
      case Cell::Kind::kNull:
        break;
    }
    throw InputError("label '" + impl_.needed[static_cast<std::size_t>(impl_.label_slot)] +
                     "' is missing; every row needs a label (drop such rows from the data)");
  }

  const Dataset::Impl& impl_;
  std::vector<std::vector<std::int64_t>> ids_;
  std::vector<std::vector<std::int64_t>> lengths_;
  std::vector<float> dense_;
  std::vector<float> labels_;
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
    if (file_idx < impl->files.size()) impl->files[file_idx].reader->Release();
    file_idx = f;
  }
  auto& file = impl->files[f];
  const std::int64_t local = row - file.start;
  const std::int64_t end =
      std::min({ranges[range_idx].end - file.start, file.rows, file.reader->ChunkEnd(local)});
  block = file.reader->Read(local, end, file.column_index);
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

// ---------------------------------------------------------------------------------------------

// Dataset::Impl's construction steps, in the order the constructor runs them.

// Rank, batch and reader options from data_config; throws for a bad rank, batch or dataset type.
void Dataset::Impl::Configure(const protos::DataConfig& data, int for_rank, int of_world,
                              std::int64_t batch_rows) {
  auto& m = *this;
  if (of_world < 1 || for_rank < 0 || for_rank >= of_world) {
    throw std::invalid_argument("Dataset: rank " + std::to_string(for_rank) +
                                " is not in [0, world=" + std::to_string(of_world) + ")");
  }
  if (batch_rows < 1) {
    throw std::invalid_argument("Dataset: batch_size must be >= 1, got " +
                                std::to_string(batch_rows) + "; set data_config.batch_size");
  }
  m.rank = for_rank;
  m.world = of_world;
  m.batch_size = batch_rows;
  m.drop_remainder = data.drop_remainder();
  m.num_workers = std::max<std::int64_t>(0, data.num_workers());
  m.capacity = static_cast<std::size_t>(std::max<std::int64_t>(2, 2 * m.num_workers));
  if (data.dataset_type() == protos::ParquetDataset) {
    m.parquet = true;
  } else if (data.dataset_type() == protos::CsvDataset) {
    m.parquet = false;
    m.csv.delimiter = ParseDelimiter(data.delimiter());
    m.csv.with_header = data.with_header();
    for (const auto& field : data.input_fields()) m.csv.input_fields.push_back(field.input_name());
    if (!data.with_header() && m.csv.input_fields.empty()) {
      throw InputError(
          "CsvDataset: data_config.with_header is false but "
          "data_config.input_fields is empty; name the columns in "
          "input_fields (in file order) or write a header line");
    }
  } else {
    throw InputError("data_config.dataset_type '" + protos::DatasetType_Name(data.dataset_type()) +
                     "' is not supported; use ParquetDataset or CsvDataset");
  }
}

// The index of `column` in `needed`, added when new; `who` is appended to its users.
int Dataset::Impl::Need(const std::string& column, const std::string& who) {
  for (std::size_t i = 0; i < needed.size(); ++i) {
    if (needed[i] == column) {
      needed_by[i] += ", " + who;
      return static_cast<int>(i);
    }
  }
  needed.push_back(column);
  needed_by.push_back(who);
  return static_cast<int>(needed.size()) - 1;
}

// Transforms of every feature config, the columns they need and the sparse / dense split.
void Dataset::Impl::AddFeatures(const PipelineConfig& config) {
  auto& m = *this;
  const auto& data = config.data_config();
  for (const auto& fc : config.feature_configs()) {
    m.transforms.emplace_back(fc, data);
    const std::size_t f = m.transforms.size() - 1;
    m.feature_slot.push_back(m.Need(InputColumn(config, fc), "feature '" + FeatureName(fc) + "'"));
    if (m.transforms[f].Sparse()) {
      m.sparse_features.push_back(f);
      m.sparse_names.push_back(FeatureName(fc));
      m.sparse_tables.push_back(m.transforms[f].TableSize());
    } else {
      m.dense_features.push_back(f);
      m.dense_offset.push_back(m.dense_dim);
      m.dense_dim += m.transforms[f].DenseDim();
    }
  }
  if (data.label_fields_size() > 0) {
    m.label_slot = m.Need(data.label_fields(0), "data_config.label_fields[0]");
  }
}

// Files: open, count, check the columns.
void Dataset::Impl::OpenFiles(const PipelineConfig& config, const std::string& input_path) {
  auto& m = *this;
  const auto& data = config.data_config();
  m.file_names = input::ExpandInputPath(input_path);
  const std::string group_key = GroupedAucKey(config);
  for (const auto& path : m.file_names) {
    Impl::FileInfo info;
    info.path = path;
    info.reader = m.parquet ? input::OpenParquet(path) : input::OpenCsv(path, m.csv);
    info.rows = info.reader->NumRows();
    info.reader->Release();  // reopened when this rank reads the file
    info.start = m.total;
    m.total += info.rows;
    const auto& columns = info.reader->ColumnNames();
    if (!group_key.empty() && m.group_slot < 0) {
      std::string column = group_key;
      if (std::find(columns.begin(), columns.end(), column) == columns.end()) {
        for (const auto& fc : config.feature_configs()) {
          if (FeatureName(fc) == group_key) column = InputColumn(config, fc);
        }
      }
      m.group_slot = m.Need(column, "model_config grouped_auc grouping_key '" + group_key + "'");
    }
    for (std::size_t c = 0; c < m.needed.size(); ++c) {
      const auto it = std::find(columns.begin(), columns.end(), m.needed[c]);
      if (it == columns.end()) {
        throw InputError(
            std::string(m.parquet ? "ParquetDataset" : "CsvDataset") + ": column '" + m.needed[c] +
            "' (needed by " + m.needed_by[c] + ") is not in " + path + "; its columns are " +
            NameList(columns) +
            (m.parquet || data.with_header() ? "" : " (from data_config.input_fields)") +
            "; fix the feature expression / label_fields or the data");
      }
      info.column_index.push_back(static_cast<int>(it - columns.begin()));
    }
    m.files.push_back(std::move(info));
  }
  m.file_starts.reserve(m.files.size() + 1);
  for (const auto& f : m.files) m.file_starts.push_back(f.start);
  m.file_starts.push_back(m.total);
}

// The cursor the first epoch starts from: `resume` when given (checked against the files' rows).
void Dataset::Impl::StartFrom(const std::optional<DataCursor>& resume,
                              const std::string& input_path) {
  auto& m = *this;
  if (resume) {
    if (resume->total_rows != m.total) {
      throw std::invalid_argument(
          "Dataset: the resume cursor counts " + std::to_string(resume->total_rows) +
          " rows but the files of '" + input_path + "' hold " + std::to_string(m.total) +
          "; the input data changed since the checkpoint (restore the files, or start without "
          "the data cursor)");
    }
    m.base = DataCursor{m.total, resume->epochs_completed, NormalizeRanges(resume->consumed)};
  } else {
    m.base = DataCursor{m.total, 0, {}};
  }
}

Dataset::Dataset(const PipelineConfig& config, const std::string& input_path, int rank, int world,
                 std::int64_t batch_size, const std::optional<DataCursor>& resume)
    : impl_(std::make_unique<Impl>()) {
  impl_->Configure(config.data_config(), rank, world, batch_size);
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
  auto batch = m.Pop();
  if (!batch) {
    m.epoch_done = true;
    m.rows_returned = m.assigned_rows;
    return std::nullopt;
  }
  m.rows_returned += batch->size;
  return batch;
}

void Dataset::StartNextEpoch() {
  auto& m = *impl_;
  m.Stop();
  m.base = DataCursor{m.total, m.base.epochs_completed + 1, {}};
  m.BeginEpoch();
}

DataCursor Dataset::Cursor() const {
  const auto& m = *impl_;
  DataCursor c = m.base;
  auto ranges = c.consumed;
  for (const auto& r : Prefix(m.assigned, m.rows_returned)) ranges.push_back(r);
  c.consumed = NormalizeRanges(std::move(ranges));
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
