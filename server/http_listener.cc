#include "server/http_listener.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "httplib.h"

namespace aotcache {
namespace {

// "host:port" or "[v6]:port" into its host and port.
bool SplitHostPort(const std::string& address, std::string* host, int* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  *host = address.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  return !host->empty() && absl::SimpleAtoi(address.substr(colon + 1), port) &&
         *port >= 0 && *port < 65536;
}

void Text(httplib::Response& response, int status, const std::string& body) {
  response.status = status;
  response.set_content(body, "text/plain; charset=utf-8");
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpListener>> HttpListener::Start(
    HttpListenerOptions options) {
  std::string host;
  int port = 0;
  if (!SplitHostPort(options.listen, &host, &port)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http_listen: '", options.listen, "' is not HOST:PORT"));
  }
  std::unique_ptr<HttpListener> listener(new HttpListener());
  listener->options_ = std::move(options);
  const HttpListenerOptions& o = listener->options_;
  if (!o.cert_file.empty()) {
    absl::StatusOr<std::unique_ptr<HttpsCertificate>> certificate =
        HttpsCertificate::Load(o.cert_file, o.key_file, o.reload_interval);
    if (!certificate.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--http_listen: HTTPS: ", certificate.status().message()));
    }
    listener->certificate_ = *std::move(certificate);
    HttpsCertificate* served = listener->certificate_.get();
    auto tls = std::make_unique<httplib::SSLServer>([served](SSL_CTX& ctx) {
      served->Install(&ctx);
      return true;
    });
    if (!tls->is_valid()) {
      return absl::InternalError("--http_listen: OpenSSL made no context");
    }
    listener->server_ = std::move(tls);
  } else {
    listener->server_ = std::make_unique<httplib::Server>();
  }
  httplib::Server& server = *listener->server_;
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& r) {
    Text(r, 200, "ok\n");
  });
  server.Get("/readyz", [&o](const httplib::Request&, httplib::Response& r) {
    const std::string why = o.not_ready();
    if (why.empty()) {
      Text(r, 200, "ready\n");
    } else {
      Text(r, 503, why + "\n");
    }
  });
  server.Get("/metrics", [&o](const httplib::Request& q, httplib::Response& r) {
    const grpc::Status allowed =
        o.authorize(q.get_header_value("Authorization"));
    if (allowed.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
      r.set_header("WWW-Authenticate", "Bearer");
      Text(r, 401, allowed.error_message() + "\n");
    } else if (!allowed.ok()) {
      Text(r, 403, allowed.error_message() + "\n");
    } else {
      r.set_content(o.metrics(), "text/plain; version=0.0.4; charset=utf-8");
    }
  });
  listener->port_ = port == 0 ? server.bind_to_any_port(host)
                              : (server.bind_to_port(host, port) ? port : -1);
  if (listener->port_ <= 0) {
    return absl::UnavailableError(absl::StrCat(
        "--http_listen: cannot listen on ", o.listen, " (is it in use?)"));
  }
  listener->thread_ = std::thread([&server] { server.listen_after_bind(); });
  return listener;
}

HttpListener::~HttpListener() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace aotcache
