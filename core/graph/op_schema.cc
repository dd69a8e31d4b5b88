#include "core/graph/op_schema.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

struct TypeName {
  absl::string_view text;
  ArgType type;
};

// SymInt is int for aotcache: shapes are static.
constexpr TypeName kTypeNames[] = {
    {"Tensor", ArgType::kTensor},
    {"Tensor?", ArgType::kOptionalTensor},
    {"Tensor[]", ArgType::kTensorList},
    {"int", ArgType::kInt},
    {"SymInt", ArgType::kInt},
    {"int?", ArgType::kOptionalInt},
    {"SymInt?", ArgType::kOptionalInt},
    {"int[]", ArgType::kIntList},
    {"int[1]", ArgType::kIntList},
    {"SymInt[]", ArgType::kIntList},
    {"int[2]", ArgType::kIntList},
    {"SymInt[2]", ArgType::kIntList},
    {"int[1]?", ArgType::kOptionalIntList},
    {"SymInt[]?", ArgType::kOptionalIntList},
    {"int[]?", ArgType::kOptionalIntList},
    {"float", ArgType::kFloat},
    {"float?", ArgType::kOptionalFloat},
    // aotcache has no float lists: a graph gives one as the ints it holds
    // when they are whole (interpolate's scale_factor=2.0); the exporter
    // refuses others.
    {"float[]?", ArgType::kOptionalIntList},
    {"Scalar", ArgType::kScalar},
    {"Scalar?", ArgType::kOptionalScalar},
    {"bool", ArgType::kBool},
    {"bool?", ArgType::kOptionalBool},
    {"str", ArgType::kString},
    {"ScalarType?", ArgType::kOptionalScalarType},
    {"Layout?", ArgType::kOptionalLayout},
    {"Device?", ArgType::kOptionalDevice},
    {"MemoryFormat?", ArgType::kOptionalMemoryFormat},
    {"Generator?", ArgType::kOptionalGenerator},
    {"bool[3]", ArgType::kBoolList},
    {"ScalarType", ArgType::kScalarType},
};

absl::Status SyntaxError(absl::string_view text, absl::string_view detail) {
  return absl::InvalidArgumentError(
      absl::StrCat("op schema '", text, "': ", detail));
}

// Splits "Tensor(a!)" / "Tensor(a!)?" into the type text and the annotation.
absl::Status ParseAnnotatedType(absl::string_view text, std::string* type,
                                AliasAnnotation* alias) {
  size_t open = text.find('(');
  if (open == absl::string_view::npos) {
    *type = std::string(text);
    return absl::OkStatus();
  }
  size_t close = text.find(')', open);
  if (close == absl::string_view::npos) {
    return absl::InvalidArgumentError("unclosed alias annotation");
  }
  absl::string_view annotation = text.substr(open + 1, close - open - 1);
  alias->is_write = absl::ConsumeSuffix(&annotation, "!");
  if (annotation.size() != 1) {
    return absl::InvalidArgumentError("bad alias annotation");
  }
  alias->set = annotation[0];
  *type = absl::StrCat(text.substr(0, open), text.substr(close + 1));
  return absl::OkStatus();
}

absl::StatusOr<v1::Argument> ParseDefault(ArgType type,
                                          absl::string_view text) {
  v1::Argument value;
  if (text == "None") {
    value.set_none(true);
  } else if (text == "True" || text == "False") {
    value.set_bool_(text == "True");
  } else if (text == "Mean") {  // at::Reduction::Mean
    value.set_int_(1);
  } else if (absl::StartsWith(text, "'")) {
    value.set_string(
        std::string(absl::StripSuffix(absl::StripPrefix(text, "'"), "'")));
  } else if (absl::StartsWith(text, "[")) {
    absl::string_view inner =
        absl::StripSuffix(absl::StripPrefix(text, "["), "]");
    auto* ints = value.mutable_ints();
    for (absl::string_view item :
         absl::StrSplit(inner, ',', absl::SkipEmpty())) {
      int64_t v;
      if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(item), &v)) {
        return absl::InvalidArgumentError(absl::StrCat("bad default ", text));
      }
      ints->add_values(v);
    }
  } else {
    int64_t i;
    double d;
    if (type != ArgType::kFloat && type != ArgType::kOptionalFloat &&
        absl::SimpleAtoi(text, &i)) {
      if (type == ArgType::kIntList || type == ArgType::kOptionalIntList) {
        value.mutable_ints()->add_values(i);
      } else {
        value.set_int_(i);
      }
    } else if (absl::SimpleAtod(text, &d)) {
      value.set_float_(d);
    } else {
      return absl::InvalidArgumentError(absl::StrCat("bad default ", text));
    }
  }
  return value;
}

}  // namespace

absl::string_view ArgTypeName(ArgType type) {
  for (const TypeName& t : kTypeNames) {
    if (t.type == type) return t.text;
  }
  return "?";
}

bool IsTensorType(ArgType type) {
  return type == ArgType::kTensor || type == ArgType::kOptionalTensor ||
         type == ArgType::kTensorList;
}

std::string OpSchema::QualifiedName() const {
  return absl::StrCat("aten.", name, ".", overload);
}

absl::StatusOr<OpSchema> ParseOpSchema(absl::string_view text) {
  OpSchema schema;
  size_t open = text.find('(');
  size_t arrow = text.rfind(") -> ");
  if (open == absl::string_view::npos || arrow == absl::string_view::npos) {
    return SyntaxError(text, "expected 'name(args) -> returns'");
  }
  absl::string_view full_name = text.substr(0, open);
  std::pair<std::string, std::string> parts =
      absl::StrSplit(full_name, absl::MaxSplits('.', 1));
  schema.name = parts.first;
  schema.overload = parts.second.empty() ? "default" : parts.second;

  bool kwarg_only = false;
  absl::string_view args = text.substr(open + 1, arrow - open - 1);
  for (absl::string_view raw : absl::StrSplit(args, ", ", absl::SkipEmpty())) {
    absl::string_view item = absl::StripAsciiWhitespace(raw);
    if (item == "*") {
      kwarg_only = true;
      continue;
    }
    ArgSchema arg;
    arg.kwarg_only = kwarg_only;
    std::pair<absl::string_view, absl::string_view> type_and_name =
        absl::StrSplit(item, absl::MaxSplits(' ', 1));
    std::string type_text;
    absl::Status st =
        ParseAnnotatedType(type_and_name.first, &type_text, &arg.alias);
    if (!st.ok()) return SyntaxError(text, st.message());
    bool known = false;
    for (const TypeName& t : kTypeNames) {
      if (t.text == type_text) {
        arg.type = t.type;
        known = true;
      }
    }
    if (!known) return SyntaxError(text, absl::StrCat("type ", type_text));
    std::pair<absl::string_view, absl::string_view> name_and_default =
        absl::StrSplit(type_and_name.second, absl::MaxSplits('=', 1));
    arg.name = std::string(name_and_default.first);
    if (!name_and_default.second.empty()) {
      absl::StatusOr<v1::Argument> def =
          ParseDefault(arg.type, name_and_default.second);
      if (!def.ok()) return SyntaxError(text, def.status().message());
      arg.default_value = *std::move(def);
    }
    schema.args.push_back(std::move(arg));
  }

  absl::string_view returns = text.substr(arrow + 5);
  if (absl::ConsumePrefix(&returns, "(")) {  // A tuple of results.
    returns = absl::StripSuffix(returns, ")");
  }
  for (absl::string_view raw : absl::StrSplit(returns, ", ")) {
    ReturnSchema ret;
    std::string type_text;
    absl::Status st = ParseAnnotatedType(absl::StripAsciiWhitespace(raw),
                                         &type_text, &ret.alias);
    if (!st.ok()) return SyntaxError(text, st.message());
    ret.is_list = type_text == "Tensor[]";
    if (type_text != "Tensor" && !ret.is_list) {
      return SyntaxError(text, absl::StrCat("return type ", type_text));
    }
    schema.returns.push_back(ret);
  }
  return schema;
}

}  // namespace aotcache
