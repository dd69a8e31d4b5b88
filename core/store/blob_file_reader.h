// Reads the records of a RocksDB blob file (integrated BlobDB, format
// version 1: a 30-byte header, then per record a 32-byte header, the key and
// the value, then a 32-byte footer) without RocksDB: what a repair reads
// back from the blob files RocksDB's repairer does not recover. Reading
// stops at the first record that does not fit the file; nothing else is
// checked (callers keep only values that match their key's digest).
// Thread-safety: pure function.
#ifndef AOTCACHE_CORE_STORE_BLOB_FILE_READER_H_
#define AOTCACHE_CORE_STORE_BLOB_FILE_READER_H_

#include <string>
#include <utility>
#include <vector>

namespace aotcache {

// The (key, value) records of the uncompressed blob file `path`; none for a
// file that cannot be read, is not a blob file, or is compressed.
std::vector<std::pair<std::string, std::string>> ReadBlobRecords(
    const std::string& path);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_STORE_BLOB_FILE_READER_H_
