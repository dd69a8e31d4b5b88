// The daemon's hit path: the frames it reads requests and writes answers
// with are the bytes of CompileRequest and CompileResponse, and a repeated
// request is answered, without decoding, with what the full path answers.
#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"
#include "aotcache/v1/compile_frames.pb.h"
#include "aotcache/v1/service.grpc.pb.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/impl/client_unary_call.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "server/daemon.h"
#include "tests/testing/daemon_fixture.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using ::google::protobuf::util::MessageDifferencer;

v1::CompileRequest Request(const std::string& fixture) {
  v1::CompileRequest r;
  *r.mutable_graph() = testing::LoadGraphOrDie("graphs/" + fixture);
  r.mutable_options()->set_keep_input_mutations(true);
  r.mutable_target()->set_arch("x86_64");
  r.mutable_target()->set_abi("linux-gnu");
  r.set_artifacts_by_reference(true);
  return r;
}

TEST(CompileFramesTest, ARequestFrameHoldsTheRequestsParts) {
  v1::CompileRequest request = Request("mlp_mse__rg.json");
  v1::CompileRequestFrame frame;
  ASSERT_TRUE(frame.ParseFromString(request.SerializeAsString()));
  EXPECT_EQ(frame.graph(), request.graph().SerializeAsString());
  EXPECT_EQ(frame.options(), request.options().SerializeAsString());
  EXPECT_EQ(frame.target(), request.target().SerializeAsString());
  EXPECT_TRUE(frame.artifacts_by_reference());
  EXPECT_EQ(frame.SerializeAsString(), request.SerializeAsString());
}

TEST(CompileFramesTest, AResponseFrameIsACompileResponse) {
  v1::CompileResponse expected;
  expected.set_key(std::string(32, '\x7f'));
  expected.set_mode(v1::MODE_TRAINING);
  expected.set_status(v1::COMPILE_STATUS_HIT);
  expected.set_bypass_reason("why not");
  expected.set_backward(v1::BACKWARD_STATE_PENDING);
  expected.mutable_metadata()->add_inputs_after()->add_shape(3);
  expected.mutable_forward()->set_payload("the program");
  expected.mutable_forward()->set_calling_convention_hash("abc");
  expected.set_compile_seconds(1.5);
  expected.set_forward_digest("0123");

  v1::CompileResponseFrame frame;
  frame.set_key(expected.key());
  frame.set_mode(expected.mode());
  frame.set_status(expected.status());
  frame.set_bypass_reason(expected.bypass_reason());
  frame.set_backward(expected.backward());
  frame.set_metadata(expected.metadata().SerializeAsString());
  frame.set_forward(expected.forward().SerializeAsString());
  frame.set_compile_seconds(expected.compile_seconds());
  frame.set_forward_digest(expected.forward_digest());
  v1::CompileResponse decoded;
  ASSERT_TRUE(decoded.ParseFromString(frame.SerializeAsString()));
  EXPECT_TRUE(MessageDifferencer::Equals(decoded, expected))
      << decoded.DebugString();
}

class CompileHitPathTest : public testing::DaemonFixture {
 protected:
  v1::CompileResponse Compile(const v1::CompileRequest& r) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(30));
    v1::CompileResponse response;
    grpc::Status status = compile_->Compile(&ctx, r, &response);
    EXPECT_THAT(status, IsOk());
    return response;
  }
};

TEST_F(CompileHitPathTest, ARepeatedRequestGetsTheFullPathsAnswer) {
  for (bool by_reference : {false, true}) {
    SCOPED_TRACE(by_reference ? "by reference" : "inline");
    v1::CompileRequest request = Request("assorted_ops__rg.json");
    request.set_artifacts_by_reference(by_reference);
    v1::CompileResponse first = Compile(request);
    v1::CompileResponse second = Compile(request);
    EXPECT_EQ(second.status(), v1::COMPILE_STATUS_HIT);
    // The same answer but for the status; the compile time is the recorded
    // one.
    first.set_status(v1::COMPILE_STATUS_HIT);
    EXPECT_TRUE(MessageDifferencer::Equals(second, first))
        << second.ShortDebugString() << "\nvs\n"
        << first.ShortDebugString();
    EXPECT_EQ(second.has_forward(), !by_reference);
    EXPECT_EQ(second.forward_digest().size(), 64u);
  }
  // The first inline request missed and the first by reference was a hit
  // by the full path; each repeat was answered from its bytes.
  grpc::ClientContext ctx;
  v1::StatsResponse stats;
  ASSERT_TRUE(v1::AdminService::NewStub(channel_)
                  ->Stats(&ctx, v1::StatsRequest(), &stats)
                  .ok());
  EXPECT_EQ(stats.memoized_hits(), 2);
  EXPECT_EQ(stats.hits(), 3);

  // The full path's hit, after a restart has emptied the memo, agrees.
  v1::CompileRequest request = Request("assorted_ops__rg.json");
  v1::CompileResponse memoized = Compile(request);
  daemon_.reset();
  SetUp();
  v1::CompileResponse full = Compile(request);
  EXPECT_EQ(daemon_->cache().counters().memoized_hits, 0);
  EXPECT_TRUE(MessageDifferencer::Equals(full, memoized));
}

TEST_F(CompileHitPathTest, BytesThatAreNotACompileRequestAreInvalidArgument) {
  grpc::internal::RpcMethod compile("/aotcache.v1.CompileService/Compile",
                                    grpc::internal::RpcMethod::NORMAL_RPC);
  // Not a message; a graph field cut short; a graph field whose bytes are
  // not a Graph (caught after the fast path, on decoding).
  for (const std::string& bytes : {std::string("\xff\xff\xff", 3),
                                   std::string("\x0a\x05"
                                               "ab",
                                               4),
                                   std::string("\x0a\x02\xff\xff", 4)}) {
    grpc::ClientContext ctx;
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1), response;
    grpc::Status status =
        grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
            channel_.get(), compile, &ctx, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(status.error_message().find("not a CompileRequest"),
              std::string::npos)
        << status.error_message();
  }
}

}  // namespace
}  // namespace aotcache
