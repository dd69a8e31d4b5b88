// HttpListener: the daemon's HTTP endpoints for monitoring (--http_listen):
//   GET /healthz  200 while the process serves (liveness);
//   GET /readyz   200 while it takes calls, 503 with the reason once it
//                 drains (readiness);
//   GET /metrics  Prometheus' text format (DaemonMetrics::Render), for a
//                 caller the `authorize` callback admits (the admin scope:
//                 401 without a known token, 403 without the scope).
// HTTPS with the certificate and key given, read again when they change
// (https_certificate.h).
// Thread-safety: the callbacks run on the listener's threads.
#ifndef AOTCACHE_SERVER_HTTP_LISTENER_H_
#define AOTCACHE_SERVER_HTTP_LISTENER_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/support/status.h"
#include "server/https_certificate.h"

namespace httplib {
class Server;
}

namespace aotcache {

struct HttpListenerOptions {
  std::string listen;     // host:port; port 0 picks a free one.
  std::string cert_file;  // PEM; with key_file: HTTPS.
  std::string key_file;
  absl::Duration reload_interval = absl::Seconds(60);  // Of the two files.
  // Empty while ready; else why not (503).
  std::function<std::string()> not_ready;
  // OK, or UNAUTHENTICATED / PERMISSION_DENIED, for the Authorization
  // header's value (empty when absent).
  std::function<grpc::Status(absl::string_view authorization)> authorize;
  std::function<std::string()> metrics;
};

class HttpListener {
 public:
  // Unavailable when it cannot listen.
  static absl::StatusOr<std::unique_ptr<HttpListener>> Start(
      HttpListenerOptions options);
  ~HttpListener();  // Stops listening; waits for the requests in hand.

  int port() const { return port_; }

 private:
  HttpListener() = default;

  HttpListenerOptions options_;
  std::unique_ptr<HttpsCertificate> certificate_;  // Outlives server_.
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace aotcache

#endif  // AOTCACHE_SERVER_HTTP_LISTENER_H_
