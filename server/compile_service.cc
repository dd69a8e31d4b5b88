#include "server/compile_service.h"

#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "aotcache/v1/compile_frames.pb.h"
#include "core/graph/deterministic_bytes.h"
#include "core/key/digest.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "server/artifact_stream.h"
#include "server/grpc_status.h"

namespace aotcache {
namespace {

CompileRequest FromProto(const v1::CompileRequest& r) {
  return CompileRequest{r.graph(), r.options(), r.target(), ""};
}

v1::CompileStatus ToProto(ForwardStatus s) {
  switch (s) {
    case ForwardStatus::kHit:
      return v1::COMPILE_STATUS_HIT;
    case ForwardStatus::kMiss:
      return v1::COMPILE_STATUS_MISS;
    case ForwardStatus::kBypass:
      return v1::COMPILE_STATUS_BYPASS;
  }
  return v1::COMPILE_STATUS_UNSPECIFIED;
}

v1::BackwardState ToProto(BackwardState s) {
  switch (s) {
    case BackwardState::kNone:
      return v1::BACKWARD_STATE_NONE;
    case BackwardState::kPending:
      return v1::BACKWARD_STATE_PENDING;
    case BackwardState::kReady:
      return v1::BACKWARD_STATE_READY;
  }
  return v1::BACKWARD_STATE_UNSPECIFIED;
}

// An encoded CompileResponse.
grpc::ByteBuffer EncodeResponse(CompileResult& r, bool by_reference) {
  v1::CompileResponseFrame frame;
  frame.set_key(std::move(r.key));
  frame.set_mode(r.mode);
  frame.set_status(ToProto(r.status));
  frame.set_bypass_reason(std::move(r.bypass_reason));
  frame.set_backward(ToProto(r.backward));
  frame.set_metadata(std::move(r.metadata_bytes));
  frame.set_compile_seconds(r.compile_seconds);
  if (!by_reference || r.forward_digest.empty()) {
    frame.set_forward(std::move(r.forward_bytes));
  }
  frame.set_forward_digest(std::move(r.forward_digest));
  frame.set_not_stored_reason(std::move(r.not_stored_reason));
  frame.set_shared_compile(r.shared_compile);
  grpc::Slice slice(frame.SerializeAsString());
  return grpc::ByteBuffer(&slice, 1);
}

// The Sha256Hex of a message's bytes, read where gRPC holds them.
std::string DigestOf(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  if (!buffer.Dump(&slices).ok()) return "";
  std::vector<absl::string_view> pieces;
  pieces.reserve(slices.size());
  for (const grpc::Slice& s : slices) {
    pieces.emplace_back(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return Sha256HexOfPieces(pieces);
}

// Decodes `buffer` where gRPC holds it: no copy of the encoded bytes.
bool Decode(const grpc::ByteBuffer& buffer, google::protobuf::Message* m) {
  grpc::ByteBuffer shared(buffer);  // The same slices, referenced.
  grpc::ProtoBufferReader reader(&shared);
  return m->ParseFromZeroCopyStream(&reader);
}

// The artifacts_by_reference field of an encoded CompileRequestFrame, its
// other fields skipped, not copied; nullopt if the bytes are no message.
std::optional<bool> ArtifactsByReference(const grpc::ByteBuffer& buffer) {
  using google::protobuf::internal::WireFormatLite;
  grpc::ByteBuffer shared(buffer);
  grpc::ProtoBufferReader reader(&shared);
  google::protobuf::io::CodedInputStream in(&reader);
  constexpr uint32_t kTag = WireFormatLite::MakeTag(
      v1::CompileRequestFrame::kArtifactsByReferenceFieldNumber,
      WireFormatLite::WIRETYPE_VARINT);
  bool by_reference = false;
  for (uint32_t tag = in.ReadTag(); tag != 0; tag = in.ReadTag()) {
    if (tag == kTag) {
      uint64_t value = 0;
      if (!in.ReadVarint64(&value)) return std::nullopt;
      by_reference = value != 0;
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      return std::nullopt;
    }
  }
  if (!in.ConsumedEntireMessage()) return std::nullopt;
  return by_reference;
}

// What a miss does for `caller`.
OnMiss OnMissFor(const Grant& caller) {
  return caller.scopes.Has(Scope::kCompile) ? OnMiss::kCompile
                                            : OnMiss::kNotFound;
}

// The cache's answer, with a miss that `caller` may not compile said so.
grpc::Status ToGrpcFor(const absl::Status& status, const Grant& caller,
                       OnMiss on_miss) {
  if (on_miss == OnMiss::kNotFound && absl::IsNotFound(status)) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat(status.message(),
                                     ": compiling needs the compile scope, "
                                     "which '",
                                     caller.name, "' does not hold"));
  }
  return ToGrpc(status);
}

}  // namespace

grpc::ServerUnaryReactor* CompileServiceImpl::Compile(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  clock_->Touch();
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  Grant caller;
  if (grpc::Status allowed =
          access_->Check(*context, Scope::kRead, "Compile", &caller);
      !allowed.ok()) {
    reactor->Finish(allowed);
    return reactor;
  }
  // Nothing is copied before the budget is asked: the request is read
  // where gRPC holds it.
  const std::optional<bool> by_reference = ArtifactsByReference(*request);
  if (!by_reference.has_value()) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 "the request is not a CompileRequest"));
    return reactor;
  }
  std::string digest = DigestOf(*request);
  if (std::optional<CompileResult> hit = cache_->HitByRequestDigest(
          digest, *by_reference ? HitBytes::kByReference : HitBytes::kInline)) {
    metrics_->RecordCompile(*hit, caller.name);
    *response = EncodeResponse(*hit, *by_reference);
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  const int64_t size = static_cast<int64_t>(request->Length());
  if (!in_flight_->TryTake(size)) {
    reactor->Finish(in_flight_->OverBudget());
    return reactor;
  }
  const OnMiss on_miss = OnMissFor(caller);
  workers_->Schedule([this, reactor, request, response, size, on_miss,
                      caller = std::move(caller), by_reference = *by_reference,
                      digest = std::move(digest)]() mutable {
    // The request's bytes are given back before the call finishes, so a
    // client that sends its next request on the answer finds them free.
    auto finish = [&, given = size](grpc::Status status) mutable {
      in_flight_->Give(std::exchange(given, 0));
      reactor->Finish(std::move(status));
    };
    v1::CompileRequest decoded;
    if (!Decode(*request, &decoded)) {
      finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "the request is not a CompileRequest"));
      return;
    }
    CompileRequest r{std::move(*decoded.mutable_graph()),
                     std::move(*decoded.mutable_options()),
                     std::move(*decoded.mutable_target()), std::move(digest)};
    absl::StatusOr<CompileResult> result = cache_->Compile(r, on_miss);
    if (!result.ok()) {
      finish(ToGrpcFor(result.status(), caller, on_miss));
      return;
    }
    metrics_->RecordCompile(*result, caller.name);
    *response = EncodeResponse(*result, by_reference);
    finish(grpc::Status::OK);
  });
  return reactor;
}

grpc::ServerUnaryReactor* CompileServiceImpl::GetBackward(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  clock_->Touch();
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  Grant caller;
  if (grpc::Status allowed =
          access_->Check(*context, Scope::kRead, "GetBackward", &caller);
      !allowed.ok()) {
    reactor->Finish(allowed);
    return reactor;
  }
  // Within the same budget as Compile: it may carry a whole CompileRequest.
  const int64_t size = static_cast<int64_t>(request->Length());
  if (!in_flight_->TryTake(size)) {
    reactor->Finish(in_flight_->OverBudget());
    return reactor;
  }
  v1::GetBackwardRequest decoded;
  if (!Decode(*request, &decoded)) {
    in_flight_->Give(size);
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 "the request is not a GetBackwardRequest"));
    return reactor;
  }
  workers_->Schedule([this, reactor, response, size,
                      decoded = std::move(decoded),
                      caller = std::move(caller)]() {
    v1::GetBackwardResponse answer;
    grpc::Status status = AnswerGetBackward(decoded, caller, &answer);
    if (status.ok()) {
      grpc::Slice slice(answer.SerializeAsString());
      *response = grpc::ByteBuffer(&slice, 1);
    }
    in_flight_->Give(size);
    reactor->Finish(status);
  });
  return reactor;
}

grpc::Status CompileServiceImpl::AnswerGetBackward(
    const v1::GetBackwardRequest& r, const Grant& caller,
    v1::GetBackwardResponse* response) {
  const v1::GetBackwardRequest* request = &r;
  const OnMiss on_miss = OnMissFor(caller);
  CompileRequest rebuild;
  const CompileRequest* rebuild_ptr = nullptr;
  if (request->has_request()) {
    rebuild = FromProto(request->request());
    rebuild_ptr = &rebuild;
  }
  absl::StatusOr<BackwardResult> bw =
      cache_->GetBackward(request->key(), rebuild_ptr, on_miss);
  if (!bw.ok()) return ToGrpcFor(bw.status(), caller, on_miss);
  response->set_backward_digest(bw->stored_digest);
  response->set_not_stored_reason(bw->not_stored_reason);
  if (!request->artifact_by_reference() || bw->stored_digest.empty()) {
    *response->mutable_backward() = std::move(bw->artifact);
  }
  return grpc::Status::OK;
}

grpc::ServerWriteReactor<v1::ArtifactChunk>* CompileServiceImpl::FetchArtifact(
    grpc::CallbackServerContext* context,
    const v1::FetchArtifactRequest* request) {
  clock_->Touch();
  if (grpc::Status allowed =
          access_->Check(*context, Scope::kRead, "FetchArtifact");
      !allowed.ok()) {
    return ArtifactStream::Refuse(allowed);
  }
  if (!IsSha256Hex(request->digest())) {
    return ArtifactStream::Refuse(
        grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                     "digest: not 64 lowercase hex digits (a SHA-256)"));
  }
  absl::StatusOr<std::string> bytes = store_->GetArtifact(request->digest());
  if (!bytes.ok()) return ArtifactStream::Refuse(ToGrpc(bytes.status()));
  return ArtifactStream::Start(context, *std::move(bytes), fetch_time_limit_,
                               in_flight_);
}

grpc::Status CompileServiceImpl::Lookup(grpc::ServerContext* context,
                                        const v1::LookupRequest* request,
                                        v1::LookupResponse* response) {
  clock_->Touch();
  if (grpc::Status allowed = access_->Check(*context, Scope::kRead, "Lookup");
      !allowed.ok()) {
    return allowed;
  }
  absl::StatusOr<v1::CacheEntry> entry = store_->Lookup(request->key());
  if (!entry.ok()) return ToGrpc(entry.status());
  *response->mutable_entry() = *std::move(entry);
  return grpc::Status::OK;
}

}  // namespace aotcache
