// HttpsCertificate: the certificate and key the HTTPS listener
// (http_listener.h) serves, read again from their files when they change --
// checked at a handshake at most once per `reload_interval`, as gRPC's
// listener reads its own -- so a renewed certificate is served without a
// restart. A pair that does not load (a file half written, a key of another
// certificate) keeps the last good one and is tried again at the next
// check. Handed to each handshake by OpenSSL's certificate callback.
// Thread-safety: thread-safe; Install's SSL_CTX must not outlive it.
#ifndef AOTCACHE_SERVER_HTTPS_CERTIFICATE_H_
#define AOTCACHE_SERVER_HTTPS_CERTIFICATE_H_

#include <openssl/ssl.h>

#include <chrono>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace aotcache {

class HttpsCertificate {
 public:
  // FailedPrecondition naming the file when the pair does not load now.
  static absl::StatusOr<std::unique_ptr<HttpsCertificate>> Load(
      std::string cert_file, std::string key_file,
      absl::Duration reload_interval);
  ~HttpsCertificate();

  // Serves it from `ctx`'s handshakes (TLS 1.2 and later).
  void Install(SSL_CTX* ctx);

 private:
  struct Pair;
  HttpsCertificate(std::string cert_file, std::string key_file,
                   absl::Duration reload_interval);
  // The pair in the files; an error naming the file that does not load.
  absl::StatusOr<std::shared_ptr<const Pair>> Read() const;
  // The pair to serve now, read again first when the check is due.
  std::shared_ptr<const Pair> Current();
  static int OnHandshake(SSL* ssl, void* self);

  const std::string cert_file_;
  const std::string key_file_;
  const absl::Duration reload_interval_;
  absl::Mutex mu_;
  std::shared_ptr<const Pair> pair_ ABSL_GUARDED_BY(mu_);
  absl::Time checked_ ABSL_GUARDED_BY(mu_);
};

}  // namespace aotcache

#endif  // AOTCACHE_SERVER_HTTPS_CERTIFICATE_H_
