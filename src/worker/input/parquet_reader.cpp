// Parquet reader (ParquetDataset) on the Arrow/Parquet C++ libraries of the pyarrow wheel (see
// reader.hpp). Reads whole row groups of the needed columns only and keeps the last one cached.
#include <arrow/api.h>
#include <arrow/io/file.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/schema.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <utility>

#include "reader.hpp"
#include "tzrec/error.hpp"

namespace tzrec::input {
namespace {

template <typename ArrayT, typename Make>
void FillCells(const arrow::Array& array, std::int64_t offset, std::int64_t n, Cell* out,
               Make&& make) {
  const auto& a = static_cast<const ArrayT&>(array);
  const bool has_nulls = a.null_count() > 0;
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t i = offset + k;
    out[k] = (has_nulls && a.IsNull(i)) ? Cell::Null() : make(a, i);
  }
}

// The items of list cells (Cell::items points into them); deque: growing keeps them in place.
using ListStore = std::deque<std::vector<Cell>>;

// A block's memory: the row group's table (string views) and the list items.
struct BlockMemory {
  std::shared_ptr<arrow::Table> table;
  ListStore lists;
};

void AppendCells(const arrow::Array& array, std::int64_t offset, std::int64_t n, Cell* out,
                 const std::string& column, const std::string& path, ListStore* lists);

Cell CellAt(const arrow::Array& array, std::int64_t i, const std::string& column,
            const std::string& path, ListStore* lists) {
  Cell cell;
  AppendCells(array, i, 1, &cell, column, path, lists);
  return cell;
}

bool IsList(arrow::Type::type id) {
  return id == arrow::Type::LIST || id == arrow::Type::LARGE_LIST ||
         id == arrow::Type::FIXED_SIZE_LIST;
}

// Rows [offset, offset + n) (n >= 1) of a list<scalar> column: each a Cell::List over its items.
template <typename ListT>
void FillLists(const arrow::Array& array, std::int64_t offset, std::int64_t n, Cell* out,
               const std::string& column, const std::string& path, ListStore* lists) {
  const auto& a = static_cast<const ListT&>(array);
  const auto& values = *a.values();
  if (IsList(values.type_id())) {
    throw InputError("ParquetDataset: " + path + ": column '" + column + "' has type " +
                     array.type()->ToString() +
                     ": lists of lists are not supported (list<int64>, list<string>, "
                     "list<double>, ... are); flatten the column");
  }
  const std::int64_t first = a.value_offset(offset);
  const std::int64_t last = a.value_offset(offset + n - 1) + a.value_length(offset + n - 1);
  auto& items = lists->emplace_back(static_cast<std::size_t>(last - first));
  if (last > first) AppendCells(values, first, last - first, items.data(), column, path, lists);
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t i = offset + k;
    out[k] = a.IsNull(i)
                 ? Cell::Null()
                 : Cell::List(items.data() + (a.value_offset(i) - first), a.value_length(i));
  }
}

void AppendCells(const arrow::Array& array, std::int64_t offset, std::int64_t n, Cell* out,
                 const std::string& column, const std::string& path, ListStore* lists) {
  auto as_int = [](const auto& a, std::int64_t i) {
    return Cell::Int(static_cast<std::int64_t>(a.Value(i)));
  };
  auto as_float = [](const auto& a, std::int64_t i) {
    return Cell::Float(static_cast<double>(a.Value(i)));
  };
  auto as_string = [](const auto& a, std::int64_t i) {
    const auto v = a.GetView(i);
    return Cell::String(std::string_view(v.data(), v.size()));
  };
  switch (array.type_id()) {
    case arrow::Type::BOOL:
      return FillCells<arrow::BooleanArray>(array, offset, n, out, as_int);
    case arrow::Type::INT8:
      return FillCells<arrow::Int8Array>(array, offset, n, out, as_int);
    case arrow::Type::INT16:
      return FillCells<arrow::Int16Array>(array, offset, n, out, as_int);
    case arrow::Type::INT32:
      return FillCells<arrow::Int32Array>(array, offset, n, out, as_int);
    case arrow::Type::INT64:
      return FillCells<arrow::Int64Array>(array, offset, n, out, as_int);
    case arrow::Type::UINT8:
      return FillCells<arrow::UInt8Array>(array, offset, n, out, as_int);
    case arrow::Type::UINT16:
      return FillCells<arrow::UInt16Array>(array, offset, n, out, as_int);
    case arrow::Type::UINT32:
      return FillCells<arrow::UInt32Array>(array, offset, n, out, as_int);
    case arrow::Type::UINT64:
      return FillCells<arrow::UInt64Array>(array, offset, n, out, as_int);
    case arrow::Type::FLOAT:
      return FillCells<arrow::FloatArray>(array, offset, n, out, as_float);
    case arrow::Type::DOUBLE:
      return FillCells<arrow::DoubleArray>(array, offset, n, out, as_float);
    case arrow::Type::STRING:
      return FillCells<arrow::StringArray>(array, offset, n, out, as_string);
    case arrow::Type::LARGE_STRING:
      return FillCells<arrow::LargeStringArray>(array, offset, n, out, as_string);
    case arrow::Type::STRING_VIEW:
      return FillCells<arrow::StringViewArray>(array, offset, n, out, as_string);
    case arrow::Type::BINARY:
      return FillCells<arrow::BinaryArray>(array, offset, n, out, as_string);
    case arrow::Type::LARGE_BINARY:
      return FillCells<arrow::LargeBinaryArray>(array, offset, n, out, as_string);
    case arrow::Type::DICTIONARY: {
      const auto& d = static_cast<const arrow::DictionaryArray&>(array);
      const auto& dict = *d.dictionary();
      for (std::int64_t k = 0; k < n; ++k) {
        const std::int64_t i = offset + k;
        out[k] = d.IsNull(i) ? Cell::Null() : CellAt(dict, d.GetValueIndex(i), column, path, lists);
      }
      return;
    }
    case arrow::Type::LIST:
      return FillLists<arrow::ListArray>(array, offset, n, out, column, path, lists);
    case arrow::Type::LARGE_LIST:
      return FillLists<arrow::LargeListArray>(array, offset, n, out, column, path, lists);
    case arrow::Type::FIXED_SIZE_LIST:
      return FillLists<arrow::FixedSizeListArray>(array, offset, n, out, column, path, lists);
    default:
      throw InputError("ParquetDataset: " + path + ": column '" + column + "' has type " +
                       array.type()->ToString() +
                       ", which the reader does not support (supported: bool, int8-64, "
                       "uint8-64, float, double, string, large_string, binary, dictionary "
                       "of those, and lists of them); convert the column");
  }
}

std::string StatusText(const arrow::Status& status) {
  return status.ToString();
}

class ParquetReader final : public TableReader {
 public:
  explicit ParquetReader(const std::string& path) : path_(path) {
    Open();
    const auto metadata = reader_->parquet_reader()->metadata();
    rows_ = metadata->num_rows();
    row_group_starts_.push_back(0);
    for (int g = 0; g < metadata->num_row_groups(); ++g) {
      row_group_starts_.push_back(row_group_starts_.back() + metadata->RowGroup(g)->num_rows());
    }
    for (const auto& field : reader_->manifest().schema_fields) {
      columns_.push_back(field.field->name());
      int leaf = field.column_index;  // -1 for nested columns
      if (leaf < 0 && IsList(field.field->type()->id()) && field.children.size() == 1 &&
          field.children[0].children.empty()) {
        leaf = field.children[0].column_index;  // list<scalar>: its one leaf
      }
      leaf_index_.push_back(leaf);
    }
  }

  void Release() override {
    table_.reset();
    reader_.reset();
  }

  const std::string& Path() const override { return path_; }
  std::int64_t NumRows() const override { return rows_; }
  const std::vector<std::string>& ColumnNames() const override { return columns_; }
  std::int64_t ChunkEnd(std::int64_t begin) const override {
    const auto g = RowGroupOf(begin);
    return row_group_starts_[g + 1];
  }

  ColumnBlock Read(std::int64_t begin, std::int64_t end, const std::vector<int>& columns) override {
    if (begin < 0 || end > rows_ || begin > end || (begin < end && end > ChunkEnd(begin))) {
      throw std::logic_error("ParquetDataset: row range out of bounds or across row groups");
    }
    ColumnBlock block;
    block.num_rows = end - begin;
    block.columns.resize(columns.size());
    if (begin == end) return block;
    const auto g = RowGroupOf(begin);
    if (!table_ || cached_group_ != g || cached_columns_ != columns) {
      if (!reader_) Open();
      std::vector<int> leaves;
      for (int c : columns) {
        const int leaf = leaf_index_[static_cast<std::size_t>(c)];
        if (leaf < 0) {
          throw InputError("ParquetDataset: " + path_ + ": column '" +
                           columns_[static_cast<std::size_t>(c)] +
                           "' is nested (struct, map or a list of lists), which the reader "
                           "does not support; store it as list<scalar> or as a string joined "
                           "by the feature separator");
        }
        leaves.push_back(leaf);
      }
      auto table = reader_->ReadRowGroup(static_cast<int>(g), leaves);
      if (!table.ok()) {
        throw InputError("ParquetDataset: reading row group " + std::to_string(g) + " of " + path_ +
                         " failed: " + StatusText(table.status()));
      }
      table_ = std::move(*table);
      cached_group_ = g;
      cached_columns_ = columns;
    }
    auto memory = std::make_shared<BlockMemory>();
    memory->table = table_;
    const std::int64_t local = begin - row_group_starts_[g];
    const std::int64_t n = end - begin;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      auto& cells = block.columns[c];
      cells.resize(static_cast<std::size_t>(n));
      const auto& chunked = table_->column(static_cast<int>(c));
      const std::string& name = columns_[static_cast<std::size_t>(columns[c])];
      std::int64_t chunk_start = 0;
      std::int64_t done = 0;
      for (const auto& chunk : chunked->chunks()) {
        const std::int64_t len = chunk->length();
        const std::int64_t lo = std::max(local + done, chunk_start);
        const std::int64_t hi = std::min(local + n, chunk_start + len);
        if (lo < hi) {
          AppendCells(*chunk, lo - chunk_start, hi - lo, cells.data() + (lo - local), name, path_,
                      &memory->lists);
          done = hi - local;
        }
        chunk_start += len;
        if (done == n) break;
      }
      if (done != n) {
        throw InputError("ParquetDataset: " + path_ + " row group " + std::to_string(g) +
                         " column '" + name + "' holds fewer rows than its metadata says");
      }
    }
    block.keep_alive = memory;
    return block;
  }

 private:
  void Open() {
    auto file = arrow::io::ReadableFile::Open(path_);
    if (!file.ok()) {
      throw InputError("ParquetDataset: cannot open " + path_ + ": " + StatusText(file.status()) +
                       "; check input_path");
    }
    auto reader = parquet::arrow::OpenFile(*file, arrow::system_memory_pool());
    if (!reader.ok()) {
      throw InputError(
          "ParquetDataset: " + path_ +
          " is not a readable Parquet file: " + StatusText(reader.status()) +
          "; for text files set data_config.dataset_type: CsvDataset (predict: --dataset_type "
          "CsvDataset)");
    }
    reader_ = std::move(*reader);
  }

  std::size_t RowGroupOf(std::int64_t row) const {
    const auto it = std::upper_bound(row_group_starts_.begin(), row_group_starts_.end(), row);
    const auto g = static_cast<std::size_t>(it - row_group_starts_.begin()) - 1;
    return std::min(g, row_group_starts_.size() - 2);
  }

  std::string path_;
  std::unique_ptr<parquet::arrow::FileReader> reader_;
  std::int64_t rows_ = 0;
  std::vector<std::int64_t> row_group_starts_;  // num_row_groups + 1
  std::vector<std::string> columns_;
  std::vector<int> leaf_index_;
  std::shared_ptr<arrow::Table> table_;
  std::size_t cached_group_ = 0;
  std::vector<int> cached_columns_;
};

}  // namespace

std::unique_ptr<TableReader> OpenParquet(const std::string& path) {
  return std::make_unique<ParquetReader>(path);
}

}  // namespace tzrec::input
