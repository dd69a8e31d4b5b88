// The JSON fast path against protobuf's own converter, the oracle: what the
// fast reader takes it reads to protobuf's message, what it does not take
// goes to protobuf, and what the fast writer writes protobuf reads back.
#include "core/graph/json_fast_path.h"

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "aotcache/v1/analysis.pb.h"
#include "aotcache/v1/artifact.pb.h"
#include "aotcache/v1/graph.pb.h"
#include "aotcache/v1/service.pb.h"
#include "core/graph/deterministic_bytes.h"
#include "core/graph/graph_json.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"

namespace aotcache {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using testing::FixtureGraphFiles;
using testing::FixturePath;
using testing::ReadFileOrDie;

// protobuf's answer: the message's bytes, or "error".
std::string ProtobufReads(const std::string& json, const Message& prototype) {
  std::unique_ptr<Message> m(prototype.New());
  google::protobuf::util::JsonParseOptions options;
  if (!google::protobuf::util::JsonStringToMessage(json, m.get(), options)
           .ok()) {
    return "error";
  }
  return DeterministicBytes(*m);
}

// ParseJson's answer, in the same form.
std::string ParseJsonReads(const std::string& json, const Message& prototype) {
  std::unique_ptr<Message> m(prototype.New());
  if (!ParseJson(json, m.get()).ok()) return "error";
  return DeterministicBytes(*m);
}

std::string ProtobufJson(const Message& m, bool print_defaults) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = print_defaults;
  options.preserve_proto_field_names = true;
  std::string out;
  EXPECT_TRUE(
      google::protobuf::util::MessageToJsonString(m, &out, options).ok());
  return out;
}

TEST(JsonFastPathTest, EveryFixtureGraphReadsFastToProtobufsMessage) {
  std::vector<std::string> files = FixtureGraphFiles();
  ASSERT_GT(files.size(), 50u);
  for (const std::string& file : files) {
    std::string json = ReadFileOrDie(FixturePath("graphs/" + file));
    v1::Graph fast;
    ASSERT_TRUE(ReadJsonFast(json, &fast)) << file;
    EXPECT_EQ(DeterministicBytes(fast), ProtobufReads(json, v1::Graph()))
        << file;
    // protobuf's own printing too, pretty or not.
    for (bool defaults : {false, true}) {
      std::string printed = ProtobufJson(fast, defaults);
      v1::Graph again;
      ASSERT_TRUE(ReadJsonFast(printed, &again)) << file;
      EXPECT_EQ(DeterministicBytes(again), DeterministicBytes(fast)) << file;
    }
    v1::Graph pretty;
    ASSERT_TRUE(ReadJsonFast(ToJson(fast), &pretty)) << file;
    EXPECT_EQ(DeterministicBytes(pretty), DeterministicBytes(fast)) << file;
  }
}

// JSON protobuf takes (or refuses) that the fast reader leaves to it.
TEST(JsonFastPathTest, WhatItDoesNotTakeGoesToProtobufWhoseAnswerStands) {
  const std::string base =
      R"({"inputs": [{"name": "x", "meta": {"shape": ["2", 3], "dtype": )"
      R"("DTYPE_FLOAT32"}, "storage": 0}], "nodes": [{"name": "n", "op": "aten.add.Tensor", )"
      R"("args": [{"node": "x"}, {"float": 1.5}], "kwargs": {"alpha": {"int": "1"}}}], )"
      R"("constants": [{"name": "c", "data": "AAAAAA=="}], "outputs": ["n"]})";
  v1::Graph g;
  ASSERT_TRUE(ReadJsonFast(base, &g)) << "the base case itself";
  ASSERT_EQ(DeterministicBytes(g), ProtobufReads(base, v1::Graph()));

  auto with = [&](const std::string& from, const std::string& to) {
    std::string json = base;
    size_t at = json.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return json.replace(at, from.size(), to);
  };
  const std::vector<std::string> cases = {
      with(R"("storage": 0)", R"("storage": null)"),
      with(R"("storage": 0)", R"("storage": 0, "storage": 0)"),
      with(R"("storage": 0)", R"("storage": 0.0)"),
      with(R"("storage": 0)", R"("storage": 1e1)"),
      with(R"("storage": 0)", R"("storage": " 7")"),
      with(R"("storage": 0)", R"("storage": "+7")"),
      with(R"("storage": 0)", R"("storage": "007")"),
      with(R"("storage": 0)", R"("storage": 4294967296)"),
      with(R"("storage": 0)", R"("storage": true)"),
      with(R"("storage": 0)", R"("stoRage": 0)"),
      with(R"("storage": 0)", R"("storagez": 0)"),
      with(R"("outputs": ["n"])", R"("outputs": "n")"),
      with(R"("outputs": ["n"])", R"("outputs": [["n"]])"),
      with(R"("outputs": ["n"])", R"("outputs": [null])"),
      with(R"("shape": ["2", 3])", R"("shape": [[2], [[2]]])"),
      with(R"("shape": ["2", 3])", R"("shape": [2, [3]])"),
      with(R"("nodes": [)", R"("nodes": [[)") + "]",
      with(R"("outputs": ["n"])", R"("outputs": [1])"),
      with(R"("storage": 0)", R"("storage": 0, "requiresGrad": true)"),
      with(R"("name": "n")", R"("name": "n", "gradMode": "GRAD_MODE_ENABLED")"),
      with(R"("name": "n")", R"("name": "n", "grad_mode": 1)"),
      with(
          R"("name": "n")",
          R"("name": "n", "grad_mode": "GRAD_MODE_ENABLED", "gradMode": "GRAD_MODE_ENABLED")"),
      with(R"("name": "n")",
           R"("name": "n", "Grad_mode": "GRAD_MODE_ENABLED")"),
      with(R"("DTYPE_FLOAT32")", "1"),
      with(R"("DTYPE_FLOAT32")", R"("DTYPE_NOPE")"),
      with(R"({"float": 1.5})", R"({"float": "1.5"})"),
      with(R"({"float": 1.5})", R"({"float": 1e400})"),
      with(R"({"float": 1.5})", R"({"float": 1e-400})"),
      with(R"({"float": 1.5})", R"({"float": "NaN"})"),
      with(R"({"float": 1.5})", R"({"float": "-Infinity"})"),
      with(R"({"float": 1.5})", R"({"float": -0.0})"),
      with(R"({"float": 1.5})", R"({"float": 1.5, "int": "2"})"),
      with(R"({"int": "1"})", R"({"int": "1"}, "alpha": {"int": "2"})"),
      with(R"({"int": "1"})", R"({"int": "-9223372036854775808"})"),
      with(R"({"int": "1"})", R"({"int": "9223372036854775808"})"),
      with(R"("AAAAAA==")", R"("AAAAAA")"),
      with(R"("AAAAAA==")", R"("AA-_AA==")"),
      with(R"("AAAAAA==")", R"("AA==AA==")"),
      with(R"("AAAAAA==")", R"("AAA AA==")"),
      with(R"("name": "x")", R"("name": "\u00e9\ud83d\ude00\n\u0000")"),
      with(R"("name": "x")", R"("name": "\ud83d")"),
      with(R"("name": "x")", "\"name\": \"\xff\""),
      base + " ",
      base + " x",
      base + std::string("\0{}", 3),
      "[" + base + "]",
      "",
      "{}",
      "  {}  ",
      "null",
      "7",
  };
  for (const std::string& json : cases) {
    EXPECT_EQ(ParseJsonReads(json, v1::Graph()),
              ProtobufReads(json, v1::Graph()))
        << json;
  }
  // Nesting deeper than any message: protobuf's depth limit decides.
  std::string deep = R"({"nodes": [{"args": [)";
  for (int i = 0; i < 150; ++i) deep += R"({"list": {"args": [)";
  for (int i = 0; i < 150; ++i) deep += "]}}";
  deep += "]}]}";
  v1::Graph ignored;
  EXPECT_FALSE(ReadJsonFast(deep, &ignored));
  EXPECT_EQ(ParseJsonReads(deep, v1::Graph()),
            ProtobufReads(deep, v1::Graph()));
}

// Random values in every field of a message, through reflection.
class RandomFiller {
 public:
  explicit RandomFiller(uint32_t seed) : rng_(seed) {}

  void Fill(Message* m, int depth) {
    const Descriptor* d = m->GetDescriptor();
    const Reflection* r = m->GetReflection();
    for (int i = 0; i < d->field_count(); ++i) {
      const FieldDescriptor* fd = d->field(i);
      if (Pick(3) == 0) continue;
      if (fd->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && depth > 3) {
        continue;
      }
      if (fd->is_map()) {
        for (int k = Pick(3); k > 0; --k) {
          Message* entry = r->AddMessage(m, fd);
          entry->GetReflection()->SetString(
              entry, fd->message_type()->map_key(), absl::StrCat("k", k));
          const FieldDescriptor* value = fd->message_type()->map_value();
          if (value->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
            Fill(entry->GetReflection()->MutableMessage(entry, value),
                 depth + 1);
          } else {
            SetScalar(entry, value, false);
          }
        }
      } else if (fd->is_repeated()) {
        for (int k = Pick(4); k > 0; --k) {
          if (fd->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
            Fill(r->AddMessage(m, fd), depth + 1);
          } else {
            SetScalar(m, fd, true);
          }
        }
      } else if (fd->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        Fill(r->MutableMessage(m, fd), depth + 1);
      } else {
        SetScalar(m, fd, false);
      }
    }
  }

 private:
  int Pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  template <typename T>
  T Int() {
    switch (Pick(4)) {
      case 0:
        return 0;
      case 1:
        return std::numeric_limits<T>::min();
      case 2:
        return std::numeric_limits<T>::max();
      default:
        return static_cast<T>(rng_() * 2654435761u);
    }
  }

  double Double() {
    const double special[] = {0.0,
                              -0.0,
                              0.1,
                              1e300,
                              -2.5e-310,
                              std::numeric_limits<double>::infinity(),
                              -std::numeric_limits<double>::infinity(),
                              std::numeric_limits<double>::quiet_NaN(),
                              std::numeric_limits<double>::max(),
                              std::numeric_limits<double>::denorm_min()};
    if (Pick(2) == 0) return special[Pick(10)];
    return std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng_),
                      Pick(200) - 100);
  }

  std::string Text(bool bytes) {
    const std::vector<std::string> pieces = {"a",
                                             "\"",
                                             "\\",
                                             "\n",
                                             "\t",
                                             std::string(1, '\0'),
                                             "\x01",
                                             "/",
                                             "\xc3\xa9",
                                             "\xf0\x9f\x98\x80",
                                             "\xe2\x80\xa8",
                                             "<&>"};
    std::string s;
    for (int k = Pick(6); k > 0; --k) {
      if (bytes) {
        s.push_back(static_cast<char>(Pick(256)));
      } else {
        s += pieces[Pick(static_cast<int>(pieces.size()))];
      }
    }
    return s;
  }

  void SetScalar(Message* m, const FieldDescriptor* fd, bool add) {
    const Reflection* r = m->GetReflection();
    switch (fd->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32: {
        int32_t v = Int<int32_t>();
        add ? r->AddInt32(m, fd, v) : r->SetInt32(m, fd, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_INT64: {
        int64_t v = Int<int64_t>();
        add ? r->AddInt64(m, fd, v) : r->SetInt64(m, fd, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_UINT32: {
        uint32_t v = Int<uint32_t>();
        add ? r->AddUInt32(m, fd, v) : r->SetUInt32(m, fd, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_UINT64: {
        uint64_t v = Int<uint64_t>();
        add ? r->AddUInt64(m, fd, v) : r->SetUInt64(m, fd, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_DOUBLE: {
        double v = Double();
        add ? r->AddDouble(m, fd, v) : r->SetDouble(m, fd, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_FLOAT: {
        float v = static_cast<float>(Double());
        add ? r->AddFloat(m, fd, v) : r->SetFloat(m, fd, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_BOOL: {
        bool v = Pick(2) == 1;
        add ? r->AddBool(m, fd, v) : r->SetBool(m, fd, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_ENUM: {
        const auto* e = fd->enum_type();
        const auto* v = e->value(Pick(e->value_count()));
        add ? r->AddEnum(m, fd, v) : r->SetEnum(m, fd, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_STRING: {
        std::string v = Text(fd->type() == FieldDescriptor::TYPE_BYTES);
        add ? r->AddString(m, fd, v) : r->SetString(m, fd, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_MESSAGE:
        break;
    }
  }

  std::mt19937 rng_;
};

// Every message the Python runtime reads as JSON, and the graph it writes.
TEST(JsonFastPathTest, RandomMessagesGoBothWaysAsProtobufsDo) {
  const std::vector<const Message*> prototypes = {
      &v1::Graph::default_instance(), &v1::FunctionMetadata::default_instance(),
      &v1::CallingConvention::default_instance(),
      &v1::CompileResponse::default_instance(),
      &v1::AnalysisReport::default_instance()};
  for (const Message* prototype : prototypes) {
    for (uint32_t seed = 0; seed < 200; ++seed) {
      std::unique_ptr<Message> m(prototype->New());
      RandomFiller(seed).Fill(m.get(), 0);
      const std::string bytes = DeterministicBytes(*m);
      const std::string where =
          absl::StrCat(prototype->GetTypeName(), " seed ", seed);
      for (bool defaults : {false, true}) {
        // protobuf's printing reads as protobuf reads it (which loses the
        // sign of a -0.0 it printed as "-0").
        const std::string printed = ProtobufJson(*m, defaults);
        std::unique_ptr<Message> read(prototype->New());
        ASSERT_TRUE(ReadJsonFast(printed, read.get()))
            << where << ": " << printed;
        EXPECT_EQ(DeterministicBytes(*read), ProtobufReads(printed, *prototype))
            << where;

        // The fast writing reads back to the message, in both readers.

        std::optional<std::string> written = WriteJsonFast(*m, defaults);
        ASSERT_TRUE(written.has_value()) << where;
        EXPECT_EQ(ProtobufReads(*written, *prototype), bytes)
            << where << ": " << *written;
        ASSERT_TRUE(ReadJsonFast(*written, read.get())) << where;
        EXPECT_EQ(DeterministicBytes(*read), bytes) << where;
        EXPECT_EQ(ToCompactJson(*m, defaults), *written) << where;
      }
    }
  }
}

// Random edits of real graphs' JSON: ParseJson answers as protobuf does.
TEST(JsonFastPathTest, EditedGraphJsonReadsAsProtobufReadsIt) {
  const std::string alphabet = "{}[]\",:-.0123456789eE+ \\/untrlfasNI";
  std::mt19937 rng(7);
  auto pick = [&](size_t n) {
    return std::uniform_int_distribution<size_t>(0, n - 1)(rng);
  };
  int accepted = 0;
  std::vector<std::string> files = FixtureGraphFiles();
  for (int trial = 0; trial < 3000; ++trial) {
    std::string json =
        ReadFileOrDie(FixturePath("graphs/" + files[pick(files.size())]));
    for (int edits = 1 + static_cast<int>(pick(3)); edits > 0; --edits) {
      size_t at = pick(json.size());
      switch (pick(3)) {
        case 0:
          json.erase(at, 1);
          break;
        case 1:
          json.insert(at, 1, alphabet[pick(alphabet.size())]);
          break;
        default:
          json[at] = alphabet[pick(alphabet.size())];
      }
    }
    std::string expected = ProtobufReads(json, v1::Graph());
    EXPECT_EQ(ParseJsonReads(json, v1::Graph()), expected) << json;
    if (expected != "error") ++accepted;
  }
  // Both outcomes are exercised.
  EXPECT_GT(accepted, 100);
  EXPECT_LT(accepted, 2900);
}

}  // namespace
}  // namespace aotcache
