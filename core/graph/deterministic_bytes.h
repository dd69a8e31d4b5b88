// The serialized bytes of a message with map entries in a fixed order, so
// equal messages give equal bytes in every process (protobuf's default
// serialization does not promise that for maps).
// Thread-safety: pure function.
#ifndef AOTCACHE_CORE_GRAPH_DETERMINISTIC_BYTES_H_
#define AOTCACHE_CORE_GRAPH_DETERMINISTIC_BYTES_H_

#include <string>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/message_lite.h"

namespace aotcache {

inline std::string DeterministicBytes(const google::protobuf::MessageLite& m) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    m.SerializeToCodedStream(&coded);
  }
  return out;
}

}  // namespace aotcache

#endif  // AOTCACHE_CORE_GRAPH_DETERMINISTIC_BYTES_H_
