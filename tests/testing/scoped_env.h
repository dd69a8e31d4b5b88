// ScopedEnv: sets (or unsets) an environment variable for a test's scope
// and restores the previous value when it goes away.
// Thread-safety: not thread-safe (setenv); use from the test's thread.
#ifndef AOTCACHE_TESTS_TESTING_SCOPED_ENV_H_
#define AOTCACHE_TESTS_TESTING_SCOPED_ENV_H_

#include <stdlib.h>

#include <optional>
#include <string>

namespace aotcache::testing {

class ScopedEnv {
 public:
  // Unsets `name` when `value` is nullopt.
  ScopedEnv(std::string name, std::optional<std::string> value)
      : name_(std::move(name)) {
    if (const char* old = getenv(name_.c_str())) old_ = old;
    if (value.has_value()) {
      setenv(name_.c_str(), value->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ~ScopedEnv() {
    if (old_.has_value()) {
      setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace aotcache::testing

#endif  // AOTCACHE_TESTS_TESTING_SCOPED_ENV_H_
