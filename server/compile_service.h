// CompileService: the gRPC adapter over Cache. Per RPC: convert the
// request, call the cache, convert the result; no policy here.
// Thread-safety: thread-safe (the cache and store are).
#ifndef AOTCACHE_SERVER_COMPILE_SERVICE_H_
#define AOTCACHE_SERVER_COMPILE_SERVICE_H_

#include "aotcache/v1/service.grpc.pb.h"
#include "core/cache/cache.h"
#include "core/store/entry_store.h"
#include "server/call_clock.h"

namespace aotcache {

class CompileServiceImpl final : public v1::CompileService::Service {
 public:
  CompileServiceImpl(Cache* cache, EntryStore* store, CallClock* clock)
      : cache_(cache), store_(store), clock_(clock) {}

  grpc::Status Compile(grpc::ServerContext* context,
                       const v1::CompileRequest* request,
                       v1::CompileResponse* response) override;
  grpc::Status GetBackward(grpc::ServerContext* context,
                           const v1::GetBackwardRequest* request,
                           v1::GetBackwardResponse* response) override;
  grpc::Status Lookup(grpc::ServerContext* context,
                      const v1::LookupRequest* request,
                      v1::LookupResponse* response) override;
  grpc::Status FetchArtifact(
      grpc::ServerContext* context, const v1::FetchArtifactRequest* request,
      grpc::ServerWriter<v1::ArtifactChunk>* writer) override;

 private:
  Cache* cache_;
  EntryStore* store_;
  CallClock* clock_;
};

}  // namespace aotcache

#endif  // AOTCACHE_SERVER_COMPILE_SERVICE_H_
