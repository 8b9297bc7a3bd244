#include "output/membership_json.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "gossip_rdzv/error.hpp"
#include "support/sample_assignment.hpp"
#include "support/temp_dir.hpp"

namespace gossip_rdzv {
namespace {

namespace fs = std::filesystem;

// ---- a tiny strict JSON reader, so the test checks that the output parses back --------------
struct Json;
using JsonObject = std::map<std::string, Json>;
using JsonArray = std::vector<Json>;
struct Json {
  std::variant<std::nullptr_t, bool, double, std::string, std::shared_ptr<JsonArray>,
               std::shared_ptr<JsonObject>>
      value;
  const Json& operator[](const std::string& key) const { return object().at(key); }
  const Json& operator[](std::size_t i) const { return array().at(i); }
  const JsonObject& object() const { return *std::get<std::shared_ptr<JsonObject>>(value); }
  const JsonArray& array() const { return *std::get<std::shared_ptr<JsonArray>>(value); }
  const std::string& str() const { return std::get<std::string>(value); }
  double num() const { return std::get<double>(value); }
};

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  // Throws std::runtime_error on anything that is not one complete JSON value.
  Json parse_document() {
    Json v = parse_value();
    skip_space();
    if (pos_ != text_.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) {
    throw std::runtime_error("JSON error at " + std::to_string(pos_) + ": " + why);
  }
  void skip_space() {
    while (pos_ < text_.size() &&
           std::string_view(" \n\r\t").find(text_[pos_]) != std::string::npos)
      ++pos_;
  }
  char peek() {
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end");
    return text_[pos_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected ") + c);
    ++pos_;
  }
  Json parse_value() {
    const char c = peek();
    if (c == '{') return parse_object();
    if (c == '[') return parse_array();
    if (c == '"') return Json{parse_string()};
    if (c == '-' || (c >= '0' && c <= '9')) return parse_number();
    for (const auto& [word, value] : std::vector<std::pair<std::string_view, Json>>{
             {"true", Json{true}}, {"false", Json{false}}, {"null", Json{nullptr}}}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    fail("unexpected character");
  }
  Json parse_object() {
    expect('{');
    auto obj = std::make_shared<JsonObject>();
    if (peek() == '}') {
      ++pos_;
      return Json{obj};
    }
    for (;;) {
      if (peek() != '"') fail("expected key");
      std::string key = parse_string();
      expect(':');
      if (!obj->emplace(key, parse_value()).second) fail("duplicate key " + key);
      if (peek() == '}') break;
      expect(',');
    }
    ++pos_;
    return Json{obj};
  }
  Json parse_array() {
    expect('[');
    auto arr = std::make_shared<JsonArray>();
    if (peek() == ']') {
      ++pos_;
      return Json{arr};
    }
    for (;;) {
      arr->push_back(parse_value());
      if (peek() == ']') break;
      expect(',');
    }
    ++pos_;
    return Json{arr};
  }
  Json parse_number() {
    const std::size_t start = pos_;
    if (text_[pos_] == '-') ++pos_;
    while (pos_ < text_.size() &&
           std::string_view("0123456789.eE+-").find(text_[pos_]) != std::string::npos)
      ++pos_;
    return Json{std::stod(std::string(text_.substr(start, pos_ - start)))};
  }
  // Decodes escapes; \uXXXX is turned into UTF-8 (BMP only, enough for this test).
  std::string parse_string() {
    expect('"');
    std::string out;
    for (;;) {
      if (pos_ >= text_.size()) fail("unterminated string");
      const auto c = static_cast<unsigned char>(text_[pos_++]);
      if (c == '"') return out;
      if (c < 0x20) fail("raw control character in string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (pos_ >= text_.size()) fail("dangling backslash");
      const char e = text_[pos_++];
      const std::string_view simple = "\"\\/bfnrt";
      const std::string_view decoded = "\"\\/\b\f\n\r\t";
      if (const auto k = simple.find(e); k != std::string_view::npos) {
        out += decoded[k];
      } else if (e == 'u') {
        if (pos_ + 4 > text_.size()) fail("short \\u");
        const unsigned cp = std::stoul(std::string(text_.substr(pos_, 4)), nullptr, 16);
        pos_ += 4;
        append_utf8(out, cp);
      } else {
        fail("bad escape");
      }
    }
  }
  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

Json parse(const std::string& text) {
  return Parser(text).parse_document();
}

// ---- fixtures -------------------------------------------------------------------------------
NodeEntry node(std::uint32_t rank, std::uint32_t offset, std::uint32_t nproc,
               const std::string& host, const std::string& hostname) {
  NodeEntry n = testing_support::sample_node(rank, offset, nproc, host);
  n.hostname = hostname;
  n.node_id = 18446744073709551557ull;  // largest 64-bit prime: beyond a double's precision
  n.generation = 2 + rank;
  return n;
}

Assignment sample() {
  return testing_support::sample_assignment(
      1, {node(0, 0, 8, "10.0.0.1", "node7"), node(1, 8, 1, "10.0.0.2", "node66")});
}

TEST(MembershipJson, ExactDocument) {
  Assignment a = sample();
  a.nodes.resize(1);
  a.world_size = 8;
  EXPECT_EQ(membership_json(a),
            "{\n"
            "  \"run_id\": \"job42\",\n"
            "  \"round\": 1,\n"
            "  \"world_size\": 8,\n"
            "  \"master_addr\": \"10.0.0.1\",\n"
            "  \"master_port\": 29500,\n"
            "  \"nnodes\": 1,\n"
            "  \"nodes\": [\n"
            "    {\"node_rank\": 0, \"rank_offset\": 0, \"nproc\": 8, \"host\": \"10.0.0.1\", "
            "\"endpoint\": \"10.0.0.1:29400\", \"hostname\": \"node7\", "
            "\"node_id\": \"18446744073709551557\", \"generation\": 2}\n"
            "  ]\n"
            "}\n");
}

TEST(MembershipJson, ParsesBackWithEveryField) {
  const Json doc = parse(membership_json(sample()));
  EXPECT_EQ(doc["run_id"].str(), "job42");
  EXPECT_EQ(doc["round"].num(), 1);
  EXPECT_EQ(doc["world_size"].num(), 9);
  EXPECT_EQ(doc["master_addr"].str(), "10.0.0.1");
  EXPECT_EQ(doc["master_port"].num(), 29500);
  EXPECT_EQ(doc["nnodes"].num(), 2);
  EXPECT_EQ(doc.object().size(), 7u);
  const JsonArray& nodes = doc["nodes"].array();
  ASSERT_EQ(nodes.size(), 2u);
  const Json& second = nodes[1];
  EXPECT_EQ(second.object().size(), 8u);
  EXPECT_EQ(second["node_rank"].num(), 1);
  EXPECT_EQ(second["rank_offset"].num(), 8);
  EXPECT_EQ(second["nproc"].num(), 1);
  EXPECT_EQ(second["host"].str(), "10.0.0.2");
  EXPECT_EQ(second["endpoint"].str(), "10.0.0.2:29400");
  EXPECT_EQ(second["hostname"].str(), "node66");
  EXPECT_EQ(second["node_id"].str(), "18446744073709551557");
  EXPECT_EQ(second["generation"].num(), 3);
}

TEST(MembershipJson, EmptyNodeListStillParses) {
  Assignment a = sample();
  a.nodes.clear();
  const Json doc = parse(membership_json(a));
  EXPECT_TRUE(doc["nodes"].array().empty());
}

TEST(MembershipJson, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(json_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(json_string(std::string("\x01\n\t\x1f", 4)), "\"\\u0001\\u000a\\u0009\\u001f\"");
  EXPECT_EQ(json_string(std::string("nul\0x", 5)), "\"nul\\u0000x\"");
  EXPECT_EQ(json_string(""), "\"\"");
  // Valid UTF-8 is kept as is.
  EXPECT_EQ(json_string("n\xC3\xB8"
                        "de\xE2\x82\xAC"),
            "\"n\xC3\xB8"
            "de\xE2\x82\xAC\"");
}

TEST(MembershipJson, InvalidUtf8BecomesReplacementCharacter) {
  EXPECT_EQ(json_string("a\xFF"
                        "b"),
            "\"a\\ufffdb\"");
  EXPECT_EQ(json_string("\xC0\xAF"), "\"\\ufffd\\ufffd\"");             // overlong '/'
  EXPECT_EQ(json_string("\xED\xA0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");  // surrogate
  EXPECT_EQ(json_string("\xE2\x82"), "\"\\ufffd\\ufffd\"");             // truncated
}

TEST(MembershipJson, HostileNamesRoundTrip) {
  Assignment a = sample();
  const std::string hostile = std::string("evil\"},{\\\n\x1b[31m\0end", 20);
  a.nodes[1].hostname = hostile;
  a.run_id = "run \"x\"";
  const Json doc = parse(membership_json(a));
  EXPECT_EQ(doc["nodes"][1]["hostname"].str(), hostile);
  EXPECT_EQ(doc["run_id"].str(), "run \"x\"");
  EXPECT_EQ(doc["nodes"].array().size(), 2u);
}

TEST(AssignmentTable, ColumnsAndRows) {
  EXPECT_EQ(assignment_table(sample()),
            "NODE_RANK  RANKS  HOST      ENDPOINT        HOSTNAME  NPROC\n"
            "0          0-7    10.0.0.1  10.0.0.1:29400  node7     8\n"
            "1          8      10.0.0.2  10.0.0.2:29400  node66    1\n");
}

TEST(AssignmentTable, ControlCharactersAreNeutralised) {
  Assignment a = sample();
  a.nodes[0].hostname = "bad\x1b[2Jname";
  const std::string table = assignment_table(a);
  EXPECT_EQ(table.find('\x1b'), std::string::npos);
  EXPECT_NE(table.find("bad?[2Jname"), std::string::npos) << table;
}

using testing_support::TempDir;

TEST(MembershipFile, WritesTheJsonCreatingDirectories) {
  TempDir dir;
  const fs::path path = dir.path() / "a" / "b" / "members.json";
  write_membership_file(path.string(), sample());
  EXPECT_EQ(testing_support::read_file(path), membership_json(sample()));
  EXPECT_EQ(std::distance(fs::directory_iterator(path.parent_path()), fs::directory_iterator{}), 1);
}

TEST(MembershipFile, UnwritablePathIsIoError) {
  TempDir dir;
  fs::create_directories(dir.path());
  std::ofstream(dir.path() / "file") << "x";
  const std::string path = (dir.path() / "file" / "members.json").string();
  try {
    write_membership_file(path, sample());
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io_error);
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("--membership-file"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace gossip_rdzv
