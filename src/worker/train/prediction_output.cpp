// Reserved columns and the predictions writers of tzrec_train predict
// (src/worker/train/prediction_output.hpp).
#include "prediction_output.hpp"

#include <arrow/api.h>
#include <arrow/io/file.h>
#include <parquet/arrow/writer.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>

#include "reader.hpp"  // tzrec::input's file readers (src/worker/input/reader.hpp)
#include "tzrec/error.hpp"
#include "tzrun/base/strings.hpp"

namespace tzrec {
namespace {

namespace fs = std::filesystem;

template <typename T>
std::string ShortestText(T v) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, res.ptr);
}

bool IsParquet(const PipelineConfig& config) {
  return config.data_config().dataset_type() == protos::ParquetDataset;
}

// data_config.delimiter as the CSV reader takes it (as src/worker/input/dataset.cpp reads it).
char Delimiter(const std::string& delimiter) {
  if (delimiter.size() == 1) return delimiter[0];
  if (delimiter == "\\t" || delimiter == "tab" || delimiter == "TAB") return '\t';
  throw InputError("data_config.delimiter \"" + delimiter + "\" must be one character or \\t");
}

std::unique_ptr<input::TableReader> OpenInput(const PipelineConfig& config,
                                              const std::string& path) {
  if (IsParquet(config)) return input::OpenParquet(path);
  input::CsvOptions csv;
  const auto& data = config.data_config();
  csv.delimiter = Delimiter(data.delimiter());
  csv.with_header = data.with_header();
  for (const auto& field : data.input_fields()) csv.input_fields.push_back(field.input_name());
  return input::OpenCsv(path, csv);
}

OutValue FromCell(const input::Cell& cell) {
  OutValue v;
  switch (cell.kind) {
    case input::Cell::Kind::kNull:
      break;
    case input::Cell::Kind::kInt:
      v.kind = OutValue::Kind::kInt;
      v.i = cell.i;
      break;
    case input::Cell::Kind::kFloat:
      v.kind = OutValue::Kind::kDouble;
      v.d = cell.d;
      break;
    case input::Cell::Kind::kString:
      v.kind = OutValue::Kind::kString;
      v.s = std::string(cell.s);
      break;
    case input::Cell::Kind::kList: {  // a Parquet list column: its items joined by ','
      std::string buffer;
      v.kind = OutValue::Kind::kString;
      v.s = std::string(input::CellText(cell, &buffer));
      break;
    }
  }
  return v;
}

class CsvWriter : public PredictionWriter {
 public:
  CsvWriter(const std::string& path, const std::vector<std::string>& names)
      : path_(path), out_(path, std::ios::trunc) {
    if (!out_) throw InputError("cannot create --predict_output_path '" + path + "'");
    std::vector<std::string> header;
    for (const auto& n : names) header.push_back(CsvField({OutValue::Kind::kString, 0, 0, n}));
    out_ << tzrun::base::Join(header, ",") << '\n';
  }
  void Write(const OutColumns& columns) override {
    const std::size_t rows = columns.empty() ? 0 : columns[0].size();
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < columns.size(); ++c) {
        if (c > 0) out_ << ',';
        out_ << CsvField(columns[c][r]);
      }
      out_ << '\n';
    }
  }
  void Close() override {
    out_.close();
    if (!out_) throw InputError("could not write --predict_output_path '" + path_ + "'");
  }

 private:
  std::string path_;
  std::ofstream out_;
};

// The Arrow type of a column of these values (see PredictionWriter::Close).
std::shared_ptr<arrow::DataType> ColumnType(const std::vector<OutValue>& values) {
  bool all_float32 = true, any_string = false, any_double = false;
  for (const auto& v : values) {
    if (v.kind == OutValue::Kind::kNull) continue;
    all_float32 = all_float32 && v.kind == OutValue::Kind::kFloat32;
    any_string = any_string || v.kind == OutValue::Kind::kString;
    any_double = any_double || v.kind == OutValue::Kind::kDouble;
  }
  if (any_string) return arrow::utf8();
  if (all_float32) return arrow::float32();
  return any_double ? arrow::float64() : arrow::int64();
}

void Check(const arrow::Status& status, const std::string& path) {
  if (!status.ok()) {
    throw InputError("could not write Parquet --predict_output_path '" + path +
                     "': " + status.ToString());
  }
}

template <typename Builder, typename Get>
std::shared_ptr<arrow::Array> Build(const std::vector<OutValue>& values, const std::string& path,
                                    Get get) {
  Builder b;
  for (const auto& v : values) {
    Check(v.kind == OutValue::Kind::kNull ? b.AppendNull() : b.Append(get(v)), path);
  }
  std::shared_ptr<arrow::Array> array;
  Check(b.Finish(&array), path);
  return array;
}

class ParquetWriter : public PredictionWriter {
 public:
  ParquetWriter(std::string path, std::vector<std::string> names)
      : path_(std::move(path)), names_(std::move(names)), columns_(names_.size()) {}
  void Write(const OutColumns& columns) override {
    for (std::size_t c = 0; c < columns.size(); ++c) {
      columns_[c].insert(columns_[c].end(), columns[c].begin(), columns[c].end());
    }
  }
  void Close() override {
    std::vector<std::shared_ptr<arrow::Field>> fields;
    std::vector<std::shared_ptr<arrow::Array>> arrays;
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      const auto type = ColumnType(columns_[c]);
      fields.push_back(arrow::field(names_[c], type));
      arrays.push_back(BuildColumn(columns_[c], type));
    }
    const auto table = arrow::Table::Make(arrow::schema(fields), arrays);
    auto file = arrow::io::FileOutputStream::Open(path_);
    Check(file.status(), path_);
    Check(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), *file, 64 * 1024),
          path_);
    Check((*file)->Close(), path_);
  }

 private:
  std::shared_ptr<arrow::Array> BuildColumn(const std::vector<OutValue>& values,
                                            const std::shared_ptr<arrow::DataType>& type) const {
    if (type->id() == arrow::Type::STRING) {
      return Build<arrow::StringBuilder>(values, path_, [](const OutValue& v) {
        return v.kind == OutValue::Kind::kString ? v.s : CsvField(v);
      });
    }
    if (type->id() == arrow::Type::FLOAT) {
      return Build<arrow::FloatBuilder>(values, path_,
                                        [](const OutValue& v) { return static_cast<float>(v.d); });
    }
    if (type->id() == arrow::Type::DOUBLE) {
      return Build<arrow::DoubleBuilder>(values, path_, [](const OutValue& v) {
        return v.kind == OutValue::Kind::kInt ? static_cast<double>(v.i) : v.d;
      });
    }
    return Build<arrow::Int64Builder>(values, path_, [](const OutValue& v) { return v.i; });
  }

  std::string path_;
  std::vector<std::string> names_;
  std::vector<std::vector<OutValue>> columns_;
};

}  // namespace

std::string CsvField(const OutValue& value) {
  std::string text;
  switch (value.kind) {
    case OutValue::Kind::kNull:
      return "";
    case OutValue::Kind::kInt:
      return std::to_string(value.i);
    case OutValue::Kind::kDouble:
      return ShortestText(value.d);
    case OutValue::Kind::kFloat32:
      return ShortestText(static_cast<float>(value.d));
    case OutValue::Kind::kString:
      text = value.s;
      break;
  }
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

WriterKind ChooseWriter(const std::string& writer_type, const std::string& output_path,
                        const PipelineConfig& config) {
  if (writer_type == "CsvWriter") return WriterKind::kCsv;
  if (writer_type == "ParquetWriter") return WriterKind::kParquet;
  if (!writer_type.empty()) {
    throw ConfigError("--writer_type '" + writer_type +
                      "': tzrec_train writes local files with CsvWriter or ParquetWriter");
  }
  const std::string ext = tzrun::base::Lower(fs::path(output_path).extension().string());
  if (ext == ".parquet") return WriterKind::kParquet;
  if (ext == ".csv" || ext == ".txt" || ext == ".tsv") return WriterKind::kCsv;
  return IsParquet(config) ? WriterKind::kParquet : WriterKind::kCsv;
}

std::unique_ptr<PredictionWriter> OpenPredictionWriter(WriterKind kind, const std::string& path,
                                                       std::vector<std::string> names) {
  if (kind == WriterKind::kCsv) return std::make_unique<CsvWriter>(path, names);
  return std::make_unique<ParquetWriter>(path, std::move(names));
}

struct ReservedColumnReader::Impl {
  PipelineConfig config;
  std::vector<std::string> columns;
  std::vector<std::string> files;
  std::size_t file = 0;  // index into files of `reader`
  std::unique_ptr<input::TableReader> reader;
  std::vector<int> indices;  // of `columns` in reader
  std::int64_t row = 0;      // next row of `reader`

  void Open() {
    reader = OpenInput(config, files[file]);
    row = 0;
    indices.clear();
    const auto& names = reader->ColumnNames();
    for (const auto& c : columns) {
      const auto it = std::find(names.begin(), names.end(), c);
      if (it == names.end()) {
        const std::string known =
            names.empty()
                ? "; the file has no column names (a CSV read with data_config.with_header "
                  "false and no input_fields): for a header line pass --edit_config_json "
                  "'{\"data_config.with_header\": true}'"
                : "; its columns are " + tzrun::base::QuotedList(names, 20, "columns");
        throw InputError("--reserved_columns: column '" + c + "' is not in " + files[file] + known);
      }
      indices.push_back(static_cast<int>(it - names.begin()));
    }
  }
};

ReservedColumnReader::ReservedColumnReader(const PipelineConfig& config,
                                           const std::string& input_path,
                                           std::vector<std::string> columns)
    : impl_(std::make_unique<Impl>()) {
  impl_->config = config;
  impl_->columns = std::move(columns);
  try {
    impl_->files = input::ExpandInputPath(input_path);
  } catch (const std::runtime_error& e) {
    throw InputError(e.what());
  }
  if (!impl_->columns.empty() && !impl_->files.empty()) impl_->Open();
}

ReservedColumnReader::~ReservedColumnReader() = default;

OutColumns ReservedColumnReader::Next(std::int64_t rows) {
  Impl& m = *impl_;
  OutColumns out(m.columns.size());
  if (m.columns.empty()) return out;
  while (rows > 0) {
    if (m.row >= m.reader->NumRows()) {
      if (++m.file >= m.files.size()) {
        throw InputError("--reserved_columns: the input has fewer rows than were scored");
      }
      m.Open();
      continue;
    }
    const std::int64_t end = std::min(m.reader->ChunkEnd(m.row), m.row + rows);
    const input::ColumnBlock block = m.reader->Read(m.row, end, m.indices);
    for (std::size_t c = 0; c < block.columns.size(); ++c) {
      for (const auto& cell : block.columns[c]) out[c].push_back(FromCell(cell));
    }
    rows -= end - m.row;
    m.row = end;
  }
  return out;
}

bool InputHasColumn(const PipelineConfig& config, const std::string& input_path,
                    const std::string& column) {
  std::vector<std::string> files;
  try {
    files = input::ExpandInputPath(input_path);
  } catch (const std::runtime_error& e) {
    throw InputError(e.what());
  }
  if (files.empty()) return false;
  const auto reader = OpenInput(config, files[0]);
  const auto& names = reader->ColumnNames();
  return std::find(names.begin(), names.end(), column) != names.end();
}

}  // namespace tzrec
