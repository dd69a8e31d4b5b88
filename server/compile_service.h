// CompileService: the gRPC adapter over Cache. Per RPC: convert the
// request, call the cache, convert the result; no policy here.
//
// Compile is a raw callback method, because a hit is the common case and
// must cost little more than a round trip: the request's bytes are hashed,
// not decoded, and a request seen before is answered from the store on
// gRPC's thread, its stored artifact copied into the answer as it is
// (Cache::HitByRequestDigest; the frames in compile_frames.proto). Anything
// else -- decoding, analysis, a compile -- runs on the worker pool.
// Every RPC needs the read scope (access_control.h); a caller without the
// compile scope is answered NOT_FOUND where a miss would compile.
// Thread-safety: thread-safe (the cache, store and pool are).
#ifndef AOTCACHE_SERVER_COMPILE_SERVICE_H_
#define AOTCACHE_SERVER_COMPILE_SERVICE_H_

#include <chrono>

#include "aotcache/v1/service.grpc.pb.h"
#include "core/cache/cache.h"
#include "core/store/entry_store.h"
#include "grpcpp/support/byte_buffer.h"
#include "server/access_control.h"
#include "server/bytes_in_flight.h"
#include "server/call_clock.h"
#include "server/daemon_metrics.h"
#include "server/worker_pool.h"

namespace aotcache {

class CompileServiceImpl final
    : public v1::CompileService::WithRawCallbackMethod_Compile<
          v1::CompileService::WithRawCallbackMethod_GetBackward<
              v1::CompileService::WithCallbackMethod_FetchArtifact<
                  v1::CompileService::Service>>> {
 public:
  // Requests past `in_flight`'s budget are refused (RESOURCE_EXHAUSTED); a
  // FetchArtifact stream not read to its end within `fetch_time_limit` is
  // cancelled.
  CompileServiceImpl(Cache* cache, EntryStore* store, AccessControl* access,
                     CallClock* clock, WorkerPool* workers,
                     BytesInFlight* in_flight,
                     std::chrono::milliseconds fetch_time_limit,
                     DaemonMetrics* metrics)
      : cache_(cache),
        store_(store),
        access_(access),
        clock_(clock),
        workers_(workers),
        in_flight_(in_flight),
        fetch_time_limit_(fetch_time_limit),
        metrics_(metrics) {}

  grpc::ServerUnaryReactor* Compile(grpc::CallbackServerContext* context,
                                    const grpc::ByteBuffer* request,
                                    grpc::ByteBuffer* response) override;
  // Raw too, so that bytes that are no GetBackwardRequest are
  // INVALID_ARGUMENT (gRPC's own decoding answers INTERNAL, with no
  // message); the work runs on the pool.
  grpc::ServerUnaryReactor* GetBackward(grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* request,
                                        grpc::ByteBuffer* response) override;
  grpc::Status Lookup(grpc::ServerContext* context,
                      const v1::LookupRequest* request,
                      v1::LookupResponse* response) override;
  // A callback stream (artifact_stream.h): an unread one holds no thread.
  grpc::ServerWriteReactor<v1::ArtifactChunk>* FetchArtifact(
      grpc::CallbackServerContext* context,
      const v1::FetchArtifactRequest* request) override;

 private:
  grpc::Status AnswerGetBackward(const v1::GetBackwardRequest& request,
                                 const Grant& caller,
                                 v1::GetBackwardResponse* response);

  Cache* cache_;
  EntryStore* store_;
  AccessControl* access_;
  CallClock* clock_;
  WorkerPool* workers_;
  BytesInFlight* in_flight_;
  const std::chrono::milliseconds fetch_time_limit_;
  DaemonMetrics* metrics_;
};

}  // namespace aotcache

#endif  // AOTCACHE_SERVER_COMPILE_SERVICE_H_
