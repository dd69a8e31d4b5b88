// TokenTable: who may call the daemon, from its tokens file
// (--tokens_file). One grant per line, `NAME SCOPES CREDENTIAL`:
//
//   # comments and blank lines are skipped
//   ci        read,compile  <sha256 of the token, 64 hex digits>
//   laptops   read          <sha256 of another token>
//   farm      read,compile  x509:farm.example.com
//
// A token is never stored, only its SHA-256 (`aotcache token` makes a token
// and its line); `x509:ID` grants a client certificate (mTLS) whose common
// name or one of whose subject alternative names is ID. Names are
// [A-Za-z0-9._@-]+ and say who called in logs and metrics; a token hash or
// certificate identity appears once.
// Thread-safety: immutable once made; Find* are thread-safe.
#ifndef AOTCACHE_SERVER_TOKEN_TABLE_H_
#define AOTCACHE_SERVER_TOKEN_TABLE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/scopes.h"

namespace aotcache {

struct Grant {
  std::string name;
  ScopeSet scopes;
};

class TokenTable {
 public:
  // InvalidArgument naming the line that does not parse.
  static absl::StatusOr<TokenTable> Parse(absl::string_view text);
  // Reads and parses `path`. FailedPrecondition when another user could
  // write it (they could grant themselves any scope): it must be owned by
  // this user or root and not writable by group or others.
  static absl::StatusOr<TokenTable> Load(const std::string& path);

  // The grant of `token`: its SHA-256 compared with every line's in time
  // that does not depend on where (or whether) it matches.
  std::optional<Grant> FindToken(absl::string_view token) const;
  // The grant of a client certificate known by any of `identities`.
  std::optional<Grant> FindCertificate(
      const std::vector<std::string>& identities) const;

  size_t size() const { return tokens_.size() + certificates_.size(); }

 private:
  struct TokenLine {
    Grant grant;
    std::string sha256_hex;  // 64 lowercase hex digits, as Sha256Hex.
  };
  struct CertificateLine {
    Grant grant;
    std::string identity;
  };
  std::vector<TokenLine> tokens_;
  std::vector<CertificateLine> certificates_;
};

}  // namespace aotcache

#endif  // AOTCACHE_SERVER_TOKEN_TABLE_H_
