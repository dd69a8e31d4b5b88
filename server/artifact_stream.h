// ArtifactStream: the answer to FetchArtifact, a stored artifact written in
// chunks of 1 MiB. It holds no thread while the client reads; its bytes
// count against the daemon's bytes in flight until the stream ends; and a
// client that has not read it to its end within the time limit is
// cancelled. Unread downloads thus hold a bounded amount of memory, for a
// bounded time.
// Thread-safety: gRPC calls the reactor's methods one at a time; the time
// limit's alarm runs on another thread, synchronized with them.
#ifndef AOTCACHE_SERVER_ARTIFACT_STREAM_H_
#define AOTCACHE_SERVER_ARTIFACT_STREAM_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "aotcache/v1/service.pb.h"
#include "grpcpp/alarm.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_callback.h"
#include "server/bytes_in_flight.h"

namespace aotcache {

class ArtifactStream final
    : public grpc::ServerWriteReactor<v1::ArtifactChunk> {
 public:
  // Starts writing `bytes` on `context`'s call, or refuses them
  // (RESOURCE_EXHAUSTED) if they do not fit in `in_flight`; the stream
  // deletes itself when the call is done.
  static grpc::ServerWriteReactor<v1::ArtifactChunk>* Start(
      grpc::CallbackServerContext* context, std::string bytes,
      std::chrono::milliseconds time_limit, BytesInFlight* in_flight);
  // A stream that ends at once with `status`, writing nothing.
  static grpc::ServerWriteReactor<v1::ArtifactChunk>* Refuse(
      grpc::Status status);

  void OnWriteDone(bool ok) override;
  void OnDone() override;

 private:
  ArtifactStream(grpc::CallbackServerContext* context, std::string bytes,
                 BytesInFlight* in_flight);
  void WriteNext();
  void OnTimeLimit(bool expired);
  void Unref();  // Of the two owners: the call (OnDone) and the alarm.

  grpc::CallbackServerContext* const context_;
  std::string bytes_;  // Moved into chunk_ when it is one chunk.
  const size_t size_;
  BytesInFlight* const in_flight_;
  size_t offset_ = 0;
  v1::ArtifactChunk chunk_;  // The chunk being written.
  grpc::Alarm time_limit_;
  std::atomic<int> refs_{2};
  absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace aotcache

#endif  // AOTCACHE_SERVER_ARTIFACT_STREAM_H_
