// Helpers shared by the Dataset tests (dataset_text_test.cpp, dataset_parquet_test.cpp): a
// temporary folder per test, text and Parquet writers (Arrow C++), feature configs, the CSV and
// Parquet pipeline configs, and tensor/batch readers.
#pragma once

#include <ATen/core/Tensor.h>
#include <arrow/api.h>
#include <arrow/io/file.h>
#include <gtest/gtest.h>
#include <parquet/arrow/writer.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cell.hpp"
#include "criteo_parquet.hpp"
#include "tzrec/input/input.hpp"

namespace tzrec::input_test {

namespace fs = std::filesystem;
using input::Fnv1a64;

// A fresh folder per test under the temp dir.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() / ("tzrec_input_" + std::to_string(::getpid()) + "_" +
                                         info->test_suite_name() + "_" + info->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

inline void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

using bench::Check;
using bench::Doubles;
using bench::Int64s;
using bench::WriteParquet;

template <typename Builder>
std::shared_ptr<arrow::Array> Strings(const std::vector<std::string>& v) {
  Builder b;
  for (const auto& s : v) {
    if (s == "<null>") {
      Check(b.AppendNull());
    } else {
      Check(b.Append(s));
    }
  }
  return b.Finish().ValueOrDie();
}

// An id feature `name` reading `column` (expression "user:<column>"), embedding_dim 4; the
// separator keeps its default "\x1d", so a cell without it is one value.
inline protos::FeatureConfig Id(const std::string& name, const std::string& column) {
  protos::FeatureConfig fc;
  auto* id = fc.mutable_id_feature();
  id->set_feature_name(name);
  id->set_expression("user:" + column);
  id->set_embedding_dim(4);
  return fc;
}

// A dense raw feature `name` reading `column` (expression = column), value_dim 1.
inline protos::FeatureConfig Raw(const std::string& name, const std::string& column) {
  protos::FeatureConfig fc;
  auto* raw = fc.mutable_raw_feature();
  raw->set_feature_name(name);
  raw->set_expression(column);
  return fc;
}

// A config with feature generation (fg_mode FG_DAG: features read their expression's column and
// are hashed / bucketed / normalised), label column "label", a header line (CsvDataset) and one
// reader thread; no features.
inline PipelineConfig FgConfig(protos::DatasetType type) {
  PipelineConfig c;
  auto* data = c.mutable_data_config();
  data->set_dataset_type(type);
  data->set_fg_mode(protos::FG_DAG);
  data->set_with_header(true);
  data->set_num_workers(1);
  data->add_label_fields("label");
  return c;
}

inline std::vector<std::int64_t> Longs(const at::Tensor& t) {
  auto c = t.contiguous();
  return std::vector<std::int64_t>(c.data_ptr<std::int64_t>(),
                                   c.data_ptr<std::int64_t>() + c.numel());
}

inline std::vector<float> Floats(const at::Tensor& t) {
  auto c = t.contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

inline std::int64_t H(const std::string& s, std::int64_t n) {
  return static_cast<std::int64_t>(Fnv1a64(s) % static_cast<std::uint64_t>(n));
}

inline std::string ErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// All batches of a dataset.
inline std::vector<Batch> ReadAll(Dataset& ds) {
  std::vector<Batch> out;
  while (auto b = ds.Next()) out.push_back(std::move(*b));
  return out;
}

// The ids of feature `key` of all batches, in order (one id per row for single-valued features).
inline std::vector<std::int64_t> IdsOf(const std::vector<Batch>& batches, const std::string& key) {
  std::vector<std::int64_t> out;
  for (const auto& b : batches) {
    const auto v = Longs(b.sparse[key].values);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

// label, user (num_buckets 10), price (dense, default 1), title (hash 100), tags (hash 50, '|').
inline PipelineConfig CsvConfig() {
  PipelineConfig c = FgConfig(protos::CsvDataset);
  auto user = Id("user", "user");
  user.mutable_id_feature()->set_num_buckets(10);
  auto title = Id("title", "title");
  title.mutable_id_feature()->set_hash_bucket_size(100);
  auto tags = Id("tags", "tags");
  tags.mutable_id_feature()->set_hash_bucket_size(50);
  tags.mutable_id_feature()->set_separator("|");
  auto price = Raw("price", "price");
  price.mutable_raw_feature()->set_default_value("1");
  for (const auto& f : {user, price, title, tags}) *c.add_feature_configs() = f;
  return c;
}

// The columns of WriteTypedParquet: rid (num_buckets 1000), s / ls (hash 1000), f (dense,
// default -1), d (vocab x, y).
inline PipelineConfig ParquetConfig() {
  PipelineConfig c = FgConfig(protos::ParquetDataset);
  auto id = Id("rid", "rid");
  id.mutable_id_feature()->set_num_buckets(1000);
  auto s = Id("s", "s");
  s.mutable_id_feature()->set_hash_bucket_size(1000);
  auto ls = Id("ls", "ls");
  ls.mutable_id_feature()->set_hash_bucket_size(1000);
  auto d = Id("d", "d");
  d.mutable_id_feature()->add_vocab_list("x");
  d.mutable_id_feature()->add_vocab_list("y");
  auto f = Raw("f", "f");
  f.mutable_raw_feature()->set_default_value("-1");
  for (const auto& fc : {id, s, f, ls, d}) *c.add_feature_configs() = fc;
  return c;
}

inline void WriteTypedParquet(const std::string& path, std::int64_t first, std::int64_t n,
                              std::int64_t row_group_size) {
  std::vector<std::int64_t> rid;
  std::vector<double> label, f;
  std::vector<bool> valid;
  std::vector<std::string> s, ls;
  arrow::StringDictionaryBuilder db;
  for (std::int64_t i = first; i < first + n; ++i) {
    rid.push_back(i);
    label.push_back(static_cast<double>(i % 2));
    f.push_back(static_cast<double>(i) / 4);
    valid.push_back(i % 3 != 0);
    s.push_back(i % 5 == 4 ? "<null>" : "s" + std::to_string(i));
    ls.push_back(std::to_string(i * 10));
    if (i % 4 == 3) {
      Check(db.AppendNull());
    } else {
      Check(db.Append(i % 4 == 0 ? "x" : (i % 4 == 1 ? "y" : "z")));
    }
  }
  WriteParquet(path, {"rid", "label", "f", "s", "ls", "d"},
               {Int64s(rid), Doubles(label), Doubles(f, valid), Strings<arrow::StringBuilder>(s),
                Strings<arrow::LargeStringBuilder>(ls), db.Finish().ValueOrDie()},
               row_group_size);
}

}  // namespace tzrec::input_test
