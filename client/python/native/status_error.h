// StatusError: a non-OK absl::Status as a C++ exception, raised in Python as
// aotcache._native.Error("CODE: message") (native_module.cc registers it).
// Thread-safety: a value.
#ifndef AOTCACHE_CLIENT_PYTHON_NATIVE_STATUS_ERROR_H_
#define AOTCACHE_CLIENT_PYTHON_NATIVE_STATUS_ERROR_H_

#include <stdexcept>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace aotcache {

class StatusError : public std::runtime_error {
 public:
  explicit StatusError(const absl::Status& status)
      : std::runtime_error(absl::StrCat(absl::StatusCodeToString(status.code()),
                                        ": ", status.message())) {}
};

inline void Check(const absl::Status& status) {
  if (!status.ok()) throw StatusError(status);
}

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_PYTHON_NATIVE_STATUS_ERROR_H_
