#include "server/access_control.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "grpc/grpc_security_constants.h"

namespace aotcache {
namespace {

constexpr absl::string_view kBearer = "Bearer ";

bool OnUnixSocket(const grpc::ServerContextBase& context) {
  return absl::StartsWith(context.peer(), "unix:");
}

std::vector<std::string> CertificateIdentities(
    const grpc::ServerContextBase& context) {
  std::vector<std::string> identities;
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr || !auth->IsPeerAuthenticated()) return identities;
  for (const char* property :
       {GRPC_X509_CN_PROPERTY_NAME, GRPC_X509_SAN_PROPERTY_NAME}) {
    for (const grpc::string_ref& value : auth->FindPropertyValues(property)) {
      identities.emplace_back(value.data(), value.size());
    }
  }
  return identities;
}

// The grant of `value`, an authorization header's or metadata's value.
grpc::Status GrantOfBearer(const TokenTable& table, absl::string_view value,
                           Grant* caller) {
  // The scheme is case-insensitive (RFC 6750, RFC 9110).
  if (!absl::StartsWithIgnoreCase(value, kBearer)) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "the authorization is not 'Bearer TOKEN'");
  }
  value.remove_prefix(kBearer.size());
  std::optional<Grant> grant = table.FindToken(value);
  if (!grant.has_value()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "unknown token (not in the daemon's tokens file)");
  }
  *caller = *std::move(grant);
  return grpc::Status::OK;
}

}  // namespace

absl::StatusOr<std::unique_ptr<AccessControl>> AccessControl::FromTokensFile(
    const std::string& tokens_file) {
  auto access = std::make_unique<AccessControl>();
  access->tokens_file_ = tokens_file;
  absl::StatusOr<TokenTable> table = TokenTable::Load(tokens_file);
  if (!table.ok()) return table.status();
  access->table_ = std::make_shared<const TokenTable>(*std::move(table));
  return access;
}

absl::Status AccessControl::Reload() {
  if (tokens_file_.empty()) return absl::OkStatus();
  absl::StatusOr<TokenTable> table = TokenTable::Load(tokens_file_);
  if (!table.ok()) return table.status();
  absl::MutexLock lock(&mu_);
  table_ = std::make_shared<const TokenTable>(*std::move(table));
  return absl::OkStatus();
}

grpc::Status AccessControl::Identify(const grpc::ServerContextBase& context,
                                     Grant* caller) const {
  // Nothing to look up without a tokens file: a hit pays nothing here.
  if (tokens_file_.empty()) {
    *caller = Grant{"anonymous", ScopeSet::All()};
    return grpc::Status::OK;
  }
  if (OnUnixSocket(context)) {
    *caller = Grant{"local", ScopeSet::All()};
    return grpc::Status::OK;
  }
  std::shared_ptr<const TokenTable> table = Table();
  const auto& metadata = context.client_metadata();
  auto header = metadata.find("authorization");
  if (header != metadata.end()) {
    return GrantOfBearer(
        *table, absl::string_view(header->second.data(), header->second.size()),
        caller);
  }
  std::vector<std::string> identities = CertificateIdentities(context);
  if (!identities.empty()) {
    std::optional<Grant> grant = table->FindCertificate(identities);
    if (!grant.has_value()) {
      return grpc::Status(
          grpc::StatusCode::UNAUTHENTICATED,
          absl::StrCat("the client certificate of '", identities.front(),
                       "' has no grant in the daemon's tokens file"));
    }
    *caller = *std::move(grant);
    return grpc::Status::OK;
  }
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      "this daemon needs a token (AOTCACHE_TOKEN, sent as "
                      "'authorization: Bearer TOKEN') or a client "
                      "certificate");
}

grpc::Status AccessControl::Check(const grpc::ServerContextBase& context,
                                  Scope scope, absl::string_view rpc,
                                  Grant* caller) {
  Grant who;
  grpc::Status identified = Identify(context, &who);
  if (!identified.ok()) {
    grpc::Status refused(identified.error_code(),
                         absl::StrCat(rpc, " needs the ", ScopeName(scope),
                                      " scope: ", identified.error_message()));
    LogRefusal(absl::StrCat("refused ", rpc, " from ", context.peer(), ": ",
                            identified.error_message()));
    return refused;
  }
  if (caller != nullptr) *caller = who;
  if (!who.scopes.Has(scope)) return Refuse(who, scope, rpc);
  return grpc::Status::OK;
}

grpc::Status AccessControl::CheckAuthorization(absl::string_view authorization,
                                               Scope scope,
                                               absl::string_view what) {
  if (tokens_file_.empty()) return grpc::Status::OK;
  Grant who;
  grpc::Status identified =
      authorization.empty() ? grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                                           "this daemon needs a token, sent as "
                                           "'Authorization: Bearer TOKEN'")
                            : GrantOfBearer(*Table(), authorization, &who);
  if (!identified.ok()) {
    LogRefusal(
        absl::StrCat("refused ", what, ": ", identified.error_message()));
    return grpc::Status(identified.error_code(),
                        absl::StrCat(what, " needs the ", ScopeName(scope),
                                     " scope: ", identified.error_message()));
  }
  if (!who.scopes.Has(scope)) return Refuse(who, scope, what);
  return grpc::Status::OK;
}

std::shared_ptr<const TokenTable> AccessControl::Table() const {
  absl::MutexLock lock(&mu_);
  return table_;
}

grpc::Status AccessControl::Refuse(const Grant& caller, Scope scope,
                                   absl::string_view rpc) {
  std::string message = absl::StrCat(
      rpc, " needs the ", ScopeName(scope), " scope, which '", caller.name,
      "' does not hold (it holds ", caller.scopes.ToString(), ")");
  LogRefusal(absl::StrCat("refused: ", message));
  return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, message);
}

void AccessControl::LogRefusal(const std::string& message) {
  absl::MutexLock lock(&log_mu_);
  const absl::Time now = absl::Now();
  if (now - last_logged_ < absl::Seconds(1)) {
    ++unlogged_;
    return;
  }
  if (unlogged_ > 0) {
    LOG(WARNING) << message << " (and " << unlogged_
                 << " refusals not logged in the second before)";
  } else {
    LOG(WARNING) << message;
  }
  last_logged_ = now;
  unlogged_ = 0;
}

}  // namespace aotcache
