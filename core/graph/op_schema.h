// An ATen operator schema, parsed from torch's own schema syntax
// ("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) ->
// Tensor(a!)"). The alias annotations drive the mutation and alias analysis:
// `Tensor(a!)` is written in place and returned, `Tensor(a)` returns a view of
// its input. Thread-safety: immutable after parsing.
#ifndef AOTCACHE_CORE_GRAPH_OP_SCHEMA_H_
#define AOTCACHE_CORE_GRAPH_OP_SCHEMA_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "aotcache/v1/graph.pb.h"

namespace aotcache {

enum class ArgType {
  kTensor,
  kOptionalTensor,
  kTensorList,
  kInt,
  kOptionalInt,
  kIntList,
  kOptionalIntList,
  kFloat,
  kOptionalFloat,
  kScalar,
  kOptionalScalar,
  kBool,
  kOptionalBool,
  kString,
  kOptionalScalarType,
  kOptionalLayout,
  kOptionalDevice,
  kOptionalMemoryFormat,
  kOptionalGenerator,
  kBoolList,  // bool[N]: carried as an int list of 0/1.
  kScalarType,
};

absl::string_view ArgTypeName(ArgType type);
bool IsTensorType(ArgType type);  // Tensor, Tensor? or Tensor[].

struct AliasAnnotation {
  char set = 0;  // 'a', 'b', ...; 0 when the value aliases nothing.
  bool is_write = false;
};

struct ArgSchema {
  std::string name;
  ArgType type;
  bool kwarg_only = false;
  std::optional<v1::Argument> default_value;
  AliasAnnotation alias;
};

struct ReturnSchema {
  AliasAnnotation alias;
  bool is_list = false;  // Tensor[]: any number of results.
};

struct OpSchema {
  std::string name;      // "add_"
  std::string overload;  // "Tensor", or "default" when the schema has none.
  std::vector<ArgSchema> args;
  std::vector<ReturnSchema> returns;  // All returns are tensors or lists.

  // torch's printed form of the overload: "aten.add_.Tensor".
  std::string QualifiedName() const;
};

// Parses one schema. Returns InvalidArgument on syntax it does not know.
absl::StatusOr<OpSchema> ParseOpSchema(absl::string_view text);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_GRAPH_OP_SCHEMA_H_
