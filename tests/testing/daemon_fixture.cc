#include "tests/testing/daemon_fixture.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "tests/testing/status_matchers.h"

namespace aotcache::testing {

DaemonOptions DaemonFixture::Options() {
  DaemonOptions options;
  options.data_dir = dir_.path();
  return options;
}

void DaemonFixture::SetUp() {
  absl::StatusOr<std::unique_ptr<Daemon>> daemon = Daemon::Start(Options());
  ASSERT_THAT(daemon, IsOk());
  daemon_ = *std::move(daemon);
  channel_ = grpc::CreateChannel(address(), grpc::InsecureChannelCredentials());
  compile_ = v1::CompileService::NewStub(channel_);
  admin_ = v1::AdminService::NewStub(channel_);
}

std::string DaemonFixture::address() const {
  return absl::StrCat("127.0.0.1:", daemon_->port());
}

grpc::Status DaemonFixture::Compile(const v1::CompileRequest& request,
                                    v1::CompileResponse* response,
                                    absl::Duration deadline) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   absl::ToChronoMilliseconds(deadline));
  return compile_->Compile(&ctx, request, response);
}

}  // namespace aotcache::testing
