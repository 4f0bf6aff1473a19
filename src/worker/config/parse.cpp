// Reading a pipeline config: protobuf text or JSON into tzrec::protos::EasyRecConfig, unknown
// names classified (a left-out TorchEasyRec field or a typo), TorchEasyRec's edit_config_json
// applied, then validation (include/tzrec/config/config.hpp).

#include <cerrno>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <system_error>

#include "internal.hpp"
#include "protobuf.hpp"
#include "tzrec/config/config.hpp"

namespace tzrec {
namespace {

namespace pb = google::protobuf;
using Json = nlohmann::ordered_json;

// Keeps the first error protobuf's text parser reports (0-based line and column).
class FirstError : public pb::io::ErrorCollector {
 public:
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (!seen_) {
      seen_ = true;
      line_ = line;
      column_ = column;
      message_ = message;
    }
  }
  std::string Describe(const std::string& origin) const {
    const std::string where =
        origin + ":" + std::to_string(line_ + 1) + ":" + std::to_string(column_ + 1);
    static const std::regex kNoField(R"re(Message type "([^"]+)" has no field named "([^"]+)")re");
    std::smatch match;
    if (std::regex_search(message_, match, kNoField)) {
      const pb::Descriptor* type =
          pb::DescriptorPool::generated_pool()->FindMessageTypeByName(match[1].str());
      if (type != nullptr) {
        return config_internal::UnknownFieldMessage(*type, match[2].str(), where);
      }
    }
    return where + ": " + message_ + " (protobuf text format, TorchEasyRec's .config syntax)";
  }

 private:
  bool seen_ = false;
  int line_ = 0;
  int column_ = 0;
  std::string message_;
};

PipelineConfig ParseText(const std::string& text, const std::string& origin) {
  PipelineConfig config;
  FirstError errors;
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.AllowPartialMessage(true);  // required fields are checked by the validation
  if (!parser.ParseFromString(text, &config)) throw ConfigError(errors.Describe(origin));
  return config;
}

// Unknown keys of a JSON config, with their paths, before protobuf's JSON parser (which names
// neither the path nor TorchEasyRec's left-out fields).
void CheckJsonKeys(const Json& node, const pb::Descriptor& type, const std::string& path,
                   const std::string& origin) {
  if (!node.is_object()) return;  // protobuf's parser reports the type error
  for (const auto& item : node.items()) {
    const pb::FieldDescriptor* field = type.FindFieldByName(item.key());
    for (int i = 0; field == nullptr && i < type.field_count(); ++i) {
      if (type.field(i)->json_name() == item.key()) field = type.field(i);
    }
    const std::string here = config_internal::JoinPath(path, item.key());
    if (field == nullptr) {
      throw ConfigError(
          config_internal::UnknownFieldMessage(type, item.key(), origin + ": " + here));
    }
    if (field->type() != pb::FieldDescriptor::TYPE_MESSAGE) continue;
    if (field->is_repeated() && item.value().is_array()) {
      for (std::size_t i = 0; i < item.value().size(); ++i) {
        CheckJsonKeys(item.value()[i], *field->message_type(), here + "[" + std::to_string(i) + "]",
                      origin);
      }
    } else {
      CheckJsonKeys(item.value(), *field->message_type(), here, origin);
    }
  }
}

bool LooksLikeJson(const std::string& text) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string::npos && text[first] == '{';
}

}  // namespace

void config_internal::ParseJsonInto(const std::string& text, const std::string& origin,
                                    pb::Message* message) {
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::parse_error& error) {
    throw ConfigError(origin + ": not valid JSON (" + error.what() +
                      "); a .config file is protobuf text, a .json file protobuf JSON");
  }
  CheckJsonKeys(root, *message->GetDescriptor(), "", origin);
  static const std::unique_ptr<pb::util::TypeResolver> resolver(
      pb::util::NewTypeResolverForDescriptorPool("type.googleapis.com",
                                                 pb::DescriptorPool::generated_pool()));
  std::string binary;
  const auto status = pb::util::JsonToBinaryString(
      resolver.get(), "type.googleapis.com/" + message->GetDescriptor()->full_name(), text,
      &binary);
  if (!status.ok()) {
    throw ConfigError(origin + ": " + std::string(status.message()) + " (protobuf JSON)");
  }
  message->Clear();
  if (!message->ParsePartialFromString(binary)) {
    throw ConfigError(origin + ": protobuf could not read the JSON; check the value types");
  }
}

std::string config_internal::JoinPath(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

LoadedConfig ParsePipelineConfig(const std::string& text, const std::string& edit_config_json,
                                 const std::string& origin) {
  LoadedConfig loaded;
  if (LooksLikeJson(text)) {
    config_internal::ParseJsonInto(text, origin, &loaded.config);
  } else {
    loaded.config = ParseText(text, origin);
  }
  if (edit_config_json.find_first_not_of(" \t\r\n") != std::string::npos) {
    config_internal::ApplyEdits(&loaded.config, edit_config_json);
  }
  try {
    loaded.warnings = ValidatePipelineConfig(loaded.config);
  } catch (const ConfigError& error) {
    throw ConfigError(origin + ": " + error.what());
  }
  return loaded;
}

LoadedConfig LoadPipelineConfig(const std::string& path, const std::string& edit_config_json) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ConfigError("pipeline config '" + path + "': cannot open it (" +
                      std::make_error_code(static_cast<std::errc>(errno)).message() +
                      "); check --pipeline_config_path");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return ParsePipelineConfig(text.str(), edit_config_json, path);
}

std::vector<std::string> ValidatePipelineConfig(const PipelineConfig& config) {
  std::vector<std::string> warnings;
  config_internal::CollectWarnings(config, "", &warnings);
  config_internal::Validate(config);
  if (!RunsFeatureGeneration(config)) {
    for (int i = 0; i < config.feature_configs_size(); ++i) {
      if (config.feature_configs(i).raw_feature().normalizer().empty()) continue;
      warnings.push_back("feature_configs[" + std::to_string(i) +
                         "].raw_feature.normalizer: not applied with fg_mode FG_NONE (the input "
                         "is already feature-generated), as in TorchEasyRec");
    }
  }
  return warnings;
}

void ResolveInputs(PipelineConfig* config, std::vector<std::string>* warnings) {
  for (const std::string* path : {&config->train_input_path(), &config->eval_input_path()}) {
    if (path->rfind("odps://", 0) == 0) {
      throw ConfigError("input '" + *path +
                        "' is a MaxCompute (ODPS) table, which tzrec_train cannot read; export the "
                        "table to Parquet and pass --train_input_path / --eval_input_path");
    }
  }
  const protos::DatasetType type = config->data_config().dataset_type();
  if (type == protos::OdpsDataset || type == protos::OdpsDatasetV1) {
    config->mutable_data_config()->set_dataset_type(protos::ParquetDataset);
    warnings->push_back("data_config.dataset_type: " + protos::DatasetType_Name(type) +
                        " with local input paths; reading them as ParquetDataset (the table "
                        "exported to Parquet has the same columns)");
  }
}

std::string ToText(const PipelineConfig& config) {
  std::string text;
  pb::TextFormat::Printer printer;
  printer.PrintToString(config, &text);
  return text;
}

}  // namespace tzrec
