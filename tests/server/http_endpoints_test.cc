// The daemon's HTTP endpoints (--http_listen) on a real daemon: health and
// readiness for anyone, readiness 503 once it drains, /metrics for the admin
// scope only, over plain HTTP and over HTTPS with the daemon's certificate,
// renewed without a restart.
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/key/digest.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/testing/daemon_fixture.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_certificates.h"
#include "tests/testing/wait.h"

namespace aotcache {
namespace {

using ::testing::HasSubstr;

constexpr char kAdminToken[] = "http-admin-token-0123456789";
constexpr char kReadToken[] = "http-read-token-0123456789";

class HttpEndpointsTest : public testing::DaemonFixture {
 protected:
  DaemonOptions Options() override {
    DaemonOptions options = DaemonFixture::Options();
    options.backend_name = "reference";
    options.http_listen = "127.0.0.1:0";
    const std::string tokens = tokens_dir_.path() + "/tokens";
    std::ofstream(tokens) << "ops admin " << Sha256Hex(kAdminToken)
                          << "\nreaders read " << Sha256Hex(kReadToken) << "\n";
    options.tokens_file = tokens;
    return options;
  }

  httplib::Client Client() {
    return httplib::Client("127.0.0.1", daemon_->http_port());
  }

  testing::TempDir tokens_dir_;
};

TEST_F(HttpEndpointsTest, HealthForAnyoneMetricsForTheAdminScope) {
  ASSERT_GT(daemon_->http_port(), 0);
  httplib::Client client = Client();
  httplib::Result health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  httplib::Result ready = client.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);

  httplib::Result anonymous = client.Get("/metrics");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401);
  EXPECT_EQ(anonymous->get_header_value("WWW-Authenticate"), "Bearer");
  httplib::Result reader = client.Get(
      "/metrics", {{"Authorization", absl::StrCat("Bearer ", kReadToken)}});
  ASSERT_TRUE(reader);
  EXPECT_EQ(reader->status, 403);
  EXPECT_THAT(reader->body, HasSubstr("needs the admin scope"));
  httplib::Result admin = client.Get(
      "/metrics", {{"Authorization", absl::StrCat("Bearer ", kAdminToken)}});
  ASSERT_TRUE(admin);
  EXPECT_EQ(admin->status, 200);
  EXPECT_THAT(admin->body, HasSubstr("# TYPE aotcache_hits_total counter"));
  EXPECT_THAT(admin->body, HasSubstr("aotcache_store_entries 0"));
  EXPECT_EQ(client.Get("/other")->status, 404);
}

TEST_F(HttpEndpointsTest, ReadinessFailsOnceTheDaemonDrains) {
  daemon_->Shutdown(std::chrono::milliseconds(0));
  httplib::Client client = Client();
  httplib::Result ready = client.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 503);
  EXPECT_THAT(ready->body, HasSubstr("draining"));
  EXPECT_EQ(client.Get("/healthz")->status, 200);
}

TEST(HttpListenRuleTest, OffLoopbackWithoutTokensIsRefused) {
  testing::TempDir dir;
  DaemonOptions options;
  options.data_dir = dir.path();
  options.backend_name = "reference";
  options.http_listen = "0.0.0.0:0";
  absl::StatusOr<std::unique_ptr<Daemon>> refused = Daemon::Start(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("--http_listen=0.0.0.0:0"));
  options.insecure_allow_anonymous = true;
  EXPECT_THAT(Daemon::Start(options), testing::IsOk());
}

TEST(HttpsTest, TheMetricsListenerSpeaksTlsWithTheDaemonsCertificate) {
  testing::TempDir dir;
  absl::StatusOr<testing::TestCertificates> certificates =
      testing::MakeTestCertificates(dir.path());
  ASSERT_THAT(certificates, testing::IsOk());
  DaemonOptions options;
  options.data_dir = dir.path() + "/data";
  options.backend_name = "reference";
  options.http_listen = "127.0.0.1:0";
  options.tls.cert_file = certificates->server.cert;
  options.tls.key_file = certificates->server.key;
  absl::StatusOr<std::unique_ptr<Daemon>> daemon = Daemon::Start(options);
  ASSERT_THAT(daemon, testing::IsOk());
  httplib::SSLClient tls("127.0.0.1", (*daemon)->http_port());
  tls.set_ca_cert_path(certificates->ca.c_str());
  tls.enable_server_certificate_verification(true);
  httplib::Result metrics = tls.Get("/metrics");
  ASSERT_TRUE(metrics) << httplib::to_string(metrics.error());
  EXPECT_EQ(metrics->status, 200);
  httplib::Client plain("127.0.0.1", (*daemon)->http_port());
  EXPECT_FALSE(plain.Get("/healthz"));
}

// Whether a client trusting only `ca` gets /healthz over HTTPS.
bool TrustedBy(const std::string& ca, int port) {
  httplib::SSLClient tls("127.0.0.1", port);
  tls.set_ca_cert_path(ca.c_str());
  tls.enable_server_certificate_verification(true);
  httplib::Result health = tls.Get("/healthz");
  return health && health->status == 200;
}

TEST(HttpsTest, ARenewedCertificateIsServedWithoutARestart) {
  testing::TempDir dir;
  absl::StatusOr<testing::TestCertificates> certificates =
      testing::MakeTestCertificates(dir.path());
  ASSERT_THAT(certificates, testing::IsOk());
  const std::string cert = dir.path() + "/served.crt";
  const std::string key = dir.path() + "/served.key";
  const auto serve = [&](const std::string& from_cert,
                         const std::string& from_key) {
    std::filesystem::copy_file(
        from_cert, cert, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::copy_file(
        from_key, key, std::filesystem::copy_options::overwrite_existing);
  };
  serve(certificates->server.cert, certificates->server.key);
  DaemonOptions options;
  options.data_dir = dir.path() + "/data";
  options.backend_name = "reference";
  options.http_listen = "127.0.0.1:0";
  options.tls.cert_file = cert;
  options.tls.key_file = key;
  options.tls.reload_interval = std::chrono::seconds(1);
  absl::StatusOr<std::unique_ptr<Daemon>> daemon = Daemon::Start(options);
  ASSERT_THAT(daemon, testing::IsOk());
  const int port = (*daemon)->http_port();
  ASSERT_TRUE(TrustedBy(certificates->ca, port));
  ASSERT_FALSE(TrustedBy(certificates->other_ca, port));

  // A key that is not the certificate's (a renewal half done): the last
  // good pair is still served.
  serve(certificates->other_server.cert, certificates->server.key);
  absl::SleepFor(absl::Milliseconds(1500));
  EXPECT_TRUE(TrustedBy(certificates->ca, port));
  EXPECT_FALSE(TrustedBy(certificates->other_ca, port));

  // The renewal done: the new pair within a few reload intervals.
  serve(certificates->other_server.cert, certificates->other_server.key);
  EXPECT_TRUE(testing::WaitUntil(
      [&] { return TrustedBy(certificates->other_ca, port); },
      absl::Seconds(10)));
  EXPECT_FALSE(TrustedBy(certificates->ca, port));
}

}  // namespace
}  // namespace aotcache
