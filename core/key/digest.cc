#include "core/key/digest.h"

#include <openssl/evp.h>

namespace aotcache {

namespace {

// Fetched once: OpenSSL 3 looks EVP_sha256() up on every use otherwise.
const EVP_MD* Sha256() {
  static EVP_MD* const sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return sha256;
}

std::string Hex(const unsigned char* digest, unsigned int size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * size);
  for (unsigned int i = 0; i < size; ++i) {
    hex.push_back(kDigits[digest[i] >> 4]);
    hex.push_back(kDigits[digest[i] & 15]);
  }
  return hex;
}

}  // namespace

std::string Sha256Hex(absl::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &size, Sha256(), nullptr);
  return Hex(digest, size);
}

std::string Sha256HexOfPieces(absl::Span<const absl::string_view> pieces) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, Sha256(), nullptr);
  for (absl::string_view piece : pieces) {
    EVP_DigestUpdate(ctx, piece.data(), piece.size());
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_DigestFinal_ex(ctx, digest, &size);
  EVP_MD_CTX_free(ctx);
  return Hex(digest, size);
}

bool IsSha256Hex(absl::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace aotcache
