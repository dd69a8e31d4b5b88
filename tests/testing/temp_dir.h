// A fresh directory under the test's temp dir, removed with everything in
// it when the TempDir goes away.
// Thread-safety: not thread-safe; own it from one test.
#ifndef AOTCACHE_TESTS_TESTING_TEMP_DIR_H_
#define AOTCACHE_TESTS_TESTING_TEMP_DIR_H_

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace aotcache::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "/aotcache_XXXXXX";
    const char* made = mkdtemp(tmpl.data());
    if (made == nullptr) ADD_FAILURE() << "mkdtemp failed for " << tmpl;
    path_ = made != nullptr ? made : tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace aotcache::testing

#endif  // AOTCACHE_TESTS_TESTING_TEMP_DIR_H_
