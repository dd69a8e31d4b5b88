// gMock matchers for absl::Status, absl::StatusOr<T>, grpc::Status and
// rocksdb::Status (abseil 20220623 has none of its own):
//   EXPECT_THAT(store->Put(entry), IsOk());
//   EXPECT_THAT(cache.Compile(request),
//               StatusIs(absl::StatusCode::kInvalidArgument,
//                        HasSubstr("node 'x'")));
// A failure prints the status. ASSERT_OK_AND_ASSIGN(lhs, expr) asserts that
// a StatusOr is OK and moves its value into lhs.
// Thread-safety: stateless.
#ifndef AOTCACHE_TESTS_TESTING_STATUS_MATCHERS_H_
#define AOTCACHE_TESTS_TESTING_STATUS_MATCHERS_H_

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace aotcache {
namespace testing {

inline const absl::Status& StatusOf(const absl::Status& status) {
  return status;
}
template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}
// grpc::Status (and other status types with ok(), error_code() and
// error_message()), as the absl::Status of the same code.
template <typename S>
auto StatusOf(const S& s) -> decltype(s.error_message(), absl::Status()) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      s.error_message());
}
// rocksdb::Status, whose codes are its own: any failure is UNKNOWN with
// its text.
template <typename S>
auto StatusOf(const S& s)
    -> decltype(s.ToString(), s.IsNotFound(), absl::Status()) {
  return s.ok() ? absl::OkStatus() : absl::UnknownError(s.ToString());
}

MATCHER(IsOk, negation ? "is not OK" : "is OK") {
  const absl::Status status = StatusOf(arg);
  if (!status.ok()) *result_listener << "which is " << status;
  return status.ok();
}

MATCHER_P2(StatusIs, code, message_matcher,
           std::string(negation ? "is not " : "is ") +
               absl::StatusCodeToString(code) + " with a message that " +
               ::testing::DescribeMatcher<std::string>(message_matcher,
                                                       negation)) {
  const absl::Status status = StatusOf(arg);
  *result_listener << "which is " << status;
  return status.code() == code &&
         ::testing::ExplainMatchResult(
             message_matcher, std::string(status.message()), result_listener);
}

}  // namespace testing
}  // namespace aotcache

#define AOTCACHE_STATUS_MATCHERS_CONCAT_(a, b) a##b
#define AOTCACHE_STATUS_MATCHERS_NAME_(line) \
  AOTCACHE_STATUS_MATCHERS_CONCAT_(status_or_, line)
#define ASSERT_OK_AND_ASSIGN(lhs, expr)                                     \
  ASSERT_OK_AND_ASSIGN_IMPL_(AOTCACHE_STATUS_MATCHERS_NAME_(__LINE__), lhs, \
                             expr)
#define ASSERT_OK_AND_ASSIGN_IMPL_(status_or, lhs, expr) \
  auto status_or = (expr);                               \
  ASSERT_THAT(status_or, ::aotcache::testing::IsOk());   \
  lhs = std::move(status_or).value()

#endif  // AOTCACHE_TESTS_TESTING_STATUS_MATCHERS_H_
