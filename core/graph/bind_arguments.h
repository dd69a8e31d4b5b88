// Binding the arguments a Graph gives a node to the slots of the op's schema:
// type checks (a Python number may stand for a tensor operand), conversions
// torch makes implicitly (int for float, int for int[1]), and defaults.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_GRAPH_BIND_ARGUMENTS_H_
#define AOTCACHE_CORE_GRAPH_BIND_ARGUMENTS_H_

#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "aotcache/v1/graph.pb.h"
#include "core/graph/op_schema.h"
#include "core/graph/tensor_meta.h"

namespace aotcache {

// A place in the graph for an error message, formatted only on error.
using Where = absl::FunctionRef<std::string()>;
// Resolves a name to a value id, or an error naming `where`.
using ResolveName = absl::FunctionRef<absl::StatusOr<int>(
    const std::string& name, Where where)>;

// A client's text (a name, an op, a string argument) as an error message
// quotes it: control bytes escaped, cut after 64 bytes with its length, so
// that a message stays short and one line whatever the request holds.
std::string Quoted(absl::string_view text);

// Returns InvalidArgument naming `where` and the argument on a type mismatch.
absl::StatusOr<BoundArg> BindArgument(const ArgSchema& schema,
                                      const v1::Argument& given,
                                      ResolveName lookup, Where where);

// The schema's default value (which must exist) as a bound argument.
BoundArg DefaultArgument(const ArgSchema& schema);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_GRAPH_BIND_ARGUMENTS_H_
