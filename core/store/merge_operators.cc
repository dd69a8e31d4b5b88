#include "core/store/merge_operators.h"

#include <algorithm>
#include <cstring>

namespace aotcache {
namespace {

template <typename T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

class CountMerge final : public rocksdb::AssociativeMergeOperator {
 public:
  bool Merge(const rocksdb::Slice& /*key*/, const rocksdb::Slice* existing,
             const rocksdb::Slice& value, std::string* new_value,
             rocksdb::Logger* /*logger*/) const override {
    int64_t base = existing == nullptr
                       ? 0
                       : DecodeCount(absl::string_view(existing->data(),
                                                       existing->size()));
    *new_value = EncodeCount(
        base + DecodeCount(absl::string_view(value.data(), value.size())));
    return true;
  }
  const char* Name() const override { return "aotcache.count.v1"; }
};

class AccessMerge final : public rocksdb::AssociativeMergeOperator {
 public:
  bool Merge(const rocksdb::Slice& /*key*/, const rocksdb::Slice* existing,
             const rocksdb::Slice& value, std::string* new_value,
             rocksdb::Logger* /*logger*/) const override {
    uint64_t hits = 0, add = 0;
    int64_t time = 0, t = 0;
    if (existing != nullptr) {
      DecodeAccess(absl::string_view(existing->data(), existing->size()), &hits,
                   &time);
    }
    DecodeAccess(absl::string_view(value.data(), value.size()), &add, &t);
    *new_value = EncodeAccess(hits + add, std::max(time, t));
    return true;
  }
  const char* Name() const override { return "aotcache.access.v1"; }
};

}  // namespace

std::shared_ptr<rocksdb::MergeOperator> NewCountMergeOperator() {
  return std::make_shared<CountMerge>();
}

std::string EncodeCount(int64_t delta) {
  return std::string(reinterpret_cast<const char*>(&delta), sizeof(delta));
}

int64_t DecodeCount(absl::string_view value) {
  return value.size() == sizeof(int64_t) ? Load<int64_t>(value.data()) : 0;
}

std::shared_ptr<rocksdb::MergeOperator> NewAccessMergeOperator() {
  return std::make_shared<AccessMerge>();
}

std::string EncodeAccess(uint64_t hits, int64_t last_access_micros) {
  std::string out(16, '\0');
  std::memcpy(out.data(), &hits, 8);
  std::memcpy(out.data() + 8, &last_access_micros, 8);
  return out;
}

void DecodeAccess(absl::string_view value, uint64_t* hits,
                  int64_t* last_access_micros) {
  *hits = 0;
  *last_access_micros = 0;
  if (value.size() != 16) return;
  *hits = Load<uint64_t>(value.data());
  *last_access_micros = Load<int64_t>(value.data() + 8);
}

}  // namespace aotcache
