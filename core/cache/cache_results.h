// What the cache answers: a forward (CompileResult: hit, miss or bypass,
// with the entry's metadata and the forward artifact) and a backward
// (BackwardResult). Plain values.
// Thread-safety: values; no shared state.
#ifndef AOTCACHE_CORE_CACHE_CACHE_RESULTS_H_
#define AOTCACHE_CORE_CACHE_CACHE_RESULTS_H_

#include <string>

#include "aotcache/v1/analysis.pb.h"
#include "aotcache/v1/artifact.pb.h"

namespace aotcache {

enum class ForwardStatus { kHit, kMiss, kBypass };
enum class BackwardState { kNone, kPending, kReady };

struct CompileResult {
  std::string key;  // The 32-byte key.
  v1::Mode mode = v1::MODE_UNSPECIFIED;
  ForwardStatus status = ForwardStatus::kMiss;
  std::string bypass_reason;
  BackwardState backward = BackwardState::kNone;
  std::string metadata_bytes;  // The encoded v1::FunctionMetadata.
  std::string forward_bytes;   // The encoded forward v1::Artifact.
  // The stored forward's digest; empty for bypass (nothing is stored).
  std::string forward_digest;
  double compile_seconds = 0;     // Of the forward, when compiled or recorded.
  std::string not_stored_reason;  // A miss the store did not take: why.
  // A miss this request waited for: an identical concurrent request's
  // compile, done once for both.
  bool shared_compile = false;
};

struct BackwardResult {
  v1::Artifact artifact;
  // The artifact's digest when the store holds it (FetchArtifact serves
  // it); empty when it could not be stored: answer it inline.
  std::string stored_digest;
  std::string not_stored_reason;  // Why stored_digest is empty.
};

}  // namespace aotcache

#endif  // AOTCACHE_CORE_CACHE_CACHE_RESULTS_H_
