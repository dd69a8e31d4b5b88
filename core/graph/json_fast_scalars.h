// How the JSON fast reader (json_fast_path.h) turns one scalar token into
// a field's value, by the proto3 JSON mapping's rules for scalars, taking
// only the spellings protobuf's printer and fx_export write: integers as
// digits (quoted or not), doubles as JSON numbers or "NaN", "Infinity",
// "-Infinity", enums by name, bytes as padded standard base64. Each sets
// field `fd` of `m` (or adds to it, when `add`: a repeated field) and
// returns false, having changed nothing, for anything else.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_GRAPH_JSON_FAST_SCALARS_H_
#define AOTCACHE_CORE_GRAPH_JSON_FAST_SCALARS_H_

#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace aotcache {

// A JSON number's text (its grammar checked).
bool SetScalarFromNumber(google::protobuf::Message* m,
                         const google::protobuf::FieldDescriptor* fd, bool add,
                         absl::string_view text);
// A JSON string's contents.
bool SetScalarFromString(google::protobuf::Message* m,
                         const google::protobuf::FieldDescriptor* fd, bool add,
                         absl::string_view s);
bool SetScalarFromBool(google::protobuf::Message* m,
                       const google::protobuf::FieldDescriptor* fd, bool add,
                       bool b);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_GRAPH_JSON_FAST_SCALARS_H_
