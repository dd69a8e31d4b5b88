// StatusError: a non-OK absl::Status as a C++ exception, raised in Python as
// the aotcache.errors class of its code (InvalidArgument, Unavailable, ...)
// with the status's message (client_binding.cc registers the translation).
// Thread-safety: a value.
#ifndef AOTCACHE_CLIENT_PYTHON_NATIVE_STATUS_ERROR_H_
#define AOTCACHE_CLIENT_PYTHON_NATIVE_STATUS_ERROR_H_

#include <stdexcept>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace aotcache {

class StatusError : public std::runtime_error {
 public:
  explicit StatusError(const absl::Status& status)
      : std::runtime_error(absl::StrCat(absl::StatusCodeToString(status.code()),
                                        ": ", status.message())),
        code_(absl::StatusCodeToString(status.code())),
        message_(status.message()) {}

  // The code's name, as gRPC spells it ("INVALID_ARGUMENT").
  const std::string& code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  std::string code_;
  std::string message_;
};

inline void Check(const absl::Status& status) {
  if (!status.ok()) throw StatusError(status);
}

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_PYTHON_NATIVE_STATUS_ERROR_H_
