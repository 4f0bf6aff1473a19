// Helpers shared by the Dataset tests (dataset_text_test.cpp, dataset_parquet_test.cpp): a
// temporary folder per test, text and Parquet writers (Arrow C++), feature configs, the CSV and
// Parquet pipeline configs, and tensor/batch readers.
#pragma once

#include <ATen/ATen.h>
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

inline FeatureConfig Id(const std::string& name, const std::string& column) {
  FeatureConfig fc;
  fc.kind = FeatureKind::kId;
  fc.feature_name = name;
  fc.expression = "user:" + column;
  fc.embedding_dim = 4;
  return fc;
}

inline FeatureConfig Raw(const std::string& name, const std::string& column) {
  FeatureConfig fc;
  fc.kind = FeatureKind::kRaw;
  fc.feature_name = name;
  fc.expression = column;
  return fc;
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

inline PipelineConfig CsvConfig() {
  PipelineConfig c;
  c.data_config.dataset_type = "CsvDataset";
  c.data_config.label_fields = {"label"};
  auto user = Id("user", "user");
  user.num_buckets = 10;
  auto title = Id("title", "title");
  title.hash_bucket_size = 100;
  auto tags = Id("tags", "tags");
  tags.hash_bucket_size = 50;
  tags.separator = "|";
  auto price = Raw("price", "price");
  price.default_value = 1;
  c.feature_configs = {user, price, title, tags};
  return c;
}

inline PipelineConfig ParquetConfig() {
  PipelineConfig c;
  c.data_config.label_fields = {"label"};
  auto id = Id("rid", "rid");
  id.num_buckets = 1000;
  auto s = Id("s", "s");
  s.hash_bucket_size = 1000;
  auto ls = Id("ls", "ls");
  ls.hash_bucket_size = 1000;
  auto d = Id("d", "d");
  d.vocab_list = {"x", "y"};
  auto f = Raw("f", "f");
  f.default_value = -1;
  c.feature_configs = {id, s, f, ls, d};
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
