// Artifacts at rest: zstd frames when smaller, their bytes otherwise, told
// apart by the digest of the uncompressed bytes; and a store that writes
// them so (RocksDbStore with ArtifactCompression), read back by stores of
// either setting, a damaged frame never served.
#include "core/store/artifact_codec.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/key/digest.h"
#include "core/store/rocksdb_store.h"
#include "gtest/gtest.h"
#include "tests/testing/raw_store.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;

// Compressible: a program's repetitive text, as artifacts are.
std::string Compressible(int copies) {
  std::string s;
  for (int i = 0; i < copies; ++i) {
    absl::StrAppend(&s, "for (int64_t i = 0; i < n; ++i) out[i] = a[i] * ", i,
                    ";\n");
  }
  return s;
}

std::string Incompressible(size_t n) {
  std::string s;
  uint64_t x = 88172645463325252ull;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s.push_back(static_cast<char>(x));
  }
  return s;
}

TEST(ArtifactCodecTest, CompressibleBytesAreStoredAsASmallerFrame) {
  const std::string bytes = Compressible(500);
  const std::string stored = EncodeArtifact(bytes, ArtifactCompression());
  EXPECT_LT(stored.size() * 4, bytes.size());
  EXPECT_EQ(DecodeArtifact(stored, Sha256Hex(bytes)), bytes);
}

TEST(ArtifactCodecTest, WhatZstdDoesNotShrinkOrNoneIsStoredAsItIs) {
  const std::string random = Incompressible(4096);
  EXPECT_EQ(EncodeArtifact(random, ArtifactCompression()), random);
  const std::string text = Compressible(50);
  ArtifactCompression none;
  none.zstd = false;
  EXPECT_EQ(EncodeArtifact(text, none), text);
  EXPECT_EQ(DecodeArtifact(text, Sha256Hex(text)), text);
}

TEST(ArtifactCodecTest, ADamagedFrameOrWrongBytesDecodeToNothing) {
  const std::string bytes = Compressible(500);
  std::string stored = EncodeArtifact(bytes, ArtifactCompression());
  stored[stored.size() / 2] ^= 0x40;
  EXPECT_EQ(DecodeArtifact(stored, Sha256Hex(bytes)), std::nullopt);
  EXPECT_EQ(DecodeArtifact("other", Sha256Hex(bytes)), std::nullopt);
  // A frame of other bytes is not this artifact either.
  EXPECT_EQ(
      DecodeArtifact(EncodeArtifact(Compressible(400), {}), Sha256Hex(bytes)),
      std::nullopt);
}

TEST(ArtifactCodecTest, RawBytesThatLookLikeAFrameReadAsThemselves) {
  const std::string raw = std::string("\x28\xB5\x2F\xFD", 4) + "not a frame";
  EXPECT_EQ(DecodeArtifact(raw, Sha256Hex(raw)), raw);
  // And a frame stored as the artifact itself (its digest is the frame's).
  const std::string frame = EncodeArtifact(Compressible(500), {});
  EXPECT_EQ(DecodeArtifact(frame, Sha256Hex(frame)), frame);
}

std::unique_ptr<RocksDbStore> Open(const std::string& path, bool zstd) {
  StoreOptions options;
  options.path = path;
  options.compression.zstd = zstd;
  absl::StatusOr<std::unique_ptr<RocksDbStore>> store =
      RocksDbStore::Open(options);
  EXPECT_THAT(store, IsOk());
  return store.ok() ? *std::move(store) : nullptr;
}

v1::CacheEntry Entry(char key, const std::string& digest) {
  v1::CacheEntry e;
  e.set_key(std::string(32, key));
  e.set_mode(v1::MODE_INFERENCE);
  e.set_forward_digest(digest);
  return e;
}

TEST(CompressedStoreTest, EitherSettingReadsWhatTheOtherWrote) {
  testing::TempDir dir;
  const std::string zipped = Compressible(500), plain = Compressible(400);
  {
    auto store = Open(dir.path(), /*zstd=*/true);
    ASSERT_THAT(store->Put(Entry('a', Sha256Hex(zipped)),
                           {{Sha256Hex(zipped), zipped}}),
                IsOk());
    const RocksDbStore::CompressionCounters written = store->compression();
    EXPECT_EQ(written.artifact_bytes, static_cast<int64_t>(zipped.size()));
    EXPECT_LT(written.stored_bytes * 4, written.artifact_bytes);
  }
  {
    auto store = Open(dir.path(), /*zstd=*/false);
    ASSERT_THAT(
        store->Put(Entry('b', Sha256Hex(plain)), {{Sha256Hex(plain), plain}}),
        IsOk());
    EXPECT_EQ(store->compression().stored_bytes,
              static_cast<int64_t>(plain.size()));
    EXPECT_EQ(store->GetArtifact(Sha256Hex(zipped)).value_or(""), zipped);
  }
  auto store = Open(dir.path(), /*zstd=*/true);
  EXPECT_EQ(store->GetArtifact(Sha256Hex(zipped)).value_or(""), zipped);
  EXPECT_EQ(store->GetArtifact(Sha256Hex(plain)).value_or(""), plain);
  ASSERT_OK_AND_ASSIGN(RocksDbStore::VerifyReport report, store->Verify());
  EXPECT_EQ(report.checked, 2);
  EXPECT_TRUE(report.corrupt.empty());
}

TEST(CompressedStoreTest, ADamagedFrameIsDroppedNotServed) {
  testing::TempDir dir;
  const std::string bytes = Compressible(500);
  const std::string digest = Sha256Hex(bytes);
  {
    auto store = Open(dir.path(), /*zstd=*/true);
    ASSERT_THAT(store->Put(Entry('a', digest), {{digest, bytes}}), IsOk());
  }
  testing::EditRawStore(
      dir.path(), [&](rocksdb::DB* db, const std::string& name,
                      rocksdb::ColumnFamilyHandle* cf) {
        if (name != "artifacts") return;
        std::string stored;
        ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), cf, digest, &stored).ok());
        ASSERT_EQ(stored.substr(0, 4), std::string("\x28\xB5\x2F\xFD", 4));
        stored[stored.size() - 3] ^= 0x01;
        ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), cf, digest, stored).ok());
      });
  auto store = Open(dir.path(), /*zstd=*/true);
  EXPECT_TRUE(absl::IsDataLoss(store->GetArtifact(digest).status()));
  EXPECT_FALSE(store->HasArtifact(digest));
}

}  // namespace
}  // namespace aotcache
