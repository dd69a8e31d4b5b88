// The CLI's --json: a message as protobuf JSON (field names as in the
// .proto, defaults printed), with every 32-byte `key` in lowercase hex --
// as the CLI's other output prints keys and `show`/`rm` take them -- where
// protobuf's JSON would print bytes in base64.
// Thread-safety: a function only.
#ifndef AOTCACHE_CLIENT_CLI_CLI_JSON_H_
#define AOTCACHE_CLIENT_CLI_CLI_JSON_H_

#include <string>

#include "google/protobuf/message.h"

namespace aotcache {

std::string CliJson(const google::protobuf::Message& message);

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_CLI_CLI_JSON_H_
