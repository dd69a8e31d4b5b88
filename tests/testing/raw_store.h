// Tampering with a closed store's database behind its back, for tests of
// corruption handling and on-disk checks.
// Thread-safety: functions only; the store must be closed.
#ifndef AOTCACHE_TESTS_TESTING_RAW_STORE_H_
#define AOTCACHE_TESTS_TESTING_RAW_STORE_H_

#include <functional>
#include <string>

#include "rocksdb/db.h"

namespace aotcache::testing {

// Opens the database at `path` with every column family (and the options
// the store gives them), calls `edit(db, column_family_name, handle)` for
// each family, and closes it.
void EditRawStore(
    const std::string& path,
    const std::function<void(rocksdb::DB*, const std::string&,
                             rocksdb::ColumnFamilyHandle*)>& edit);

}  // namespace aotcache::testing

#endif  // AOTCACHE_TESTS_TESTING_RAW_STORE_H_
