#include "tests/testing/raw_store.h"

#include <vector>

#include "core/store/merge_operators.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace aotcache::testing {
namespace {

using ::aotcache::testing::IsOk;

// As the store sets them: without the merge operators RocksDB cannot flush
// the counts, and the open loses data.
rocksdb::ColumnFamilyOptions OptionsFor(const std::string& name) {
  rocksdb::ColumnFamilyOptions cf;
  if (name == "refcounts" || name == "meta") {
    cf.merge_operator = NewCountMergeOperator();
  }
  if (name == "access") cf.merge_operator = NewAccessMergeOperator();
  if (name == "artifacts") {
    cf.enable_blob_files = true;
    cf.min_blob_size = 4096;
  }
  return cf;
}

}  // namespace

void EditRawStore(
    const std::string& path,
    const std::function<void(rocksdb::DB*, const std::string&,
                             rocksdb::ColumnFamilyHandle*)>& edit) {
  std::vector<std::string> names;
  rocksdb::DB::ListColumnFamilies(rocksdb::Options(), path, &names);
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (const std::string& n : names) families.emplace_back(n, OptionsFor(n));
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  rocksdb::Status st =
      rocksdb::DB::Open(rocksdb::DBOptions(), path, families, &handles, &db);
  ASSERT_THAT(st, IsOk());
  for (rocksdb::ColumnFamilyHandle* h : handles) edit(db, h->GetName(), h);
  for (rocksdb::ColumnFamilyHandle* h : handles)
    db->DestroyColumnFamilyHandle(h);
  delete db;
}

}  // namespace aotcache::testing
