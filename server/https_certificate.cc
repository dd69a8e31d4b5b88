#include "server/https_certificate.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace aotcache {

struct HttpsCertificate::Pair {
  Pair() = default;
  Pair(const Pair&) = delete;
  Pair& operator=(const Pair&) = delete;
  ~Pair() {
    X509_free(leaf);
    sk_X509_pop_free(chain, X509_free);
    EVP_PKEY_free(key);
  }

  std::string cert_pem;  // The files' bytes, to tell a change.
  std::string key_pem;
  X509* leaf = nullptr;
  STACK_OF(X509) * chain = nullptr;  // The certificates after the leaf.
  EVP_PKEY* key = nullptr;
};

namespace {

absl::StatusOr<std::string> ReadWholeFile(const std::string& path,
                                          const char* what) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  if (!in || !(bytes << in.rdbuf())) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " ", path, ": cannot read it"));
  }
  return bytes.str();
}

using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;

Bio MemoryBio(const std::string& bytes) {
  return Bio(BIO_new_mem_buf(bytes.data(), static_cast<int>(bytes.size())),
             BIO_free);
}

}  // namespace

HttpsCertificate::HttpsCertificate(std::string cert_file, std::string key_file,
                                   absl::Duration reload_interval)
    : cert_file_(std::move(cert_file)),
      key_file_(std::move(key_file)),
      reload_interval_(reload_interval) {}

HttpsCertificate::~HttpsCertificate() = default;

absl::StatusOr<std::unique_ptr<HttpsCertificate>> HttpsCertificate::Load(
    std::string cert_file, std::string key_file,
    absl::Duration reload_interval) {
  std::unique_ptr<HttpsCertificate> certificate(new HttpsCertificate(
      std::move(cert_file), std::move(key_file), reload_interval));
  absl::StatusOr<std::shared_ptr<const Pair>> pair = certificate->Read();
  if (!pair.ok()) return pair.status();
  absl::MutexLock lock(&certificate->mu_);
  certificate->pair_ = *std::move(pair);
  certificate->checked_ = absl::Now();
  return certificate;
}

absl::StatusOr<std::shared_ptr<const HttpsCertificate::Pair>>
HttpsCertificate::Read() const {
  auto pair = std::make_shared<Pair>();
  absl::StatusOr<std::string> cert = ReadWholeFile(cert_file_, "certificate");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadWholeFile(key_file_, "key");
  if (!key.ok()) return key.status();
  pair->cert_pem = *std::move(cert);
  pair->key_pem = *std::move(key);
  Bio certs = MemoryBio(pair->cert_pem);
  pair->leaf = PEM_read_bio_X509(certs.get(), nullptr, nullptr, nullptr);
  pair->chain = sk_X509_new_null();
  while (X509* next =
             PEM_read_bio_X509(certs.get(), nullptr, nullptr, nullptr)) {
    sk_X509_push(pair->chain, next);
  }
  Bio key_bio = MemoryBio(pair->key_pem);
  pair->key = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr);
  ERR_clear_error();  // The end of the chain reads as an error.
  if (pair->leaf == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("certificate ", cert_file_, ": no PEM certificate"));
  }
  if (pair->key == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("key ", key_file_, ": no PEM private key"));
  }
  if (X509_check_private_key(pair->leaf, pair->key) != 1) {
    ERR_clear_error();
    return absl::FailedPreconditionError(absl::StrCat(
        "key ", key_file_, " does not match the certificate ", cert_file_));
  }
  return pair;
}

std::shared_ptr<const HttpsCertificate::Pair> HttpsCertificate::Current() {
  absl::MutexLock lock(&mu_);
  const absl::Time now = absl::Now();
  if (now - checked_ < reload_interval_) return pair_;
  checked_ = now;
  absl::StatusOr<std::string> cert = ReadWholeFile(cert_file_, "certificate");
  absl::StatusOr<std::string> key = ReadWholeFile(key_file_, "key");
  if (cert.ok() && key.ok() &&
      (*cert != pair_->cert_pem || *key != pair_->key_pem)) {
    // A pair that does not load yet (one file renewed, not the other)
    // keeps the last good one.
    if (absl::StatusOr<std::shared_ptr<const Pair>> fresh = Read();
        fresh.ok()) {
      pair_ = *std::move(fresh);
    }
  }
  return pair_;
}

int HttpsCertificate::OnHandshake(SSL* ssl, void* self) {
  const std::shared_ptr<const Pair> pair =
      static_cast<HttpsCertificate*>(self)->Current();
  // Each takes its own reference: the pair may be replaced meanwhile.
  return SSL_use_certificate(ssl, pair->leaf) == 1 &&
                 SSL_use_PrivateKey(ssl, pair->key) == 1 &&
                 SSL_set1_chain(ssl, pair->chain) == 1
             ? 1
             : 0;
}

void HttpsCertificate::Install(SSL_CTX* ctx) {
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION);
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_cert_cb(ctx, &HttpsCertificate::OnHandshake, this);
}

}  // namespace aotcache
