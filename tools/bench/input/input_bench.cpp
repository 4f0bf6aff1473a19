// tzrec_input_bench: the Dataset read rate on the Criteo layout (label, 13 float dense with 5%
// nulls and log1p, 26 int64 ids hashed into 100000 buckets), every row read once at world 2
// (rank 0 then rank 1, batch 4096), as tzrec_train's input would.
//
//   tzrec_input_bench [--rows N] [PATH...]
//
// Without PATH it writes N rows (default 200000, row groups of 65536) to a temp Parquet file with
// Arrow C++ and checks the label sum; with PATH (files, globs or comma lists, e.g. tools/gen_data
// output) it reads those. Prints "criteo layout: R rows (label sum S) in T s = X rows/s".
#include <ATen/ATen.h>
#include <arrow/api.h>
#include <arrow/io/file.h>
#include <parquet/arrow/writer.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tzrec/input/input.hpp"

namespace {

namespace fs = std::filesystem;

void Check(const arrow::Status& s) {
  if (!s.ok()) throw std::runtime_error(s.ToString());
}

std::shared_ptr<arrow::Array> Int64s(const std::vector<std::int64_t>& v) {
  arrow::Int64Builder b;
  Check(b.AppendValues(v));
  return b.Finish().ValueOrDie();
}

std::shared_ptr<arrow::Array> Doubles(const std::vector<double>& v,
                                      const std::vector<bool>& valid) {
  arrow::DoubleBuilder b;
  for (std::size_t i = 0; i < v.size(); ++i) Check(valid[i] ? b.Append(v[i]) : b.AppendNull());
  return b.Finish().ValueOrDie();
}

// Writes `rows` Criteo-layout rows to `path`; returns the label sum.
double WriteCriteo(const std::string& path, std::int64_t rows) {
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
  std::vector<std::shared_ptr<arrow::Field>> fields;
  for (std::size_t i = 0; i < names.size(); ++i) {
    fields.push_back(arrow::field(names[i], columns[i]->type()));
  }
  auto table = arrow::Table::Make(arrow::schema(fields), columns);
  auto out = arrow::io::FileOutputStream::Open(path).ValueOrDie();
  auto arrow_props = parquet::ArrowWriterProperties::Builder().store_schema()->build();
  Check(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), out, 65536,
                                   parquet::default_writer_properties(), arrow_props));
  Check(out->Close());
  return positives;
}

tzrec::PipelineConfig CriteoConfig() {
  tzrec::PipelineConfig c;
  c.data_config.label_fields = {"label"};
  for (int i = 0; i < 13; ++i) {
    tzrec::FeatureConfig f;
    f.kind = tzrec::FeatureKind::kRaw;
    f.feature_name = "int_" + std::to_string(i);
    f.expression = f.feature_name;
    f.normalizer = "method=log1p";
    c.feature_configs.push_back(f);
  }
  for (int i = 0; i < 26; ++i) {
    tzrec::FeatureConfig f;
    f.kind = tzrec::FeatureKind::kId;
    f.feature_name = "cat_" + std::to_string(i);
    f.expression = "user:" + f.feature_name;
    f.embedding_dim = 4;
    f.hash_bucket_size = 100000;
    c.feature_configs.push_back(f);
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t rows = 200000;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--rows" && i + 1 < argc) {
      rows = std::stoll(argv[++i]);
    } else if (arg == "--help" || arg == "-h") {
      std::cout << "usage: tzrec_input_bench [--rows N] [PATH...]\n";
      return 0;
    } else {
      path += (path.empty() ? "" : ",") + arg;
    }
  }
  try {
    fs::path tmp;
    double expect_positives = -1;
    if (path.empty()) {
      tmp = fs::temp_directory_path() / ("tzrec_input_bench_" + std::to_string(::getpid()));
      fs::create_directories(tmp);
      path = (tmp / "criteo.parquet").string();
      expect_positives = WriteCriteo(path, rows);
    }
    const tzrec::PipelineConfig c = CriteoConfig();
    const auto start = std::chrono::steady_clock::now();
    std::int64_t read = 0;
    double positives = 0;
    for (int rank = 0; rank < 2; ++rank) {
      tzrec::Dataset ds(c, path, rank, 2, 4096);
      while (auto b = ds.Next()) {
        read += b->size;
        positives += b->labels.sum().item<double>();
      }
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!tmp.empty()) fs::remove_all(tmp);
    std::printf("criteo layout: %lld rows (label sum %.0f) in %.3f s = %.0f rows/s\n",
                static_cast<long long>(read), positives, secs, static_cast<double>(read) / secs);
    if (expect_positives >= 0 && (read != rows || positives != expect_positives)) {
      std::cerr << "tzrec_input_bench: read " << read << " rows (label sum " << positives
                << ") but wrote " << rows << " (label sum " << expect_positives << ")\n";
      return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "tzrec_input_bench: " << e.what() << '\n';
    return 2;
  }
  return 0;
}
