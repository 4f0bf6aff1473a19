// tzrec_input_bench: the Dataset read rate on the Criteo layout (label, 13 float dense with 5%
// nulls and log1p, 26 int64 ids hashed into 100000 buckets), every row read once at world 2
// (rank 0 then rank 1, batch 4096), as tzrec_train's input would.
//
//   tzrec_input_bench [--rows N] [PATH...]
//
// Without PATH it writes N rows (default 200000, row groups of 65536) to a temp Parquet file with
// Arrow C++ and checks the label sum; with PATH (files, globs or comma lists, e.g. tools/gen_data
// output) it reads those. Prints "criteo layout: R rows (label sum S) in T s = X rows/s".
#include <ATen/core/Tensor.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "criteo_parquet.hpp"
#include "tzrec/input/input.hpp"

namespace {

namespace fs = std::filesystem;

using tzrec::bench::WriteCriteoParquet;

// ParquetDataset with feature generation (fg_mode FG_DAG: ids hashed, dense values normalised),
// one reader thread per rank.
tzrec::PipelineConfig CriteoConfig() {
  tzrec::PipelineConfig c;
  auto* data = c.mutable_data_config();
  data->set_dataset_type(tzrec::protos::ParquetDataset);
  data->set_fg_mode(tzrec::protos::FG_DAG);
  data->set_num_workers(1);
  data->add_label_fields("label");
  for (int i = 0; i < 13; ++i) {
    auto* raw = c.add_feature_configs()->mutable_raw_feature();
    raw->set_feature_name("int_" + std::to_string(i));
    raw->set_expression(raw->feature_name());
    raw->set_normalizer("method=log1p");
  }
  for (int i = 0; i < 26; ++i) {
    auto* id = c.add_feature_configs()->mutable_id_feature();
    id->set_feature_name("cat_" + std::to_string(i));
    id->set_expression("user:" + id->feature_name());
    id->set_embedding_dim(4);
    id->set_hash_bucket_size(100000);
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
      expect_positives = WriteCriteoParquet(path, rows);
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
