// AccessControl: who calls the daemon and whether they hold the scope an
// RPC needs (scopes.h). Every handler asks it first.
//
// Who a caller is:
//  - with a tokens file, on the daemon's unix sockets (made 0600: only the
//    daemon's user, or root, can connect): the daemon's own user, named
//    "local", all scopes; on TCP: the grant of the token sent as
//    `authorization: Bearer TOKEN` metadata (read from the metadata, since
//    gRPC sends no call credentials over plaintext), else the grant of the
//    client certificate's identity (mTLS), else nobody (UNAUTHENTICATED);
//  - without one, anyone the listeners admit, all scopes, named
//    "anonymous": loopback, a listener the operator opened with
//    --insecure_allow_anonymous, or, under mTLS, any certificate the client
//    CA signed.
// A refusal is UNAUTHENTICATED (no or an unknown credential) or
// PERMISSION_DENIED (a known caller without the scope), naming the scope
// and the RPC, and is logged with the caller's name, never the token (at
// most once a second, with a count of the rest).
// Thread-safety: thread-safe; Reload may run while calls are checked.
#ifndef AOTCACHE_SERVER_ACCESS_CONTROL_H_
#define AOTCACHE_SERVER_ACCESS_CONTROL_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/server_context.h"
#include "server/scopes.h"
#include "server/token_table.h"

namespace aotcache {

class AccessControl {
 public:
  // Without a tokens file: every caller holds every scope.
  AccessControl() = default;
  // Callers on TCP need a credential in `tokens_file` (TokenTable::Load's
  // errors).
  static absl::StatusOr<std::unique_ptr<AccessControl>> FromTokensFile(
      const std::string& tokens_file);

  // Reads the tokens file again (SIGHUP). On an error the table in use
  // stays, and the error says why. A no-op without a tokens file.
  absl::Status Reload();

  // The caller of `context`, if they hold `scope`; else the refusal, named
  // for `rpc` ("Compile", "ls"). `*caller` (optional) is set either way
  // when the caller is known.
  grpc::Status Check(const grpc::ServerContextBase& context, Scope scope,
                     absl::string_view rpc, Grant* caller = nullptr);
  // Who `context`'s caller is, or UNAUTHENTICATED.
  grpc::Status Identify(const grpc::ServerContextBase& context,
                        Grant* caller) const;
  // For callers outside gRPC (the HTTP listener's /metrics): OK when the
  // `authorization` header's value (empty when absent) grants `scope`, else
  // the refusal as Check's, named for `what`. Without a tokens file every
  // caller holds every scope.
  grpc::Status CheckAuthorization(absl::string_view authorization, Scope scope,
                                  absl::string_view what);
  // A refusal of `caller` for `scope` (PERMISSION_DENIED), logged.
  grpc::Status Refuse(const Grant& caller, Scope scope, absl::string_view rpc);

  bool requires_credentials() const { return !tokens_file_.empty(); }

 private:
  void LogRefusal(const std::string& message);
  std::shared_ptr<const TokenTable> Table() const;

  std::string tokens_file_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const TokenTable> table_ ABSL_GUARDED_BY(mu_);
  absl::Mutex log_mu_;
  absl::Time last_logged_ ABSL_GUARDED_BY(log_mu_) = absl::InfinitePast();
  int64_t unlogged_ ABSL_GUARDED_BY(log_mu_) = 0;
};

}  // namespace aotcache

#endif  // AOTCACHE_SERVER_ACCESS_CONTROL_H_
