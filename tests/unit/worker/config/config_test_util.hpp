// Helpers shared by the tzrec::config unit tests.
#pragma once

#include <string>

#include "tzrec/config/config.hpp"

namespace tzrec::test {

// The message of the ConfigError that parsing `text` (with `edits`, --edit_config_json) raises;
// "" when it parses.
inline std::string ErrorOf(const std::string& text, const std::string& edits = "") {
  try {
    ParsePipelineConfig(text, edits, "test.config");
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

// A multi_tower pipeline with an id feature "u" and one more feature named "f", given as the
// text inside feature_configs { ... } (e.g. `lookup_feature { feature_name: "f" ... }`).
inline std::string OneFeatureConfig(const std::string& feature,
                                    const std::string& fg_mode = "FG_DAG") {
  return R"(
train_input_path: "t.parquet" eval_input_path: "e.parquet" model_dir: "m"
train_config {
  sparse_optimizer { adagrad_optimizer { lr: 0.01 } constant_learning_rate {} }
  dense_optimizer { adam_optimizer { lr: 0.001 } constant_learning_rate {} }
  num_steps: 10 }
data_config { batch_size: 8 dataset_type: ParquetDataset label_fields: "clk" fg_mode: )" +
         fg_mode + R"( }
feature_configs { id_feature { feature_name: "u" expression: "user:u" embedding_dim: 4
  hash_bucket_size: 10 } }
feature_configs { )" +
         feature + R"( }
model_config {
  feature_groups { group_name: "all" feature_names: ["u", "f"] group_type: DEEP }
  multi_tower { towers { input: "all" mlp { hidden_units: [8] } } final { hidden_units: [4] } }
  metrics { auc { thresholds: 0 } }
  losses { binary_cross_entropy {} }
}
)";
}

}  // namespace tzrec::test
