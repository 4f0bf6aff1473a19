// The model's checkpoint state and the fine_tune_checkpoint path (train_common.hpp,
// include/tzrec/train/train.hpp): the views of a rank's tensors that CheckpointManager saves and
// restores into, and TorchEasyRec's checkpoint path rule (tzrec/utils/checkpoint_util.py
// `latest_checkpoint`: a path naming model.ckpt-N is used as is, else the newest under it).
#include <filesystem>
#include <utility>

#include "train_common.hpp"
#include "tzrec/train/train.hpp"

namespace tzrec {

namespace fs = std::filesystem;

TrainState ModelState(ShardedEmbeddingBagCollection& ebc,
                      const std::vector<EmbeddingBagConfig>& tables, const DenseModel& dense) {
  TrainState st;
  for (auto& s : ebc.LocalShards()) {
    ShardState ss;
    ss.table = s.table;
    for (const auto& t : tables) {
      if (t.name == s.table) {
        ss.table_rows = t.num_embeddings;
        ss.table_cols = t.embedding_dim;
      }
    }
    ss.shard = s.shard;
    ss.weight = s.weight;
    for (auto& [name, tensor] : s.state->StateTensors()) ss.optimizer.push_back({name, tensor});
    st.shards.push_back(std::move(ss));
  }
  for (const auto& p : dense.Parameters()) st.dense.push_back({p.name, p.tensor});
  for (const auto& p : dense.Buffers()) st.dense.push_back({p.name, p.tensor});
  return st;
}

void LoadShardOptimizerStates(ShardedEmbeddingBagCollection& ebc, const TrainState& state) {
  auto shards = ebc.LocalShards();
  for (std::size_t i = 0; i < shards.size() && i < state.shards.size(); ++i) {
    std::vector<std::pair<std::string, at::Tensor>> states;
    for (const auto& nt : state.shards[i].optimizer) states.emplace_back(nt.name, nt.tensor);
    shards[i].state->LoadStateTensors(states);
  }
}

std::string ResolveFineTuneCheckpoint(const std::string& path, std::shared_ptr<Comm> comm) {
  const fs::path p(path);
  const std::string last =
      p.filename().empty() ? p.parent_path().filename().string() : p.filename().string();
  if (last.find("model.ckpt-") != std::string::npos) {
    if (!fs::exists(p / "metadata.json")) {
      throw ConfigError("fine_tune_checkpoint '" + path +
                        "' is not a complete checkpoint (no metadata.json); pass a model.ckpt-N "
                        "directory written by tzrec_train, or its model_dir for the newest one");
    }
    return path;
  }
  if (!fs::is_directory(p)) {
    throw ConfigError("fine_tune_checkpoint '" + path +
                      "' does not exist; pass a model.ckpt-N directory or a model_dir");
  }
  const std::optional<std::string> latest = CheckpointManager(path, 0, std::move(comm)).Latest();
  if (!latest) {
    throw ConfigError("fine_tune_checkpoint '" + path +
                      "' holds no valid model.ckpt-N checkpoint; train there first or pass a "
                      "model.ckpt-N directory");
  }
  return *latest;
}

}  // namespace tzrec
