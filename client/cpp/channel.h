// The channel every aotcache client opens to a daemon: insecure (loopback,
// unix sockets, trusted networks) and without gRPC's 4 MiB receive limit,
// since the daemon answers artifacts of up to 256 MiB inline.
// Thread-safety: a function only; channels are thread-safe.
#ifndef AOTCACHE_CLIENT_CPP_CHANNEL_H_
#define AOTCACHE_CLIENT_CPP_CHANNEL_H_

#include <memory>
#include <string>

#include "grpcpp/channel.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace aotcache {

inline std::shared_ptr<grpc::Channel> OpenChannel(const std::string& target) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                   args);
}

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_CPP_CHANNEL_H_
