// tools/bench/input/criteo_parquet.hpp — synthetic Criteo-layout Parquet (label, int_0..12 as
// float with 5% nulls, cat_0..25 as int64 ids < 1000; a fixed LCG, so the same file every time),
// and the Arrow C++ builders it is made with. Shared by tzrec_input_bench and the input unit tests
// (tests/unit/worker/input), header-only (INTERFACE target tzrec_bench_criteo_parquet).
#pragma once

#include <arrow/api.h>
#include <arrow/io/file.h>
#include <parquet/arrow/writer.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace tzrec::bench {

inline void Check(const arrow::Status& s) {
  if (!s.ok()) throw std::runtime_error(s.ToString());
}

inline std::shared_ptr<arrow::Array> Int64s(const std::vector<std::int64_t>& v) {
  arrow::Int64Builder b;
  Check(b.AppendValues(v));
  return b.Finish().ValueOrDie();
}

// `valid` empty: every value present; else valid[i] false makes row i null.
inline std::shared_ptr<arrow::Array> Doubles(const std::vector<double>& v,
                                             const std::vector<bool>& valid = {}) {
  arrow::DoubleBuilder b;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!valid.empty() && !valid[i]) {
      Check(b.AppendNull());
    } else {
      Check(b.Append(v[i]));
    }
  }
  return b.Finish().ValueOrDie();
}

// One Parquet file of `columns` named `names`, in row groups of `row_group_size` rows.
inline void WriteParquet(const std::string& path, const std::vector<std::string>& names,
                         const std::vector<std::shared_ptr<arrow::Array>>& columns,
                         std::int64_t row_group_size) {
  std::vector<std::shared_ptr<arrow::Field>> fields;
  for (std::size_t i = 0; i < names.size(); ++i) {
    fields.push_back(arrow::field(names[i], columns[i]->type()));
  }
  auto table = arrow::Table::Make(arrow::schema(fields), columns);
  auto out = arrow::io::FileOutputStream::Open(path).ValueOrDie();
  auto arrow_props = parquet::ArrowWriterProperties::Builder().store_schema()->build();
  Check(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), out, row_group_size,
                                   parquet::default_writer_properties(), arrow_props));
  Check(out->Close());
}

// Writes `rows` Criteo-layout rows to `path` in row groups of 65536; returns the label sum.
inline double WriteCriteoParquet(const std::string& path, std::int64_t rows) {
  std::vector<std::string> names = {"label"};
  std::vector<std::shared_ptr<arrow::Array>> columns;
  std::vector<std::int64_t> label(static_cast<std::size_t>(rows));
  std::uint64_t state = 7;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  double positives = 0;
  for (auto& l : label) {
    l = static_cast<std::int64_t>(next() % 4 == 0);
    positives += static_cast<double>(l);
  }
  columns.push_back(Int64s(label));
  for (int i = 0; i < 13; ++i) {
    std::vector<double> v(static_cast<std::size_t>(rows));
    std::vector<bool> valid(static_cast<std::size_t>(rows));
    for (std::size_t r = 0; r < v.size(); ++r) {
      v[r] = static_cast<double>(next() % 1000);
      valid[r] = next() % 20 != 0;
    }
    names.push_back("int_" + std::to_string(i));
    columns.push_back(Doubles(v, valid));
  }
  for (int i = 0; i < 26; ++i) {
    std::vector<std::int64_t> v(static_cast<std::size_t>(rows));
    for (auto& x : v) x = static_cast<std::int64_t>(next() % 1000);
    names.push_back("cat_" + std::to_string(i));
    columns.push_back(Int64s(v));
  }
  WriteParquet(path, names, columns, 65536);
  return positives;
}

}  // namespace tzrec::bench
