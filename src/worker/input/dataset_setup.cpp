// Dataset::Impl's construction steps, in the order Dataset::Dataset runs them (see
// tzrec/input/input.hpp): options, features and columns, files, the starting cursor.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "dataset_impl.hpp"
#include "tzrec/error.hpp"

namespace tzrec {
namespace {

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

}  // namespace

// Rank, batch and reader options from data_config; throws for a bad rank, batch or dataset type.
void Dataset::Impl::Configure(const PipelineConfig& config, int for_rank, int of_world,
                              std::int64_t batch_rows, bool train) {
  auto& m = *this;
  const auto& data = config.data_config();
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
  m.shuffle = train && data.shuffle();  // TorchEasyRec shuffles training data only
  m.shuffle_buffer = data.shuffle_buffer_size();
  m.seed = Seed(config);
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
    m.input_slots.emplace_back();
    if (m.transforms[f].MultiInput()) {
      for (const std::string& column : InputColumns(config, fc)) {
        m.input_slots.back().push_back(m.Need(column, "feature '" + FeatureName(fc) + "'"));
      }
    }
    if (m.transforms[f].Sparse()) {
      m.sparse_features.push_back(f);
      m.sparse_names.push_back(FeatureName(fc));
      m.sparse_tables.push_back(m.transforms[f].TableSize());
      m.weighted = m.weighted || m.transforms[f].Weighted();
    } else {
      m.dense_features.push_back(f);
      m.dense_offset.push_back(m.dense_dim);
      m.dense_dim += m.transforms[f].DenseDim();
    }
  }
  for (int i = 0; i < data.label_fields_size(); ++i) {
    m.label_slots.push_back(
        m.Need(data.label_fields(i), "data_config.label_fields[" + std::to_string(i) + "]"));
  }
  if (data.sample_weight_fields_size() > 0) {
    m.weight_slot = m.Need(data.sample_weight_fields(0), "data_config.sample_weight_fields[0]");
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
        throw InputError(std::string(m.parquet ? "ParquetDataset" : "CsvDataset") + ": column '" +
                         m.needed[c] + "' (needed by " + m.needed_by[c] + ") is not in " + path +
                         "; its columns are " + NameList(columns) +
                         (m.parquet || data.with_header()
                              ? ""
                              : " (from data_config.input_fields; a file with a header line needs "
                                "data_config.with_header: true)") +
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
    m.base = DataCursor{};
    m.base.total_rows = m.total;
    m.base.epochs_completed = resume->epochs_completed;
    m.base.consumed = NormalizeRanges(resume->consumed);
    const auto& replay = resume->replay;
    if (m.shuffle && replay && replay->world == m.world &&
        replay->batches.size() == static_cast<std::size_t>(m.world) &&
        replay->batches[static_cast<std::size_t>(m.rank)] >= 0) {
      // Same world size: the epoch restarts from its own starting rows and seed, and the batches
      // returned before the checkpoint are skipped (never built), so the order is the same.
      m.base.consumed = NormalizeRanges(replay->epoch_base);
      m.resume_skip = replay->batches[static_cast<std::size_t>(m.rank)];
    }
    // Otherwise (no shuffle, or another world size) the rows not consumed are split anew; with
    // shuffle their batches are shuffled with this epoch's seed: no row is lost or repeated, but
    // the order differs from the interrupted run's.
  } else {
    m.base = DataCursor{};
    m.base.total_rows = m.total;
  }
}

}  // namespace tzrec
