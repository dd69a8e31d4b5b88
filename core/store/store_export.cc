#include "core/store/store_export.h"

#include <set>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

std::vector<std::string> DigestsOf(const v1::CacheEntry& entry) {
  std::vector<std::string> digests = {entry.forward_digest()};
  if (!entry.backward_digest().empty()) {
    digests.push_back(entry.backward_digest());
  }
  return digests;
}

}  // namespace

absl::StatusOr<ExportCounts> ExportStore(RocksDbStore& store,
                                         absl::string_view key_prefix,
                                         ExportWriter& writer) {
  ExportCounts counts;
  std::set<std::string> carried;
  auto write = [&](const v1::CacheEntry& entry) -> absl::Status {
    std::vector<std::pair<std::string, std::string>> artifacts;
    for (const std::string& digest : DigestsOf(entry)) {
      if (carried.count(digest)) continue;
      absl::StatusOr<std::string> bytes = store.GetArtifact(digest);
      if (!bytes.ok()) {
        ++counts.skipped;  // Missing or corrupt: the entry is left out.
        return absl::OkStatus();
      }
      artifacts.emplace_back(digest, *std::move(bytes));
    }
    for (const auto& [digest, bytes] : artifacts) {
      AOTCACHE_RETURN_IF_ERROR(writer.AddArtifact(digest, bytes));
      carried.insert(digest);
      ++counts.artifacts;
    }
    ++counts.entries;
    return writer.AddEntry(entry);
  };
  if (key_prefix.size() >= 32) {  // A whole key.
    absl::StatusOr<v1::CacheEntry> entry = store.Lookup(key_prefix);
    if (entry.ok()) AOTCACHE_RETURN_IF_ERROR(write(*entry));
  } else {
    // Keys are listed in order from the prefix on, until one does not
    // begin with it.
    std::string token(key_prefix);
    bool past = false;
    while (!past) {
      AOTCACHE_ASSIGN_OR_RETURN(RocksDbStore::Page page,
                                store.List(token, 500));
      for (const v1::CacheEntry& entry : page.entries) {
        past = !absl::StartsWith(entry.key(), key_prefix);
        if (past) break;
        AOTCACHE_RETURN_IF_ERROR(write(entry));
      }
      token = page.next_page_token;
      past = past || token.empty();
    }
  }
  AOTCACHE_RETURN_IF_ERROR(writer.Finish());
  return counts;
}

ExportReader::Handlers StoreImporter::Handlers() {
  ExportReader::Handlers handlers;
  handlers.artifact = [this](const std::string& digest, std::string bytes) {
    pending_[digest] = std::move(bytes);
    return absl::OkStatus();
  };
  handlers.entry = [this](v1::CacheEntry entry) {
    return Entry(std::move(entry));
  };
  return handlers;
}

absl::Status StoreImporter::Entry(v1::CacheEntry entry) {
  absl::StatusOr<std::string> key = key_of_(entry);
  if (!key.ok() || *key != entry.key()) {
    if (refused_++ == 0) {
      refused_reason_ = absl::StrCat(
          "entry ", absl::BytesToHexString(entry.key()), ": ",
          key.ok() ? "its key is not the one this daemon gives its graph "
                     "(another backend, compiler or build made it, or the "
                     "file was altered)"
                   : key.status().message());
    }
    return absl::OkStatus();
  }
  std::vector<std::pair<std::string, std::string>> artifacts;
  const std::vector<std::string> digests = DigestsOf(entry);
  for (const std::string& digest : digests) {
    auto it = pending_.find(digest);
    if (it != pending_.end()) {
      artifacts.emplace_back(digest, it->second);
    } else if (!store_->HasArtifact(digest)) {
      return absl::DataLossError(absl::StrCat(
          "references artifact ", digest, ", which the stream did not carry"));
    }
  }
  if (store_->Lookup(entry.key()).ok()) {
    ++present_;
  } else {
    AOTCACHE_RETURN_IF_ERROR(store_->Put(entry, artifacts));
    ++imported_;
  }
  // Stored now (or held already): an entry after this one that shares them
  // finds them in the store.
  for (const std::string& digest : digests) pending_.erase(digest);
  return absl::OkStatus();
}

}  // namespace aotcache
