// The cache over a real RocksDB store in a temp dir and the reference
// backend: hits, misses and bypasses, persistence, lazy backward across
// "processes" (cache instances), single-flight, corruption, store failures.
#include "core/cache/cache.h"

#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "core/backend/reference_backend.h"
#include "core/graph/deterministic_bytes.h"
#include "core/key/digest.h"
#include "core/store/rocksdb_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rocksdb/db.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/raw_store.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wrapping_backend.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using ::aotcache::testing::TempDir;
using ::aotcache::testing::WrappingBackend;

std::unique_ptr<RocksDbStore> OpenStore(const std::string& path) {
  StoreOptions options;
  options.path = path;
  auto store = RocksDbStore::Open(options);
  EXPECT_THAT(store, IsOk());
  return store.ok() ? *std::move(store) : nullptr;
}

CompileRequest Request(const std::string& fixture) {
  CompileRequest r;
  r.graph = testing::LoadGraphOrDie("graphs/" + fixture);
  r.target.set_arch("x86_64");
  r.target.set_abi("linux-gnu");
  return r;
}

v1::Artifact Forward(const CompileResult& r) {
  v1::Artifact forward;
  EXPECT_TRUE(forward.ParseFromString(r.forward_bytes));
  return forward;
}

TEST(CacheTest, MissThenHitWithTheSameArtifact) {
  TempDir dir;
  auto store = OpenStore(dir.path());
  WrappingBackend backend;
  Cache cache(store.get(), &backend, {});
  auto first = cache.Compile(Request("mlp_mse__rg.json"));
  ASSERT_THAT(first, IsOk());
  EXPECT_EQ(first->status, ForwardStatus::kMiss);
  EXPECT_EQ(first->mode, v1::MODE_TRAINING);
  EXPECT_EQ(first->backward, BackwardState::kPending);
  auto second = cache.Compile(Request("mlp_mse__rg.json"));
  ASSERT_THAT(second, IsOk());
  EXPECT_EQ(second->status, ForwardStatus::kHit);
  EXPECT_EQ(second->forward_bytes, first->forward_bytes);
  EXPECT_EQ(backend.forward_compiles, 1);
  CacheCounters c = cache.counters();
  EXPECT_EQ(c.hits, 1);
  EXPECT_EQ(c.misses, 1);
  EXPECT_EQ(c.saves, 1);
  EXPECT_GT(c.bytes_stored, 0);
}

TEST(CacheTest, EntriesSurviveARestart) {
  TempDir dir;
  WrappingBackend backend;
  {
    auto store = OpenStore(dir.path());
    Cache cache(store.get(), &backend, {});
    ASSERT_THAT(cache.Compile(Request("layer_norm_softmax__nrg.json")), IsOk());
  }
  auto store = OpenStore(dir.path());
  Cache cache(store.get(), &backend, {});
  auto result = cache.Compile(Request("layer_norm_softmax__nrg.json"));
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(result->status, ForwardStatus::kHit);
  EXPECT_EQ(result->backward, BackwardState::kNone);
}

// Random ops are stored and hit like any other: the seed is a runtime input,
// never key material.
TEST(CacheTest, RandomOpsAreStoredAndHit) {
  TempDir dir;
  auto store = OpenStore(dir.path());
  WrappingBackend backend;
  Cache cache(store.get(), &backend, {});
  v1::Graph g = testing::GraphFromJson(R"json({
    "inputs": [{"name": "x", "meta": {"shape": [4], "dtype": "DTYPE_FLOAT32", "is_leaf": true}}],
    "nodes": [
      {"name": "d", "op": "aten.native_dropout.default", "args": [{"node": "x"}, {"float": 0.5}, {"bool": true}],
       "grad_mode": "GRAD_MODE_ENABLED"},
      {"name": "out", "op": "getitem", "args": [{"node": "d"}, {"int": 0}]}
    ],
    "outputs": ["out"]
  })json");
  CompileRequest request;
  request.graph = g;
  request.request_digest = "digest of the request's bytes";
  auto first = cache.Compile(request);
  ASSERT_THAT(first, IsOk());
  EXPECT_EQ(first->status, ForwardStatus::kMiss);
  EXPECT_THAT(store->Lookup(first->key), IsOk());
  auto second = cache.Compile(request);
  ASSERT_THAT(second, IsOk());
  EXPECT_EQ(second->status, ForwardStatus::kHit);
  EXPECT_EQ(cache.counters().bypasses, 0);
}

// A graph whose constants pass the limit is compiled once and never
// stored: the next request for its key (another process's) and its
// backward are answered from the memo of bypassed keys.
TEST(CacheTest, ABypassedKeyIsCompiledOnceAndNeverStored) {
  TempDir dir;
  auto store = OpenStore(dir.path());
  WrappingBackend backend;
  CacheOptions options;
  options.max_cached_constant_bytes = 0;
  Cache cache(store.get(), &backend, options);
  CompileRequest request = Request("closure_constant__rg.json");
  auto first = cache.Compile(request);
  ASSERT_THAT(first, IsOk());
  EXPECT_EQ(first->status, ForwardStatus::kBypass);
  EXPECT_THAT(first->bypass_reason, ::testing::HasSubstr("constants of"));
  auto second = cache.Compile(request);
  ASSERT_THAT(second, IsOk());
  EXPECT_EQ(second->status, ForwardStatus::kBypass);
  EXPECT_EQ(second->forward_bytes, first->forward_bytes);
  EXPECT_EQ(backend.forward_compiles, 1);
  for (int i = 0; i < 2; ++i) {
    auto bw = cache.GetBackward(first->key, &request);
    ASSERT_THAT(bw, IsOk());
    EXPECT_EQ(bw->artifact.pairs_with(),
              Forward(*first).calling_convention_hash());
    EXPECT_TRUE(bw->stored_digest.empty());
  }
  EXPECT_EQ(backend.forward_compiles, 1);
  EXPECT_EQ(backend.backward_compiles, 1);
  EXPECT_EQ(cache.counters().bypass_memo_hits, 1);
  EXPECT_EQ(cache.counters().bypasses, 2);
  EXPECT_EQ(cache.counters().backward_hits, 1);
  EXPECT_TRUE(absl::IsNotFound(store->Lookup(first->key).status()));

  // Past the memo's budget the key is compiled again, and still not stored.
  CacheOptions small = options;
  small.max_bypass_memo_bytes = 1;
  Cache forgetful(store.get(), &backend, small);
  for (int i = 0; i < 2; ++i) ASSERT_THAT(forgetful.Compile(request), IsOk());
  EXPECT_EQ(backend.forward_compiles, 3);
  EXPECT_TRUE(absl::IsNotFound(store->Lookup(first->key).status()));
}

TEST(CacheTest, LazyBackwardAcrossProcesses) {
  TempDir dir;
  auto store = OpenStore(dir.path());
  WrappingBackend backend;
  std::string key;
  {  // Process 1: forward only, never runs backward.
    Cache cache(store.get(), &backend, {});
    auto r = cache.Compile(Request("mlp_mse__rg.json"));
    ASSERT_THAT(r, IsOk());
    EXPECT_EQ(r->status, ForwardStatus::kMiss);
    key = r->key;
  }
  {  // Process 2: hits the forward; the backward is still pending.
    Cache cache(store.get(), &backend, {});
    auto r = cache.Compile(Request("mlp_mse__rg.json"));
    ASSERT_THAT(r, IsOk());
    EXPECT_EQ(r->status, ForwardStatus::kHit);
    EXPECT_EQ(r->backward, BackwardState::kPending);
  }
  {  // Process 3: asks for the backward, which is compiled now.
    Cache cache(store.get(), &backend, {});
    auto bw = cache.GetBackward(key, nullptr);
    ASSERT_THAT(bw, IsOk());
    EXPECT_EQ(bw->artifact.kind(), v1::ARTIFACT_KIND_BACKWARD);
    EXPECT_EQ(bw->stored_digest, Sha256Hex(DeterministicBytes(bw->artifact)));
    EXPECT_EQ(cache.counters().backward_compiles, 1);
  }
  {  // Process 4: hits both.
    Cache cache(store.get(), &backend, {});
    auto r = cache.Compile(Request("mlp_mse__rg.json"));
    ASSERT_THAT(r, IsOk());
    EXPECT_EQ(r->backward, BackwardState::kReady);
    auto bw = cache.GetBackward(key, nullptr);
    ASSERT_THAT(bw, IsOk());
    EXPECT_EQ(bw->artifact.pairs_with(), Forward(*r).calling_convention_hash());
    EXPECT_EQ(bw->stored_digest, Sha256Hex(DeterministicBytes(bw->artifact)));
    EXPECT_EQ(cache.counters().backward_hits, 1);
    EXPECT_EQ(cache.counters().backward_compiles, 0);
  }
  EXPECT_EQ(backend.forward_compiles, 1);
  EXPECT_EQ(backend.backward_compiles, 1);
}

TEST(CacheTest, BackwardOfAnInferenceEntryIsAFailedPrecondition) {
  TempDir dir;
  auto store = OpenStore(dir.path());
  WrappingBackend backend;
  Cache cache(store.get(), &backend, {});
  auto r = cache.Compile(Request("mlp_mse__nrg.json"));
  ASSERT_THAT(r, IsOk());
  EXPECT_TRUE(
      absl::IsFailedPrecondition(cache.GetBackward(r->key, nullptr).status()));
}

TEST(CacheTest, BackwardIsObtainableAfterTheEntryIsDeleted) {
  TempDir dir;
  auto store = OpenStore(dir.path());
  WrappingBackend backend;
  Cache cache(store.get(), &backend, {});
  CompileRequest request = Request("layer_norm_softmax__rg.json");
  auto r = cache.Compile(request);
  ASSERT_THAT(r, IsOk());
  ASSERT_THAT(store->Delete(r->key), IsOk());
  EXPECT_TRUE(absl::IsNotFound(cache.GetBackward(r->key, nullptr).status()));
  CompileRequest other = Request("mlp_mse__rg.json");
  EXPECT_TRUE(
      absl::IsInvalidArgument(cache.GetBackward(r->key, &other).status()));
  auto bw = cache.GetBackward(r->key, &request);
  ASSERT_THAT(bw, IsOk());
  EXPECT_EQ(bw->artifact.pairs_with(), Forward(*r).calling_convention_hash());
}

TEST(CacheTest, IdenticalConcurrentMissesCompileOnce) {
  TempDir dir;
  auto store = OpenStore(dir.path());
  WrappingBackend backend;
  Cache cache(store.get(), &backend, {});
  constexpr int kClients = 16;
  // The first compile waits until the 15 others are waiting for it (with a
  // deadline: without single-flight they never wait, and the count of
  // compiles below fails instead of the test hanging).
  backend.before_compile = [&](const ArtifactSpec&) {
    if (backend.forward_compiles != 1) return;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (cache.waiting() < kClients - 1 &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
  };
  std::vector<std::thread> clients;
  std::atomic<int> ok{0}, shared{0};
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&] {
      auto r = cache.Compile(Request("assorted_ops__rg.json"));
      if (r.ok()) ++ok;
      if (r.ok() && r->shared_compile) ++shared;
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok.load(), kClients);
  EXPECT_EQ(backend.forward_compiles.load(), 1);
  EXPECT_EQ(cache.counters().misses, 1);
  // Each waiter is told it shared the one compile.
  EXPECT_EQ(shared.load(), kClients - 1);
}

TEST(CacheTest, CorruptArtifactIsRecompiledNeverServed) {
  TempDir dir;
  WrappingBackend backend;
  std::string digest;
  {
    auto store = OpenStore(dir.path());
    Cache cache(store.get(), &backend, {});
    auto r = cache.Compile(Request("mlp_mse__nrg.json"));
    ASSERT_THAT(r, IsOk());
    digest = Sha256Hex(r->forward_bytes);
  }
  // Alter the stored bytes behind the store's back.
  testing::EditRawStore(
      dir.path(), [&](rocksdb::DB* db, const std::string& name,
                      rocksdb::ColumnFamilyHandle* cf) {
        if (name == "artifacts")
          db->Put(rocksdb::WriteOptions(), cf, digest, "garbage");
      });
  auto store = OpenStore(dir.path());
  std::vector<std::string> warnings;
  CacheOptions options;
  options.on_warning = [&](const std::string& w) { warnings.push_back(w); };
  Cache cache(store.get(), &backend, options);
  auto r = cache.Compile(Request("mlp_mse__nrg.json"));
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->status, ForwardStatus::kMiss);  // Recompiled, not served.
  EXPECT_EQ(Sha256Hex(r->forward_bytes), digest);
  EXPECT_EQ(cache.counters().corrupt_artifacts, 1);
  EXPECT_THAT(warnings, ::testing::ElementsAre(::testing::HasSubstr(
                            "artifact " + digest + " is corrupt")));
  auto again = cache.Compile(Request("mlp_mse__nrg.json"));
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(again->status, ForwardStatus::kHit);
  auto report = store->Verify();
  ASSERT_THAT(report, IsOk());
  EXPECT_TRUE(report->corrupt.empty());
}

TEST(CacheTest, AHitByReferenceNamesAStoredArtifactWithoutReadingIt) {
  TempDir dir;
  auto store = OpenStore(dir.path());
  WrappingBackend backend;
  Cache cache(store.get(), &backend, {});
  CompileRequest request = Request("mlp_mse__rg.json");
  request.request_digest = "digest of the request's bytes";
  auto miss = cache.Compile(request);
  ASSERT_THAT(miss, IsOk());
  std::optional<CompileResult> hit =
      cache.HitByRequestDigest(request.request_digest, HitBytes::kByReference);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->forward_digest, miss->forward_digest);
  EXPECT_TRUE(hit->forward_bytes.empty());
  EXPECT_EQ(cache.counters().hits, 1);
  // Asked for inline, the same hit carries the bytes.
  hit = cache.HitByRequestDigest(request.request_digest, HitBytes::kInline);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->forward_bytes, miss->forward_bytes);
}

TEST(CacheTest, ARequestDigestSeenBeforeIsAHitWithoutAnalysis) {
  TempDir dir;
  auto store = OpenStore(dir.path());
  WrappingBackend backend;
  Cache cache(store.get(), &backend, {});
  CompileRequest request = Request("mlp_mse__rg.json");
  request.request_digest = "digest of the request's bytes";
  EXPECT_FALSE(cache.HitByRequestDigest(request.request_digest).has_value());
  auto miss = cache.Compile(request);
  ASSERT_THAT(miss, IsOk());
  std::optional<CompileResult> hit =
      cache.HitByRequestDigest(request.request_digest);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->status, ForwardStatus::kHit);
  EXPECT_EQ(hit->key, miss->key);
  EXPECT_EQ(hit->forward_bytes, miss->forward_bytes);
  EXPECT_EQ(hit->forward_digest, miss->forward_digest);
  EXPECT_EQ(hit->backward, BackwardState::kPending);
  EXPECT_EQ(cache.counters().memoized_hits, 1);
  EXPECT_EQ(cache.counters().hits, 1);
  EXPECT_FALSE(cache.HitByRequestDigest("another digest").has_value());

  // A deleted entry is not answered from the memo: the caller compiles.
  ASSERT_THAT(store->Delete(miss->key), IsOk());
  EXPECT_FALSE(cache.HitByRequestDigest(request.request_digest).has_value());
  auto again = cache.Compile(request);
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(again->status, ForwardStatus::kMiss);
  EXPECT_EQ(backend.forward_compiles, 2);
}

// A store whose writes fail as a full disk would.
class FullDiskStore final : public EntryStore {
 public:
  absl::StatusOr<v1::CacheEntry> Lookup(absl::string_view) const override {
    return absl::NotFoundError("empty");
  }
  absl::StatusOr<v1::CacheEntryHeader> LookupHeader(
      absl::string_view) const override {
    return absl::NotFoundError("empty");
  }
  absl::Status Put(
      const v1::CacheEntry&,
      const std::vector<std::pair<std::string, std::string>>&) override {
    return absl::ResourceExhaustedError("disk full");
  }
  absl::StatusOr<std::string> GetArtifact(absl::string_view) override {
    return absl::NotFoundError("empty");
  }
  bool HasArtifact(absl::string_view) const override { return false; }
  absl::Status RecordHit(absl::string_view) override {
    return absl::OkStatus();
  }
};

TEST(CacheTest, AFailureToStoreNeverFailsTheRequest) {
  FullDiskStore store;
  WrappingBackend backend;
  std::vector<std::string> warnings;
  CacheOptions options;
  options.on_warning = [&](const std::string& w) { warnings.push_back(w); };
  Cache cache(&store, &backend, options);
  auto r = cache.Compile(Request("mlp_mse__rg.json"));
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->status, ForwardStatus::kMiss);
  EXPECT_TRUE(Forward(*r).payload().size() > 0);
  EXPECT_EQ(cache.counters().save_failures, 1);
  EXPECT_THAT(warnings, ::testing::ElementsAre(::testing::HasSubstr(
                            "not saved (answered anyway)")));
  CompileRequest request = Request("mlp_mse__rg.json");
  auto bw = cache.GetBackward(r->key, &request);  // Rebuilt from the request.
  ASSERT_THAT(bw, IsOk());
  EXPECT_EQ(bw->stored_digest, "");  // Not stored: to be answered inline.
}

TEST(CacheTest, AFailedCompileIsRememberedNotRepeated) {
  TempDir dir;
  auto store = OpenStore(dir.path());
  WrappingBackend backend;  // A compiler out of memory on a huge graph.
  backend.fail_with =
      absl::InternalError("the C++ compiler failed: out of memory");
  absl::Time now = absl::FromUnixSeconds(1'000'000);
  CacheOptions options;
  options.clock = [&] { return now; };
  Cache cache(store.get(), &backend, options);
  auto first = cache.Compile(Request("mlp_mse__rg.json"));
  EXPECT_TRUE(absl::IsInternal(first.status())) << first.status();
  auto second = cache.Compile(Request("mlp_mse__rg.json"));
  EXPECT_TRUE(absl::IsInternal(second.status())) << second.status();
  EXPECT_THAT(std::string(second.status().message()),
              ::testing::HasSubstr("out of memory"));
  EXPECT_THAT(std::string(second.status().message()),
              ::testing::HasSubstr("remembered"));
  EXPECT_EQ(backend.forward_compiles.load(), 1);
  EXPECT_EQ(cache.counters().remembered_failures, 1);
  now += absl::Minutes(10);  // The failure memory's default span, past.
  EXPECT_FALSE(cache.Compile(Request("mlp_mse__rg.json")).ok());
  EXPECT_EQ(backend.forward_compiles.load(), 2);

  CacheOptions forgetful;
  forgetful.failure_memory = absl::ZeroDuration();
  Cache again(store.get(), &backend, forgetful);
  EXPECT_FALSE(again.Compile(Request("mlp_mse__rg.json")).ok());
  EXPECT_FALSE(again.Compile(Request("mlp_mse__rg.json")).ok());
  EXPECT_EQ(backend.forward_compiles.load(), 4);
}

TEST(CacheTest, BadRequestsAreInvalidArgument) {
  TempDir dir;
  auto store = OpenStore(dir.path());
  WrappingBackend backend;
  Cache cache(store.get(), &backend, {});
  CompileRequest request = Request("mlp_mse__rg.json");
  request.graph.mutable_nodes(0)->set_op("aten.nope.default");
  auto r = cache.Compile(request);
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  EXPECT_EQ(backend.forward_compiles, 0);
}

}  // namespace
}  // namespace aotcache
