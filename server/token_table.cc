#include "server/token_table.h"

#include <openssl/crypto.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/key/digest.h"

namespace aotcache {
absl::StatusOr<TokenTable> TokenTable::Parse(absl::string_view text) {
  TokenTable table;
  absl::flat_hash_set<std::string> names, credentials;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    auto error = [&](absl::string_view what) {
      return absl::InvalidArgumentError(
          absl::StrCat("tokens file line ", number, ": ", what));
    };
    if (fields.size() != 3) {
      return error("expected NAME SCOPES CREDENTIAL (3 fields)");
    }
    Grant grant{std::string(fields[0]), ScopeSet()};
    if (!IsGrantName(grant.name)) return error("a name is [A-Za-z0-9._@-]+");
    if (!names.insert(grant.name).second) {
      return error(absl::StrCat("the name '", grant.name, "' appears twice"));
    }
    absl::StatusOr<ScopeSet> scopes = ScopeSet::Parse(fields[1]);
    if (!scopes.ok()) return error(scopes.status().message());
    grant.scopes = *scopes;
    absl::string_view credential = fields[2];
    if (!credentials.insert(std::string(credential)).second) {
      return error("this credential appears twice");
    }
    if (absl::ConsumePrefix(&credential, "x509:")) {
      if (credential.empty()) return error("x509: names no identity");
      table.certificates_.push_back({grant, std::string(credential)});
    } else if (IsSha256Hex(credential)) {
      table.tokens_.push_back({grant, std::string(credential)});
    } else {
      return error(
          "the credential is a token's SHA-256 (64 lowercase hex digits; "
          "`aotcache token` makes one) or x509:IDENTITY, not a token itself");
    }
  }
  return table;
}

absl::StatusOr<TokenTable> TokenTable::Load(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "tokens file ", path, ": cannot read it: ", std::strerror(errno)));
  }
  if (st.st_uid != ::geteuid() && st.st_uid != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("tokens file ", path, " belongs to another user (uid ",
                     st.st_uid, "), who could grant any scope"));
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "tokens file %s is writable by other users (mode %04o), who could "
        "grant any scope; chmod go-w it",
        path, st.st_mode & 07777));
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) {
    return absl::FailedPreconditionError(
        absl::StrCat("tokens file ", path, ": cannot read it"));
  }
  absl::StatusOr<TokenTable> table = Parse(text.str());
  if (!table.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", table.status().message()));
  }
  return table;
}

std::optional<Grant> TokenTable::FindToken(absl::string_view token) const {
  // Sha256Hex, not OpenSSL's one-shot SHA256(), which looks the digest up
  // on every call (tens of microseconds under OpenSSL 3's locks).
  const std::string digest = Sha256Hex(token);
  const TokenLine* found = nullptr;
  for (const TokenLine& line : tokens_) {
    // Every line is compared, whatever matched before.
    const bool equal = CRYPTO_memcmp(line.sha256_hex.data(), digest.data(),
                                     digest.size()) == 0;
    if (equal) found = &line;
  }
  if (found == nullptr) return std::nullopt;
  return found->grant;
}

std::optional<Grant> TokenTable::FindCertificate(
    const std::vector<std::string>& identities) const {
  for (const CertificateLine& line : certificates_) {
    for (const std::string& identity : identities) {
      if (identity == line.identity) return line.grant;
    }
  }
  return std::nullopt;
}

}  // namespace aotcache
