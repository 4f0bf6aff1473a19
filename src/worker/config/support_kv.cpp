// The support rows of the multi-input feature types combo_feature, lookup_feature, match_feature
// and expr_feature (see support.cpp and internal.hpp).
#include <vector>

#include "internal.hpp"

namespace tzrec::config_internal {
namespace {

constexpr Support kH = Support::kHonoured;

constexpr const char* kCombo = "ComboTransform.CartesianProductHashed";
constexpr const char* kLookupCombine = "LookupTransform.CombinersOverFoundValues";
constexpr const char* kLookupIds = "LookupTransform.DiscreteIdsWithNeedKey";
constexpr const char* kLookupTables = "LookupTransform.NumBucketsAndVocabularies";
constexpr const char* kLookupNumbers = "LookupTransform.BoundariesNormalizerAndValueDim";
constexpr const char* kMatchHit = "MatchTransform.HitAndWildcards";
constexpr const char* kMatchIds = "MatchTransform.DiscreteIdsWithShownKeys";
constexpr const char* kMatchNumbers = "MatchTransform.NumericMatchBoundariesAndDefault";
constexpr const char* kShared = "config.SharedTablesAgree";
constexpr const char* kExpr = "ExprTransform.DenseValueAndDefaultValue";
constexpr const char* kExprIds = "ExprTransform.BoundariesAndValueDim";
constexpr const char* kExprMulti = "ExprTransform.MultiValueSeparatorAndFillMissing";
constexpr const char* kExprLanguage = "Expression.PrecedenceAndAssociativity";

#define P "tzrec.protos."
const std::vector<FieldSupport> kRows = {
    {P "FeatureConfig.combo_feature", kH, "the hashed cartesian product of >= 2 inputs", kCombo},
    {P "ComboFeature.feature_name", kH, "the name (and its column with FG_NONE)", kCombo},
    {P "ComboFeature.expression", kH, "the inputs (side:column), 2 or more",
     "ComboTransform.DatasetReadsEveryInput"},
    {P "ComboFeature.embedding_name", kH, "features with one name share a table",
     "config.SharedTablesAgree"},
    {P "ComboFeature.embedding_dim", kH, "the table width", kCombo},
    {P "ComboFeature.hash_bucket_size", kH, "hash each combination into these rows", kCombo},
    {P "ComboFeature.pooling", kH, "sum | mean", "core.Embedding"},
    {P "ComboFeature.separator", kH, "multi-value separator of the inputs' text", kCombo},
    {P "ComboFeature.embedding_constraints", kH, "this table's sharding constraints",
     "planner.Plan"},

    {P "FeatureConfig.lookup_feature", kH, "a value looked up in a k:v map by a key input",
     kLookupCombine},
    {P "LookupFeature.feature_name", kH, "the name (and its column with FG_NONE)", kLookupCombine},
    {P "LookupFeature.map", kH, "the k:v map input (side:column)", kLookupCombine},
    {P "LookupFeature.key", kH, "the key input (side:column), one or more keys", kLookupCombine},
    {P "LookupFeature.embedding_name", kH, "with a table: features with one name share it",
     kShared},
    {P "LookupFeature.embedding_dim", kH, "with a table: its width", kLookupIds},
    {P "LookupFeature.boundaries", kH, "bucketize the (combined) value into len + 1 ids",
     kLookupNumbers},
    {P "LookupFeature.hash_bucket_size", kH, "each found value hashed into this many rows",
     kLookupIds},
    {P "LookupFeature.num_buckets", kH, "each found value an integer id in [0, n)", kLookupTables},
    {P "LookupFeature.vocab_list", kH, "found values' ids: default_value 0, unknown 1, list from 2",
     kLookupTables},
    {P "LookupFeature.vocab_dict", kH, "found values' ids as given (default_value 0, unknown 1)",
     kLookupTables},
    {P "LookupFeature.pooling", kH, "with a table: sum | mean", "core.Embedding"},
    {P "LookupFeature.combiner", kH, "numeric values: sum | mean | min | max | count",
     kLookupCombine},
    {P "LookupFeature.default_value", kH, "the value when no key is found", kLookupCombine},
    {P "LookupFeature.separator", kH, "multi-value separator of the key's text cells",
     kLookupCombine},
    {P "LookupFeature.need_discrete", kH, "found values are text ids (with a hash or vocabulary)",
     kLookupIds},
    {P "LookupFeature.need_key", kH, "hashed / vocabulary text is key_value", kLookupIds},
    {P "LookupFeature.normalizer", kH, "numeric values: the raw_feature normalizers",
     kLookupNumbers},
    {P "LookupFeature.value_dim", kH,
     "ids: 0 every found value, 1 the first; numbers: > 1 splits the first found value",
     kLookupNumbers},
    {P "LookupFeature.value_separator", kH, "value_dim > 1: the separator of a found value",
     kLookupNumbers},
    {P "LookupFeature.embedding_constraints", kH, "with a table: its sharding constraints",
     "planner.Plan"},

    {P "FeatureConfig.match_feature", kH, "a value matched in a two-level map by pkey and skey",
     kMatchHit},
    {P "MatchFeature.feature_name", kH, "the name (and its column with FG_NONE)", kMatchHit},
    {P "MatchFeature.nested_map", kH, "the pk^sk:v,...|... map input (side:column)", kMatchHit},
    {P "MatchFeature.pkey", kH, "the primary key input, or ALL (every primary key)", kMatchHit},
    {P "MatchFeature.skey", kH, "the secondary key input, or ALL (every secondary key)", kMatchHit},
    {P "MatchFeature.embedding_name", kH, "with a table: features with one name share it", kShared},
    {P "MatchFeature.embedding_dim", kH, "with a table: its width", kMatchIds},
    {P "MatchFeature.boundaries", kH, "bucketize the matched value into len + 1 ids",
     kMatchNumbers},
    {P "MatchFeature.hash_bucket_size", kH, "each matched value hashed into this many rows",
     kMatchIds},
    {P "MatchFeature.num_buckets", kH, "each matched value an integer id in [0, n)", kMatchIds},
    {P "MatchFeature.vocab_list", kH,
     "matched values' ids: default_value 0, unknown 1, list from 2", kMatchIds},
    {P "MatchFeature.vocab_dict", kH, "matched values' ids as given (default_value 0, unknown 1)",
     kMatchIds},
    {P "MatchFeature.pooling", kH, "with a table: sum | mean", "core.Embedding"},
    {P "MatchFeature.default_value", kH, "the value when nothing matches", kMatchNumbers},
    {P "MatchFeature.separator", kH, "multi-value separator of the pkey / skey text cells",
     kMatchHit},
    {P "MatchFeature.need_discrete", kH, "matched values are text ids (with a hash or vocabulary)",
     kMatchIds},
    {P "MatchFeature.show_pkey", kH, "hashed / vocabulary text starts with pkey_", kMatchIds},
    {P "MatchFeature.show_skey", kH, "hashed / vocabulary text has skey_ before the value",
     kMatchIds},
    {P "MatchFeature.normalizer", kH, "numeric values: the raw_feature normalizers", kMatchNumbers},
    {P "MatchFeature.value_dim", kH, "ids: 0 every matched value, 1 the first; numbers: 1",
     kMatchIds},
    {P "MatchFeature.embedding_constraints", kH, "with a table: its sharding constraints",
     "planner.Plan"},

    {P "FeatureConfig.expr_feature", kH, "a number computed from inputs by an expression", kExpr},
    {P "ExprFeature.feature_name", kH, "the name (and its column with FG_NONE)", kExpr},
    {P "ExprFeature.expression", kH, "pyfg's expression language (operators, functions)",
     kExprLanguage},
    {P "ExprFeature.variables", kH, "the inputs (side:column; the column names the variable)",
     kExpr},
    {P "ExprFeature.embedding_name", kH, "with boundaries: features with one name share a table",
     kShared},
    {P "ExprFeature.embedding_dim", kH, "with boundaries: the table width", kExprIds},
    {P "ExprFeature.boundaries", kH, "bucketize each value into len + 1 ids", kExprIds},
    {P "ExprFeature.separator", kH, "multi-value separator of the variables' text cells",
     kExprMulti},
    {P "ExprFeature.fill_missing", kH, "pads the shorter of two value lists (unset: NaN)",
     kExprMulti},
    {P "ExprFeature.pooling", kH, "with boundaries: sum | mean", "core.Embedding"},
    {P "ExprFeature.default_value", kH, "the value when an input is missing", kExpr},
    {P "ExprFeature.value_dim", kH, "ids: 0 every value, n the first n; dense: one value",
     kExprIds},
    {P "ExprFeature.embedding_constraints", kH, "with boundaries: its sharding constraints",
     "planner.Plan"},
};
#undef P

}  // namespace

const std::vector<FieldSupport>& KvSupportRows() {
  return kRows;
}

}  // namespace tzrec::config_internal
