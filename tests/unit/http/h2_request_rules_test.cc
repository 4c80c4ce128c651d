#include "http/h2_request_reference.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

namespace portico::http {
namespace {

using namespace h2_reference;

Shape ended(Fields f) {
  Shape s;
  s.fields = std::move(f);
  return s;
}

Shape with_body(Fields f, std::vector<size_t> data, bool end_on_data) {
  Shape s = ended(std::move(f));
  s.end_on_headers = false;
  s.data = std::move(data);
  s.end_on_data = end_on_data;
  return s;
}

void expect_same(const Shape& s, bool expected) {
  Nghttp2Reference ref;
  ASSERT_EQ(ref.accepts(s), expected) << "nghttp2 itself disagrees:\n" << describe(s);
  EXPECT_EQ(rules_accept(s), expected) << describe(s);
}

TEST(H2RequestRules, AWholeRequestIsAccepted) {
  expect_same(ended(request()), true);
  Shape post = with_body(request("POST"), {3, 2}, true);
  post.fields.push_back({"content-length", "5"});
  expect_same(post, true);
}

TEST(H2RequestRules, EachRuleOfRfc9113IsKept) {
  auto with = [](Fields f, std::string n, std::string v) {
    f.push_back({std::move(n), std::move(v)});
    return ended(f);
  };
  expect_same(with(request(), "connection", "close"), false);
  expect_same(with(request(), "te", "trailers"), true);
  expect_same(with(request(), "te", "gzip"), false);
  expect_same(with(request(), "X-Upper", "1"), false);
  expect_same(with(request(), "x-a", " lead"), false);
  expect_same(with(request(), ":method", "GET"), false); // twice
  expect_same(with(request(), "host", "example.com"), true);
  expect_same(ended({{":method", "GET"}, {":scheme", "https"}, {":path", "/"}}), false);
  expect_same(ended({{":method", "CONNECT"}, {":authority", "example.com:443"}}), true);
  expect_same(
      ended({{":method", "OPTIONS"}, {":scheme", "http"}, {":authority", "a"}, {":path", "*"}}),
      true);
  expect_same(ended({{":method", "GET"}, {":scheme", "http"}, {":authority", "a"}, {":path", "*"}}),
              false);
  Shape ws = ended({{":method", "CONNECT"},
                    {":protocol", "websocket"},
                    {":scheme", "https"},
                    {":authority", "a"},
                    {":path", "/chat"}});
  expect_same(ws, true);
  ws.connect_protocol = false;
  expect_same(ws, false);
}

TEST(H2RequestRules, ContentMustBeAsLongAsContentLengthSays) {
  Shape s = with_body(request("POST"), {3, 3}, true);
  s.fields.push_back({"content-length", "5"});
  expect_same(s, false); // longer
  s.data = {3, 1};
  expect_same(s, false); // shorter
  s.data = {};
  s.end_on_headers = true;
  expect_same(s, false); // none at all
  Shape t = with_body(request("POST"), {5}, false);
  t.trailers = {{"x-checksum", "1"}};
  t.has_trailers = true;
  t.fields.push_back({"content-length", "5"});
  expect_same(t, true);
  t.trailers_end_stream = false;
  expect_same(t, false); // a trailer section ends the stream
  t.trailers_end_stream = true;
  t.trailers = {{":path", "/"}};
  expect_same(t, false); // no pseudo-field among trailers
}

// The byte checks are the library's classes, a value's eight at a time: each byte at each
// place of a value longer than a word, and at either end, is judged as nghttp2 judges it.
TEST(H2RequestRules, ByteChecksAreNghttp2s) {
  for (int c = 0; c < 256; ++c) {
    for (size_t at = 0; at < 17; ++at) {
      std::string v = "abcdefghijklmnopq";
      v[at] = static_cast<char>(c);
      auto b = reinterpret_cast<const uint8_t*>(v.data());
      ASSERT_EQ(field_value_ok(v), nghttp2_check_header_value_rfc9113(b, v.size()) != 0)
          << "byte " << c << " at " << at;
      if (v[0] == ':')
        continue; // a pseudo-field's name: told apart before (the five are known)
      ASSERT_EQ(field_name_ok(v), nghttp2_check_header_name(b, v.size()) != 0)
          << "byte " << c << " at " << at;
    }
    std::string one(1, static_cast<char>(c));
    auto b = reinterpret_cast<const uint8_t*>(one.data());
    ASSERT_EQ(field_value_ok(one), nghttp2_check_header_value_rfc9113(b, 1) != 0) << c;
  }
  EXPECT_TRUE(field_value_ok(""));
  EXPECT_FALSE(field_name_ok(""));
}

// Random requests from pieces that each touch a rule, judged by both.
TEST(H2RequestRules, AgreesWithNghttp2OnRandomRequests) {
  const std::vector<std::string> names = {":method",
                                          ":path",
                                          ":scheme",
                                          ":authority",
                                          ":protocol",
                                          ":status",
                                          ":Path",
                                          ":",
                                          "host",
                                          "content-length",
                                          "te",
                                          "connection",
                                          "keep-alive",
                                          "proxy-connection",
                                          "transfer-encoding",
                                          "upgrade",
                                          "priority",
                                          "x-a",
                                          "X-A",
                                          "user-agent",
                                          "",
                                          "x a",
                                          std::string("x\x01", 2),
                                          "cookie",
                                          "a:b",
                                          "x-\xc3\xa9"};
  const std::vector<std::string> values = {"",
                                           "x",
                                           " x",
                                           "x ",
                                           "\tx",
                                           "a\x01b",
                                           "a\x7f",
                                           "a\rb",
                                           "a\nb",
                                           std::string("a\0b", 3),
                                           "trailers",
                                           "TRAILERS",
                                           "trailers, gzip",
                                           "0",
                                           "5",
                                           "10",
                                           "-1",
                                           "+5",
                                           "5a",
                                           "99999999999999999999",
                                           "9223372036854775807",
                                           "9223372036854775808",
                                           "/",
                                           "/p?q#f",
                                           "*",
                                           "p",
                                           "http",
                                           "https",
                                           "HtTpS",
                                           "ftp",
                                           "1http",
                                           "h+t.t-p",
                                           "websocket",
                                           "CONNECT",
                                           "OPTIONS",
                                           "GET",
                                           "GE T",
                                           "example.com",
                                           "example.com:80",
                                           "[::1]:8443",
                                           "a b",
                                           "u@h",
                                           "\xc3\xa9",
                                           "a\"b"};
  std::mt19937 rng(20261206);
  auto pick = [&](const auto& v) { return v[rng() % v.size()]; };
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    Shape s;
    const std::vector<std::string> methods = {"GET", "POST", "CONNECT", "OPTIONS", "HEAD"};
    s.fields = request(pick(methods), pick(std::vector<std::string>{"/", "*", "/a", "a", ""}));
    for (int k = static_cast<int>(rng() % 4); k > 0; --k) {
      std::pair<std::string, std::string> f{pick(names), pick(values)};
      switch (rng() % 4) {
      case 0: // removed
        s.fields.erase(s.fields.begin() + rng() % s.fields.size());
        if (s.fields.empty())
          s.fields.push_back(f);
        break;
      case 1: // a value changed
        s.fields[rng() % s.fields.size()].second = f.second;
        break;
      default: // a field put anywhere
        s.fields.insert(s.fields.begin() + rng() % (s.fields.size() + 1), f);
      }
    }
    s.connect_protocol = rng() % 4 != 0;
    s.end_on_headers = rng() % 3 == 0;
    if (!s.end_on_headers) {
      for (int k = static_cast<int>(rng() % 3); k > 0; --k)
        s.data.push_back(rng() % 8);
      s.end_on_data = rng() % 2 == 0 && !s.data.empty();
      if (!s.end_on_data && rng() % 2 == 0) {
        s.has_trailers = true;
        s.trailers_end_stream = rng() % 5 != 0;
        for (int k = static_cast<int>(rng() % 3); k > 0; --k)
          s.trailers.push_back({pick(names), pick(values)});
      }
    }
    Nghttp2Reference ref;
    bool expected = ref.accepts(s);
    accepted += expected;
    ASSERT_EQ(rules_accept(s), expected) << "case " << i << ":\n" << describe(s);
  }
  // Both verdicts are common, so the agreement says something about each.
  EXPECT_GT(accepted, 1000);
  EXPECT_LT(accepted, 19000);
}

} // namespace
} // namespace portico::http
