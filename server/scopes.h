// Scopes: what a caller of the daemon may do. `read` answers from what is
// cached (a hit, an artifact, a backward compiled before), `compile` lets a
// miss compile (a forward or a backward), `admin` inspects and maintains the
// store (stats, ls, show, rm, verify). A caller holds a set of them; no
// scope implies another.
// Thread-safety: values only.
#ifndef AOTCACHE_SERVER_SCOPES_H_
#define AOTCACHE_SERVER_SCOPES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace aotcache {

enum class Scope : uint8_t { kRead = 1, kCompile = 2, kAdmin = 4 };

class ScopeSet {
 public:
  ScopeSet() = default;
  static ScopeSet All() { return ScopeSet(7); }

  // "read,compile": comma-separated scope names, at least one.
  static absl::StatusOr<ScopeSet> Parse(absl::string_view text);

  bool Has(Scope scope) const { return (bits_ & Bits(scope)) != 0; }
  void Add(Scope scope) { bits_ |= Bits(scope); }
  bool empty() const { return bits_ == 0; }
  std::string ToString() const;  // "read,compile"; "-" when empty.

  friend bool operator==(ScopeSet a, ScopeSet b) { return a.bits_ == b.bits_; }

 private:
  explicit ScopeSet(uint8_t bits) : bits_(bits) {}
  static uint8_t Bits(Scope scope) { return static_cast<uint8_t>(scope); }
  uint8_t bits_ = 0;
};

absl::string_view ScopeName(Scope scope);

// Whether `name` may name a grant: [A-Za-z0-9._@-]+ (it appears in logs
// and metrics).
bool IsGrantName(absl::string_view name);

}  // namespace aotcache

#endif  // AOTCACHE_SERVER_SCOPES_H_
