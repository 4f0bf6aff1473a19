// Internal pieces of tzrec::config shared by its units (parse, support, validate, reference).
#pragma once

#include <string>
#include <vector>

#include "protobuf.hpp"
#include "tzrec/config/config.hpp"

namespace tzrec::config_internal {

// A TorchEasyRec field that our .proto files leave out: refused with `hint`.
struct TorchEasyRecField {
  const char* message;  // full name of the enclosing message, e.g. "tzrec.protos.ModelConfig"
  const char* field;    // e.g. "dssm"
  const char* hint;     // what it is and the nearest supported alternative
};
// Every left-out TorchEasyRec field of the messages we model
// (src/worker/config/torcheasyrec_fields.cpp).
const std::vector<TorchEasyRecField>& TorchEasyRecFields();
// The entry for (message, field), or nullptr when TorchEasyRec has no such field either.
const TorchEasyRecField* FindTorchEasyRecField(const std::string& message,
                                               const std::string& field);
// The error message for a name that `message` does not have: a left-out TorchEasyRec field
// ("... is a TorchEasyRec option that tzrec_train does not support: <hint>") or an unknown name
// ("unknown field; did you mean 'x'?"). `where` says where it was found (a path or a position).
std::string UnknownFieldMessage(const google::protobuf::Descriptor& message,
                                const std::string& field, const std::string& where);

// What tzrec_train does with each field of our .proto files (src/worker/config/support.cpp).
enum class Support {
  kHonoured,  // changes what is trained / read / written as documented
  kNoEffect,  // cannot change the trained model here: accepted with a one-line warning when set
};
struct FieldSupport {
  const char* field;  // full name, e.g. "tzrec.protos.TrainConfig.use_tensorboard"
  Support support;
  const char* doc;   // what tzrec_train does with it
  const char* test;  // the test that shows its effect (a test name found under tests/)
};
const std::vector<FieldSupport>& SupportTable();
// The rows of combo_feature / lookup_feature / match_feature / expr_feature (support_kv.cpp), part
// of SupportTable().
const std::vector<FieldSupport>& KvSupportRows();
// The rows of the sequence encoders (support_sequence.cpp), part of SupportTable().
const std::vector<FieldSupport>& SequenceSupportRows();
const FieldSupport* FindSupport(const std::string& full_name);

// Walks every set field of `message` (recursively), appending a warning for each kNoEffect field
// and throwing ConfigError for a field that the support table does not know (a bug: the
// completeness test keeps the table in step with the .proto files).
void CollectWarnings(const google::protobuf::Message& message, const std::string& path,
                     std::vector<std::string>* warnings);

// Dotted path helpers: "a.b", "a[3].b".
std::string JoinPath(const std::string& path, const std::string& key);

// Parses protobuf JSON into *message (cleared first); unknown names get UnknownFieldMessage.
void ParseJsonInto(const std::string& text, const std::string& origin,
                   google::protobuf::Message* message);

// Applies TorchEasyRec's edit_config_json to `config` (in place).
void ApplyEdits(google::protobuf::Message* config, const std::string& edit_config_json);

// Replaces each grouped sequence_feature of feature_configs by its sub-features as
// sequence_id_feature / sequence_raw_feature "<sequence_name>__<feature_name>"
// (expand_sequences.cpp; after the edits, before validation). Throws ConfigError naming a
// sub-feature field it cannot carry; appends the no-effect warning of sequence_pk.
void ExpandGroupedSequences(PipelineConfig* config, std::vector<std::string>* warnings);

// Reads the vocab_file of every id_feature into its vocab_dict and clears vocab_file
// (vocab.cpp; after the edits, before validation), so that the config rank 0 writes carries the
// vocabulary. The path is used as written (relative to the working directory, as TorchEasyRec).
// Throws ConfigError naming the feature and the file: default_bucketize_value unset (TorchEasyRec
// requires it), another table size also set, an unreadable or malformed file.
void LoadVocabFiles(PipelineConfig* config);

// The validation of the message values (src/worker/config/validate.cpp).
void Validate(const google::protobuf::Message& config);

}  // namespace tzrec::config_internal
