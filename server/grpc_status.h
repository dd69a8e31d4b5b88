// The one place absl::Status becomes grpc::Status (codes map one to one;
// the message is kept).
// Thread-safety: pure function.
#ifndef AOTCACHE_SERVER_GRPC_STATUS_H_
#define AOTCACHE_SERVER_GRPC_STATUS_H_

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace aotcache {

grpc::Status ToGrpc(const absl::Status& status);

}  // namespace aotcache

#endif  // AOTCACHE_SERVER_GRPC_STATUS_H_
