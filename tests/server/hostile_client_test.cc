// One hostile client against a real aotcached (native backend where the
// compiler runs, 127.0.0.1:0, RocksDB in a temp dir): about a hundred
// malformed and oversized requests, each answered with a clear status
// naming the field or node at fault, while a well-formed client is served
// between every two of them, and the daemon is up at the end.
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "aotcache/v1/service.grpc.pb.h"
#include "grpcpp/create_channel.h"
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
using ::aotcache::testing::TempDir;

// x [2, 3] float32 -> neg -> y; a constant c [3]; add(y, c) -> z.
constexpr char kBase[] = R"json({
  "inputs": [{"name": "x", "storage": 0, "meta": {"shape": [2, 3],
              "dtype": "DTYPE_FLOAT32", "requires_grad": true,
              "is_leaf": true}}],
  "storages": [{"id": 0, "size": 6}],
  "constants": [{"name": "c", "meta": {"shape": [3], "dtype": "DTYPE_FLOAT32"},
                 "data": "AAAAAAAAAAAAAAAA"}],
  "nodes": [
    {"name": "y", "op": "aten.neg.default", "args": [{"node": "x"}],
     "grad_mode": "GRAD_MODE_ENABLED"},
    {"name": "z", "op": "aten.add.Tensor",
     "args": [{"node": "y"}, {"node": "c"}], "grad_mode": "GRAD_MODE_ENABLED"}],
  "outputs": ["z"]})json";

struct Case {
  std::string name;
  std::function<void(v1::CompileRequest&)> edit;
  // Acceptable codes, and a substring the message must hold (the field or
  // node at fault) when the request is refused.
  std::vector<grpc::StatusCode> codes;
  std::string names;
};

v1::TensorMeta* X(v1::CompileRequest& r) {
  return r.mutable_graph()->mutable_inputs(0)->mutable_meta();
}
v1::Node* Node(v1::CompileRequest& r, int i) {
  return r.mutable_graph()->mutable_nodes(i);
}

constexpr auto kInvalid = grpc::StatusCode::INVALID_ARGUMENT;
constexpr auto kExhausted = grpc::StatusCode::RESOURCE_EXHAUSTED;
constexpr auto kOk = grpc::StatusCode::OK;
constexpr auto kPrecondition = grpc::StatusCode::FAILED_PRECONDITION;

std::vector<Case> Cases() {
  std::vector<Case> cases;
  const int64_t big = int64_t{1} << 40;
  const int64_t max = std::numeric_limits<int64_t>::max();
  // Shapes, strides, offsets, storages.
  for (int64_t size : {int64_t{-1}, int64_t{-7}, big, max, int64_t{1} << 62}) {
    for (int dim : {0, 1}) {
      cases.push_back({absl::StrCat("size ", size, " in dim ", dim),
                       [=](auto& r) { X(r)->set_shape(dim, size); },
                       {kInvalid, kExhausted},
                       "inputs[0]"});
    }
  }
  cases.push_back({"empty dim beside overflowing ones",
                   [=](auto& r) {
                     X(r)->set_shape(0, 0);
                     X(r)->set_shape(1, big);
                     X(r)->add_shape(big);
                   },
                   {kInvalid, kExhausted},
                   "inputs[0]"});
  for (int64_t stride : {int64_t{-1}, big, max}) {
    cases.push_back({absl::StrCat("stride ", stride),
                     [=](auto& r) {
                       X(r)->add_stride(stride);
                       X(r)->add_stride(1);
                     },
                     {kInvalid, kExhausted},
                     "inputs[0]"});
  }
  cases.push_back({"one stride for two dims",
                   [](auto& r) { X(r)->add_stride(1); },
                   {kInvalid},
                   "inputs[0]"});
  for (int64_t offset : {int64_t{-1}, int64_t{1}, big, max}) {
    cases.push_back({absl::StrCat("storage offset ", offset),
                     [=](auto& r) { X(r)->set_storage_offset(offset); },
                     {kInvalid, kExhausted},
                     "inputs[0]"});
  }
  for (int64_t storage : {int64_t{0}, int64_t{5}, int64_t{-1}}) {
    cases.push_back({absl::StrCat("storage of ", storage),
                     [=](auto& r) {
                       r.mutable_graph()->mutable_storages(0)->set_size(
                           storage);
                     },
                     {kInvalid, kExhausted},
                     "storage"});
  }
  cases.push_back(
      {"an unknown storage id",
       [](auto& r) { r.mutable_graph()->mutable_inputs(0)->set_storage(9); },
       {kInvalid},
       "storage"});
  cases.push_back({"rank 100",
                   [](auto& r) {
                     X(r)->clear_shape();
                     for (int i = 0; i < 100; ++i) X(r)->add_shape(1);
                   },
                   {kInvalid, kExhausted},
                   "inputs[0]"});
  cases.push_back({"no dtype",
                   [](auto& r) { X(r)->clear_dtype(); },
                   {kInvalid},
                   "inputs[0]"});
  cases.push_back({"a cuda input",
                   [](auto& r) { X(r)->set_device("cuda:0"); },
                   {kInvalid},
                   "inputs[0]"});
  // Constants whose bytes do not match their dtype and shape.
  for (size_t bytes : {size_t{0}, size_t{11}, size_t{13}, size_t{1} << 20}) {
    cases.push_back({absl::StrCat("constant of ", bytes, " bytes"),
                     [=](auto& r) {
                       r.mutable_graph()->mutable_constants(0)->set_data(
                           std::string(bytes, '\1'));
                     },
                     {kInvalid, kExhausted},
                     "constant"});
  }
  cases.push_back({"a constant requiring grad",
                   [](auto& r) {
                     r.mutable_graph()
                         ->mutable_constants(0)
                         ->mutable_meta()
                         ->set_requires_grad(true);
                   },
                   {kInvalid},
                   "constant"});
  cases.push_back(
      {"a constant of shape [-3]",
       [](auto& r) {
         r.mutable_graph()->mutable_constants(0)->mutable_meta()->set_shape(0,
                                                                            -3);
       },
       {kInvalid},
       "constant"});
  // References.
  cases.push_back({"a self reference",
                   [](auto& r) { Node(r, 0)->mutable_args(0)->set_node("y"); },
                   {kInvalid},
                   "'y'"});
  cases.push_back({"a forward reference",
                   [](auto& r) { Node(r, 0)->mutable_args(0)->set_node("z"); },
                   {kInvalid},
                   "'y'"});
  cases.push_back(
      {"an unknown name",
       [](auto& r) { Node(r, 1)->mutable_args(1)->set_node("nope"); },
       {kInvalid},
       "'z'"});
  cases.push_back({"an output of no node",
                   [](auto& r) { r.mutable_graph()->set_outputs(0, "nope"); },
                   {kInvalid},
                   "output"});
  cases.push_back({"no outputs",
                   [](auto& r) { r.mutable_graph()->clear_outputs(); },
                   {kInvalid, kOk},
                   ""});
  cases.push_back({"a duplicate node name",
                   [](auto& r) { Node(r, 1)->set_name("y"); },
                   {kInvalid},
                   "'y'"});
  cases.push_back({"a node named as the input",
                   [](auto& r) { Node(r, 0)->set_name("x"); },
                   {kInvalid},
                   "'x'"});
  // Ops and arguments.
  for (const char* op : {"aten.nope.default", "", "os.system",
                         "aten.neg.default\n#include", "aten.add.Tensor"}) {
    cases.push_back({absl::StrCat("op '", op, "' for neg"),
                     [=](auto& r) { Node(r, 0)->set_op(op); },
                     {kInvalid},
                     "'y'"});
  }
  cases.push_back({"too many arguments",
                   [](auto& r) { Node(r, 0)->add_args()->set_int_(1); },
                   {kInvalid},
                   "'y'"});
  cases.push_back(
      {"a string for a tensor",
       [](auto& r) { Node(r, 0)->mutable_args(0)->set_string("x"); },
       {kInvalid},
       "'y'"});
  cases.push_back(
      {"an unknown keyword",
       [](auto& r) { (*Node(r, 1)->mutable_kwargs())["beta"].set_int_(2); },
       {kInvalid},
       "'z'"});
  cases.push_back({"alpha of the wrong type",
                   [](auto& r) {
                     (*Node(r, 1)->mutable_kwargs())["alpha"].set_string("2");
                   },
                   {kInvalid},
                   "'z'"});
  cases.push_back({"a wrong declared output meta",
                   [](auto& r) {
                     v1::TensorMeta* m = Node(r, 0)->add_output_meta();
                     m->add_shape(7);
                     m->set_dtype(v1::DTYPE_FLOAT32);
                   },
                   {kInvalid},
                   "'y'"});
  // Names with path and control characters: names never reach an
  // artifact, so these compile (or are refused as names), never crash.
  for (const char* name : {"../../etc/passwd", "a/b", "$(rm -rf /)",
                           "\n#define", "x\xff\xfe", ""}) {
    cases.push_back({absl::StrCat("node named ", name),
                     [=](auto& r) {
                       Node(r, 0)->set_name(name);
                       Node(r, 1)->mutable_args(0)->set_node(name);
                     },
                     {kOk, kInvalid},
                     ""});
  }
  // Targets.
  for (const char* cpu :
       {"x86-64-v9", "native", "-fplugin=/tmp/x.so", "armv8-a"}) {
    cases.push_back({absl::StrCat("target.cpu ", cpu),
                     [=](auto& r) {
                       r.mutable_target()->set_arch("x86_64");
                       r.mutable_target()->set_cpu(cpu);
                     },
                     {kInvalid},
                     "target.cpu"});
  }
  cases.push_back({"target.arch riscv64",
                   [](auto& r) { r.mutable_target()->set_arch("riscv64"); },
                   {kInvalid},
                   "target.arch"});
  cases.push_back({"target.abi msvc",
                   [](auto& r) { r.mutable_target()->set_abi("msvc"); },
                   {kInvalid},
                   "target.abi"});
  cases.push_back({"another architecture",
                   [](auto& r) { r.mutable_target()->set_arch("aarch64"); },
                   {kPrecondition, kOk},
                   ""});
  return cases;
}

class HostileClientTest : public testing::DaemonFixture {
 protected:
  // The well-formed client: served whatever came before.
  void ExpectServed() {
    v1::CompileRequest r;
    *r.mutable_graph() = testing::LoadGraphOrDie("graphs/mlp_mse__rg.json");
    v1::CompileResponse response;
    grpc::Status st = Compile(r, &response);
    EXPECT_THAT(st, IsOk());
  }
};

TEST_F(HostileClientTest, MalformedCompilesGetClearErrorsAndOthersAreServed) {
  v1::CompileRequest base;
  *base.mutable_graph() = testing::GraphFromJson(kBase);
  {
    v1::CompileResponse response;
    grpc::Status st = Compile(base, &response);
    ASSERT_THAT(st, IsOk());
  }
  const std::vector<Case> cases = Cases();
  EXPECT_GE(cases.size(), 60u);  // With the admin test's: about 90.
  for (const Case& c : cases) {
    v1::CompileRequest r = base;
    c.edit(r);
    v1::CompileResponse response;
    grpc::Status st = Compile(r, &response);
    bool expected = false;
    for (grpc::StatusCode code : c.codes) expected |= st.error_code() == code;
    EXPECT_TRUE(expected) << c.name << ": " << st.error_code() << " "
                          << st.error_message().substr(0, 300);
    if (!st.ok()) {
      EXPECT_TRUE(absl::StrContains(st.error_message(), c.names))
          << c.name << ": " << st.error_message().substr(0, 300);
      EXPECT_LT(st.error_message().size(), 1024u) << c.name;
    }
    ExpectServed();
  }
}

TEST_F(HostileClientTest, MalformedAdminAndFetchCallsGetClearErrors) {
  ExpectServed();
  auto with_deadline = [](grpc::ClientContext* ctx) {
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::seconds(30));
  };
  for (const std::string& key :
       {std::string(), std::string(31, 'k'), std::string(33, 'k'),
        std::string(1 << 20, 'k'), std::string("../../etc/passwd")}) {
    grpc::ClientContext get_ctx, del_ctx, lookup_ctx, backward_ctx;
    with_deadline(&get_ctx);
    with_deadline(&del_ctx);
    with_deadline(&lookup_ctx);
    with_deadline(&backward_ctx);
    v1::GetEntryRequest get;
    get.set_key(key);
    v1::LookupResponse entry;
    grpc::StatusCode code =
        admin_->GetEntry(&get_ctx, get, &entry).error_code();
    EXPECT_TRUE(code == grpc::StatusCode::NOT_FOUND || code == kInvalid)
        << code;
    v1::DeleteEntryRequest del;
    del.set_key(key);
    v1::DeleteEntryResponse deleted;
    code = admin_->DeleteEntry(&del_ctx, del, &deleted).error_code();
    EXPECT_TRUE(code == grpc::StatusCode::NOT_FOUND || code == kInvalid ||
                code == kOk)
        << code;
    v1::LookupRequest lookup;
    lookup.set_key(key);
    code = compile_->Lookup(&lookup_ctx, lookup, &entry).error_code();
    EXPECT_TRUE(code == grpc::StatusCode::NOT_FOUND || code == kInvalid)
        << code;
    v1::GetBackwardRequest backward;
    backward.set_key(key);
    v1::GetBackwardResponse answer;
    code = compile_->GetBackward(&backward_ctx, backward, &answer).error_code();
    EXPECT_TRUE(code == grpc::StatusCode::NOT_FOUND || code == kInvalid)
        << code;
    ExpectServed();
  }
  for (const std::string& digest :
       {std::string(), std::string("../../../etc/passwd"), std::string(64, 'z'),
        std::string(1 << 20, 'a')}) {
    grpc::ClientContext ctx;
    with_deadline(&ctx);
    v1::FetchArtifactRequest request;
    request.set_digest(digest);
    auto reader = compile_->FetchArtifact(&ctx, request);
    v1::ArtifactChunk chunk;
    while (reader->Read(&chunk)) {
    }
    grpc::StatusCode code = reader->Finish().error_code();
    EXPECT_TRUE(code == grpc::StatusCode::NOT_FOUND || code == kInvalid)
        << code;
  }
  for (int32_t page_size : {-1, 0, std::numeric_limits<int32_t>::max()}) {
    grpc::ClientContext ctx;
    with_deadline(&ctx);
    v1::ListEntriesRequest list;
    list.set_page_size(page_size);
    list.set_page_token("\xff garbage token");
    v1::ListEntriesResponse page;
    grpc::StatusCode code = admin_->ListEntries(&ctx, list, &page).error_code();
    EXPECT_TRUE(code == kOk || code == kInvalid) << code;
    EXPECT_LE(page.entries_size(), 1000);
  }
  ExpectServed();
  grpc::ClientContext ctx;
  v1::StatsResponse stats;
  EXPECT_THAT(admin_->Stats(&ctx, v1::StatsRequest(), &stats), IsOk());
}

}  // namespace
}  // namespace aotcache
