#include "server/scopes.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace aotcache {
namespace {

constexpr Scope kScopes[] = {Scope::kRead, Scope::kCompile, Scope::kAdmin};

}  // namespace

absl::string_view ScopeName(Scope scope) {
  switch (scope) {
    case Scope::kRead:
      return "read";
    case Scope::kCompile:
      return "compile";
    case Scope::kAdmin:
      return "admin";
  }
  return "?";
}

absl::StatusOr<ScopeSet> ScopeSet::Parse(absl::string_view text) {
  ScopeSet set;
  for (absl::string_view name : absl::StrSplit(text, ',')) {
    bool known = false;
    for (Scope scope : kScopes) {
      if (name == ScopeName(scope)) {
        set.Add(scope);
        known = true;
      }
    }
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown scope '", name, "' (scopes: read, compile, admin)"));
    }
  }
  return set;
}

bool IsGrantName(absl::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '_' && c != '@' &&
        c != '-') {
      return false;
    }
  }
  return true;
}

std::string ScopeSet::ToString() const {
  std::vector<absl::string_view> names;
  for (Scope scope : kScopes) {
    if (Has(scope)) names.push_back(ScopeName(scope));
  }
  return names.empty() ? "-" : absl::StrJoin(names, ",");
}

}  // namespace aotcache
