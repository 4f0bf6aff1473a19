// The output side of tzrec_train predict (internal to tzrec::train): the input columns copied
// through (--reserved_columns), read in input row order, and the CSV / Parquet writers of the
// predictions file. Reference: alibaba/TorchEasyRec tzrec/main.py `predict` / `_write_predictions`
// (output columns first, then the reserved columns; writer type from the dataset type) and
// tzrec/datasets/csv_dataset.py / parquet_dataset.py (their writers).
// Errors: InputError naming the file and the column (exit 2). Thread-safety: one thread each.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tzrec/config/config.hpp"

namespace tzrec {

// One output value.
struct OutValue {
  enum class Kind : std::uint8_t { kNull, kInt, kDouble, kFloat32, kString };
  Kind kind = Kind::kNull;
  std::int64_t i = 0;
  double d = 0;  // kDouble and kFloat32 (a float widened exactly)
  std::string s;
};

// Columns of one written batch: columns[c][r] (every column the same length).
using OutColumns = std::vector<std::vector<OutValue>>;

// A value as CSV text (RFC 4180 quoting when it holds ',', '"', '\r' or '\n'): ints in decimal,
// floats in their shortest round-trip form (float32 as a float), null as an empty field. Pure.
std::string CsvField(const OutValue& value);

enum class WriterKind { kCsv, kParquet };
// --writer_type "CsvWriter" | "ParquetWriter"; empty: the output path's extension (.parquet;
// .csv, .txt, .tsv), else the dataset_type's (ParquetDataset -> Parquet, otherwise CSV).
// Throws ConfigError for another writer_type. Pure.
WriterKind ChooseWriter(const std::string& writer_type, const std::string& output_path,
                        const PipelineConfig& config);

class PredictionWriter {
 public:
  virtual ~PredictionWriter() = default;
  // Appends one batch (columns in the order of `names`).
  virtual void Write(const OutColumns& columns) = 0;
  // Finishes the file (Parquet: the whole table is written here, one column type per column: all
  // float32 -> float, ints -> int64, ints and floats -> double, any text -> string).
  virtual void Close() = 0;
};
// Creates (truncates) `path`. CSV: a header line of `names`, then one line per row.
std::unique_ptr<PredictionWriter> OpenPredictionWriter(WriterKind kind, const std::string& path,
                                                       std::vector<std::string> names);

// Reads `columns` of the input (the files of input_path in the Dataset's order: sorted, each once;
// CsvDataset with the config's delimiter / header / input_fields, ParquetDataset) row by row.
class ReservedColumnReader {
 public:
  ReservedColumnReader(const PipelineConfig& config, const std::string& input_path,
                       std::vector<std::string> columns);
  ~ReservedColumnReader();
  ReservedColumnReader(const ReservedColumnReader&) = delete;
  ReservedColumnReader& operator=(const ReservedColumnReader&) = delete;
  // The next `rows` rows; throws InputError when the input has fewer left.
  OutColumns Next(std::int64_t rows);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// True when the first file of input_path has a column named `column`.
bool InputHasColumn(const PipelineConfig& config, const std::string& input_path,
                    const std::string& column);

}  // namespace tzrec
