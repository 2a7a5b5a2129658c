// The plan JSON reader: what Python's json.dumps produces must read back exactly, and anything
// malformed must be a CqError, never a crash or a silently wrong value.
#include <cmath>
#include <limits>

#include "base/errors.h"
#include "base/json.h"
#include "tests/test_util.h"

namespace cq::test {
namespace {

CQ_TEST(json_objects_and_arrays) {
  json::Value v = json::Parse(R"( {"operators": [ {"id": 0, "inputs": []}, {"id": 1, "inputs": [0]} ],
                                   "empty": {}, "flag": true, "off": false, "nothing": null} )");
  CQ_ASSERT(v.is_object());
  const json::Array& ops = v["operators"].array();
  CQ_ASSERT(ops.size() == 2);
  CQ_EXPECT_EQ(ops[0]["id"].integer(), 0);
  CQ_EXPECT(ops[0]["inputs"].array().empty());
  CQ_EXPECT_EQ(ops[1]["inputs"].array()[0].integer(), 0);
  CQ_EXPECT(v["empty"].object().empty());
  CQ_EXPECT(v["flag"].boolean());
  CQ_EXPECT(!v["off"].boolean());
  CQ_EXPECT(v["nothing"].is_null());
  CQ_EXPECT(v.find("missing") == nullptr);
  CQ_EXPECT_THROWS(v["missing"], CqError);
  // Typed accessors refuse the wrong type.
  CQ_EXPECT_THROWS(v["flag"].integer(), CqError);
  CQ_EXPECT_THROWS(v["operators"].object(), CqError);
  CQ_EXPECT_THROWS(v["empty"].array(), CqError);
  CQ_EXPECT_THROWS(v["nothing"].str(), CqError);
  CQ_EXPECT_THROWS(ops[0]["id"].boolean(), CqError);
  // Nesting and whitespace of every kind.
  json::Value n = json::Parse("\t[\r\n[ [ ] ] ,{ \"k\" :[1,\n2] } ]\n");
  CQ_EXPECT_EQ(n.array().size(), 2);
  CQ_EXPECT(n.array()[0].array()[0].array().empty());
  CQ_EXPECT_EQ(n.array()[1]["k"].array()[1].integer(), 2);
}

CQ_TEST(json_strings_with_escapes) {
  auto str = [](const char* text) { return json::Parse(text).str(); };
  CQ_EXPECT_EQ(str(R"("plain")"), "plain");
  CQ_EXPECT_EQ(str(R"("")"), "");
  CQ_EXPECT_EQ(str(R"("a\nb\tc\rd")"), "a\nb\tc\rd");
  CQ_EXPECT_EQ(str(R"("say \"hi\"")"), "say \"hi\"");
  CQ_EXPECT_EQ(str(R"("back\\slash \/ \b\f")"), "back\\slash / \b\f");
  CQ_EXPECT_EQ(str(R"("\u0041\u00e9\u00E9")"), "A\xc3\xa9\xc3\xa9");  // é as json.dumps writes it
  CQ_EXPECT_EQ(str(R"("\u20ac")"), "\xe2\x82\xac");                   // € (three bytes)
  CQ_EXPECT_EQ(str(R"("\ud83d\ude00")"), "\xf0\x9f\x98\x80");         // 😀 (a surrogate pair)
  CQ_EXPECT_EQ(str("\"\xc3\xa9 raw\""), "\xc3\xa9 raw");              // UTF-8 passes through
  CQ_EXPECT_EQ(str(R"("\u0000x")"), std::string("\0x", 2));
  // Keys are strings too.
  CQ_EXPECT_EQ(json::Parse(R"({"k\u00e9y": 1})")["k\xc3\xa9y"].integer(), 1);
}

CQ_TEST(json_integers_doubles_and_negatives) {
  auto p = [](const char* text) { return json::Parse(text); };
  CQ_EXPECT(p("42").is_int());
  CQ_EXPECT_EQ(p("42").integer(), 42);
  CQ_EXPECT_EQ(p("-7").integer(), -7);
  CQ_EXPECT_EQ(p("0").integer(), 0);
  CQ_EXPECT_EQ(p("9223372036854775807").integer(), std::numeric_limits<int64_t>::max());
  CQ_EXPECT_EQ(p("-9223372036854775808").integer(), std::numeric_limits<int64_t>::min());
  // A fraction or an exponent makes a double, which is a number but not an integer.
  CQ_EXPECT(!p("42.0").is_int());
  CQ_EXPECT(p("42.0").is_number());
  CQ_EXPECT_EQ(p("42.0").number(), 42.0);
  CQ_EXPECT_THROWS(p("42.0").integer(), CqError);
  CQ_EXPECT_EQ(p("-0.5").number(), -0.5);
  CQ_EXPECT_EQ(p("1e3").number(), 1000.0);
  CQ_EXPECT_EQ(p("1.5E-3").number(), 0.0015);
  CQ_EXPECT_EQ(p("-2.5e+2").number(), -250.0);
  // An int reads as a double where a double is wanted.
  CQ_EXPECT_EQ(p("3").number(), 3.0);
  // Python's json.dumps writes these for non-finite floats.
  CQ_EXPECT(std::isnan(p("NaN").number()));
  CQ_EXPECT_EQ(p("Infinity").number(), std::numeric_limits<double>::infinity());
  CQ_EXPECT_EQ(p("[-Infinity]").array()[0].number(), -std::numeric_limits<double>::infinity());
}

CQ_TEST(json_malformed_input_throws) {
  const char* bad[] = {
      "",
      "   ",
      "{",
      "}",
      "[1,",
      "[1 2]",
      "[1,]",
      "{\"a\" 1}",
      "{\"a\": 1,}",
      "{a: 1}",
      "{,}",
      "tru",
      "nul",
      "truex",
      "\"abc",
      "\"a\\x\"",
      "\"\\u12\"",
      "\"\\u12G4\"",
      "\"\\",
      "1.2.3",
      "-",
      "--1",
      "1-",
      "{} x",
      "[] []",
      "@",
      "{\"a\": }",
      "[\"a\" \"b\"]",
      // out of int64 range, and broken UTF-16 surrogates
      "9223372036854775808",
      "-9223372036854775809",
      "\"\\ud83d\\u0041\"",
      "\"\\ud83d\"",
      "\"\\ude00\"",
  };
  for (const char* text : bad) {
    bool threw = false;
    try {
      json::Parse(text);
    } catch (const CqError& e) {
      threw = true;
      CQ_EXPECT_EQ(e.kind(), ErrorKind::kInternal);  // a malformed plan is a planner bug
      CQ_EXPECT(std::string(e.what()).find("malformed plan JSON") != std::string::npos);
    }
    CQ_EXPECT_EQ(Quote(text) + (threw ? " threw" : " did not throw"), Quote(text) + " threw");
  }
}

// Nesting is read recursively: deep input is an error at a bound, never a stack overflow, and a
// plan as deep as the planner writes reads back.
CQ_TEST(json_deep_nesting_is_an_error_not_a_crash) {
  for (const char* open : {"[", "{\"a\":"}) {
    std::string deep;
    for (int i = 0; i < 1000000; ++i) deep += open;
    bool threw = false;
    try {
      json::Parse(deep);
    } catch (const CqError& e) {
      threw = true;
      CQ_EXPECT_EQ(e.kind(), ErrorKind::kInternal);
      CQ_EXPECT(std::string(e.what()).find("nested deeper than 1000 levels") != std::string::npos);
    }
    CQ_EXPECT(threw);
  }
  json::Value doc = json::Parse(std::string(1000, '[') + std::string(1000, ']'));
  const json::Value* v = &doc;
  for (int i = 1; i < 1000; ++i) v = &v->array()[0];
  CQ_EXPECT(v->array().empty());
  CQ_EXPECT_THROWS(json::Parse(std::string(1001, '[') + std::string(1001, ']')), CqError);
}

}  // namespace
}  // namespace cq::test
