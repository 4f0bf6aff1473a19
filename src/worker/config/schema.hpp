// Internal: the single table-driven schema of the pipeline config. One FieldSpec per key (JSON
// name, type, default, doc); the parser (unknown keys, types, defaults, oneofs), the
// edit_config_json overrides and ConfigReferenceMarkdown all walk these tables.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tzrun/base/strings.hpp"

namespace tzrec::config_schema {

using Json = nlohmann::ordered_json;

enum class FieldType {
  kInt,   // int64 (a JSON integer, an integral number, or a decimal string as protobuf-JSON allows)
  kUInt,  // uint64
  kDouble,       // number (or a numeric string)
  kDoubleOrInf,  // number or "inf" / "Infinity" (stored as the string "inf")
  kBool,         // true / false (or "true" / "false")
  kString,
  kStringList,
  kIntList,
  kDoubleList,
  kMessage,
  kMessageList,
};

struct MessageSpec;

struct FieldSpec {
  std::string key;
  FieldType type = FieldType::kString;
  Json default_value;  // null: no default (the key stays absent when the file omits it)
  std::string doc;
  const MessageSpec* message = nullptr;  // kMessage / kMessageList
  std::vector<std::string> choices;      // kString / kStringList: the accepted values (empty: any)
  std::string oneof;         // non-empty: member of this oneof group of the enclosing message
  bool unsupported = false;  // a TorchEasyRec key tzrec_train refuses (with the supported list)
  bool required = false;     // must be present
};

struct OneofSpec {
  std::string name;
  bool required = false;  // exactly one member must be present (else at most one)
};

struct MessageSpec {
  std::string name;  // protobuf-ish message name, used in the reference
  std::string doc;
  std::vector<FieldSpec> fields;
  std::vector<OneofSpec> oneofs;

  const FieldSpec* Find(const std::string& key) const;
  std::vector<std::string> Keys() const;
};

// The root message (EasyRecConfig). Built once; thread-safe after the first call.
const MessageSpec& Root();
// Every message reachable from Root(), root first, each once (depth-first in field order).
std::vector<const MessageSpec*> AllMessages();

std::string TypeName(const FieldSpec& field);
// The closest key of `keys` to `key` by Levenshtein distance (ties: the first).
std::string Closest(const std::string& key, const std::vector<std::string>& keys);

}  // namespace tzrec::config_schema
