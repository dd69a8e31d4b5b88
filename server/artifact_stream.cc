#include "server/artifact_stream.h"

#include <algorithm>
#include <utility>

namespace aotcache {
namespace {

constexpr size_t kChunkBytes = size_t{1} << 20;

class Refused final : public grpc::ServerWriteReactor<v1::ArtifactChunk> {
 public:
  explicit Refused(grpc::Status status) { Finish(std::move(status)); }
  void OnDone() override { delete this; }
};

// What a stream of `size` bytes holds at once: the artifact, or its one
// chunk, and the chunk's encoding.
int64_t HeldBytes(size_t size) {
  return static_cast<int64_t>(size + std::min(size, 2 * kChunkBytes));
}

}  // namespace

ArtifactStream::ArtifactStream(grpc::CallbackServerContext* context,
                               std::string bytes, BytesInFlight* in_flight)
    : context_(context),
      bytes_(std::move(bytes)),
      size_(bytes_.size()),
      in_flight_(in_flight) {}

grpc::ServerWriteReactor<v1::ArtifactChunk>* ArtifactStream::Start(
    grpc::CallbackServerContext* context, std::string bytes,
    std::chrono::milliseconds time_limit, BytesInFlight* in_flight) {
  if (!in_flight->TryTake(HeldBytes(bytes.size()))) {
    return Refuse(in_flight->OverBudget());
  }
  auto* stream = new ArtifactStream(context, std::move(bytes), in_flight);
  stream->time_limit_.Set(
      std::chrono::system_clock::now() + time_limit,
      [stream](bool expired) { stream->OnTimeLimit(expired); });
  stream->chunk_.set_total_bytes(static_cast<int64_t>(stream->size_));
  stream->WriteNext();
  return stream;
}

grpc::ServerWriteReactor<v1::ArtifactChunk>* ArtifactStream::Refuse(
    grpc::Status status) {
  return new Refused(std::move(status));
}

void ArtifactStream::WriteNext() {
  if (size_ <= kChunkBytes) {
    chunk_.set_data(std::move(bytes_));  // Not held twice.
  } else {
    chunk_.set_data(bytes_.substr(offset_, kChunkBytes));
  }
  offset_ += kChunkBytes;
  if (offset_ >= size_) {
    StartWriteAndFinish(&chunk_, grpc::WriteOptions(), grpc::Status::OK);
  } else {
    StartWrite(&chunk_);
  }
}

void ArtifactStream::OnWriteDone(bool ok) {
  if (!ok) {
    Finish(grpc::Status::CANCELLED);
    return;
  }
  chunk_.clear_total_bytes();
  WriteNext();
}

void ArtifactStream::OnTimeLimit(bool expired) {
  {
    absl::MutexLock lock(&mu_);
    // The context lives until OnDone, which waits for this lock.
    if (expired && !done_) context_->TryCancel();
  }
  Unref();
}

void ArtifactStream::OnDone() {
  {
    absl::MutexLock lock(&mu_);
    done_ = true;
  }
  in_flight_->Give(HeldBytes(size_));
  time_limit_.Cancel();
  Unref();
}

void ArtifactStream::Unref() {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

}  // namespace aotcache
