// Status propagation macros (abseil 20220623 has none of its own).
// Thread-safety: macros only.
#ifndef AOTCACHE_CORE_STATUS_MACROS_H_
#define AOTCACHE_CORE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define AOTCACHE_STATUS_CONCAT_INNER(a, b) a##b
#define AOTCACHE_STATUS_CONCAT(a, b) AOTCACHE_STATUS_CONCAT_INNER(a, b)

// Returns the status of `expr` from the enclosing function if it is not OK.
#define AOTCACHE_RETURN_IF_ERROR(expr)                   \
  do {                                                   \
    ::absl::Status aotcache_status_ = (expr);            \
    if (!aotcache_status_.ok()) return aotcache_status_; \
  } while (false)

// Evaluates `rexpr` (a StatusOr); returns its status if not OK, else moves
// its value into `lhs` (a declaration or an lvalue).
#define AOTCACHE_ASSIGN_OR_RETURN(lhs, rexpr) \
  AOTCACHE_ASSIGN_OR_RETURN_IMPL(             \
      AOTCACHE_STATUS_CONCAT(aotcache_statusor_, __LINE__), lhs, rexpr)

#define AOTCACHE_ASSIGN_OR_RETURN_IMPL(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                   \
  if (!statusor.ok()) return std::move(statusor).status();   \
  lhs = std::move(statusor).value()

#endif  // AOTCACHE_CORE_STATUS_MACROS_H_
