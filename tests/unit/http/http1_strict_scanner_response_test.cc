// Http1StrictScanner in RESPONSE mode: the status line's grammar, where a response head ends
// whatever the pieces its bytes arrive in, and which kind of fault each refusal reports. The
// refusals as the upstream sees them are tested through the parser in
// http1_response_parser_test.cc.
#include "http/http1_strict_scanner.h"

#include <gtest/gtest.h>

#include <string>

namespace portico::http {
namespace {

constexpr size_t kMax = 1000;
using Kind = Http1StrictScanner::Kind;

// Scans input in pieces of step bytes; returns how many bytes the section took.
size_t scan_in_pieces(Http1StrictScanner& s, std::string_view input, size_t step) {
  size_t used = 0;
  while (used < input.size() && s.scanning()) {
    size_t n = std::min(step, input.size() - used);
    size_t k = s.scan(input.data() + used, n);
    if (s.failed())
      break;
    EXPECT_LE(k, n);
    used += k;
    if (k < n) {
      EXPECT_TRUE(s.done()) << "stopped early without finishing the section";
      break;
    }
  }
  return used;
}

struct Scanned {
  bool done = false, failed = false;
  ParseError error = ParseError::NONE;
  std::string reason;
  size_t used = 0;
};

Scanned scan_head(std::string_view input, size_t step = SIZE_MAX, size_t max = kMax) {
  Http1StrictScanner s(Kind::RESPONSE);
  s.start_head(max);
  size_t used = scan_in_pieces(s, input, step);
  return {s.done(), s.failed(), s.error(), s.reason(), used};
}

TEST(Http1StrictScannerResponse, HeadEndsAtTheEmptyLine) {
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX:\tv \xff\r\n\r\n";
  const std::string next = "abcHTTP/1.1 200 OK\r\n\r\n";
  for (size_t step : {size_t{1}, size_t{2}, size_t{5}, size_t{1000}}) {
    Http1StrictScanner s(Kind::RESPONSE);
    s.start_head(kMax);
    EXPECT_TRUE(s.scanning());
    EXPECT_EQ(scan_in_pieces(s, head + next, step), head.size()) << "step " << step;
    EXPECT_TRUE(s.done());
    EXPECT_EQ(s.section_bytes(), head.size());
    EXPECT_EQ(s.scan(next.data(), next.size()), 0u);
  }
}

TEST(Http1StrictScannerResponse, StatusLines) {
  for (std::string line : {"HTTP/1.1 200 OK", "HTTP/1.0 404 Not Found", "HTTP/1.1 200",
                           "HTTP/1.1 200 ", "HTTP/1.1 204  two spaces", "HTTP/1.1 999 \t\x80\xff",
                           "HTTP/1.1 100 Continue", "HTTP/1.1 500 a:b / c"}) {
    for (size_t step : {size_t{1}, size_t{3}, size_t{1000}}) {
      std::string head = line + "\r\n\r\n";
      Scanned r = scan_head(head, step);
      EXPECT_TRUE(r.done) << line << ": " << r.reason;
      EXPECT_EQ(r.used, head.size()) << line;
    }
  }
}

TEST(Http1StrictScannerResponse, BadStatusLines) {
  for (std::string line :
       {"HTTP/1.1  200 OK", "HTTP/1.1\t200 OK",    " HTTP/1.1 200 OK",    "HTTP/1.1 20 OK",
        "HTTP/1.1 2000 OK", "HTTP/1.1 099 OK",     "HTTP/1.1 0",          "HTTP/1.1 -20",
        "HTTP/1.1 200\tOK", "HTTP/1.1 200 O\x01K", "HTTP/1.1 200 O\x7fK", "HTTP/1.1 200 O\rK",
        "HTTP/1.1",         "HTTP/1.1 ",           "HTTP/11 200 OK",      "HTTP/1.x 200 OK",
        "HTTPS/1.1 200 OK", "http/1.1 200 OK",     "ICY 200 OK",          "GET / HTTP/1.1"}) {
    for (size_t step : {size_t{1}, size_t{1000}}) {
      Scanned r = scan_head(line + "\r\nA: b\r\n\r\n", step);
      EXPECT_TRUE(r.failed) << line;
      EXPECT_EQ(r.error, ParseError::BAD_REQUEST) << line;
    }
  }
}

TEST(Http1StrictScannerResponse, BareLineEnds) {
  for (std::string head : {"HTTP/1.1 200\n\r\n", "HTTP/1.1 200 OK\n\r\n", "HTTP/1.1 200 OK\r\n\n",
                           "HTTP/1.1 200 OK\r\nA: b\n\r\n", "HTTP/1.1 200 OK\r\n\rX",
                           "HTTP/1.1 200 OK\rX\r\n", "HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n",
                           "HTTP/1.1 200 OK\r\nA : b\r\n\r\n", "HTTP/1.1 200 OK\r\n: b\r\n\r\n"}) {
    Scanned r = scan_head(head, 1);
    EXPECT_TRUE(r.failed) << head;
  }
  EXPECT_STREQ(scan_head("HTTP/1.1 200 OK\r\nA: b\n").reason.c_str(), "bare LF in response head");
}

TEST(Http1StrictScannerResponse, NoEmptyLinesBeforeTheStatusLine) {
  // Excused before a request line (RFC 9112 2.2), never before a status line.
  for (std::string head : {"\r\nHTTP/1.1 200 OK\r\n\r\n", "\nHTTP/1.1 200 OK\r\n\r\n"})
    EXPECT_TRUE(scan_head(head).failed);
  // The request mode still excuses them, and is the default.
  Http1StrictScanner req;
  req.start_head(kMax);
  std::string get = "\r\nGET / HTTP/1.1\r\n\r\n";
  EXPECT_EQ(req.scan(get.data(), get.size()), get.size());
  EXPECT_TRUE(req.done());
}

TEST(Http1StrictScannerResponse, VersionIsDecidedAtTheMinorDigit) {
  for (std::string v : {"HTTP/1.2", "HTTP/2.0", "HTTP/0.9", "HTTP/9.9"}) {
    Scanned r = scan_head(v); // no SP yet: refused already
    EXPECT_TRUE(r.failed) << v;
    EXPECT_EQ(r.error, ParseError::BAD_VERSION) << v;
  }
}

TEST(Http1StrictScannerResponse, HeadLimitCoversTheStatusLine) {
  // A response has no target: over the limit anywhere is HEADERS_TOO_LARGE.
  std::string long_reason = "HTTP/1.1 200 " + std::string(kMax, 'r') + "\r\n\r\n";
  std::string long_field = "HTTP/1.1 200 OK\r\nX: " + std::string(kMax, 'v') + "\r\n\r\n";
  for (const std::string& head : {long_reason, long_field}) {
    for (size_t step : {size_t{100}, head.size()}) {
      Scanned r = scan_head(head, step);
      EXPECT_TRUE(r.failed);
      EXPECT_EQ(r.error, ParseError::HEADERS_TOO_LARGE) << "step " << step;
    }
  }
  std::string exact = "HTTP/1.1 200 OK\r\nX: ";
  exact += std::string(kMax - exact.size() - 4, 'v') + "\r\n\r\n";
  ASSERT_EQ(exact.size(), kMax);
  EXPECT_TRUE(scan_head(exact, 7).done);
}

TEST(Http1StrictScannerResponse, RestartsForEachHead) {
  // Interim responses: one head after another, each scanned from a fresh start.
  Http1StrictScanner s(Kind::RESPONSE);
  std::string heads = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n";
  s.start_head(kMax);
  size_t first = s.scan(heads.data(), heads.size());
  EXPECT_EQ(first, 25u);
  EXPECT_TRUE(s.done());
  s.start_head(kMax);
  EXPECT_EQ(s.scan(heads.data() + first, heads.size() - first), heads.size() - first);
  EXPECT_TRUE(s.done());
  EXPECT_EQ(s.section_bytes(), heads.size() - first);
}

TEST(Http1StrictScannerResponse, ChunkedBodyAsForRequests) {
  const std::string body = "3;a=\"b\"\r\nabc\r\n0\r\nT: 1\r\n\r\n";
  for (size_t step : {size_t{1}, size_t{4}, size_t{1000}}) {
    Http1StrictScanner s(Kind::RESPONSE);
    s.start_chunked(kMax);
    EXPECT_EQ(scan_in_pieces(s, body + "HTTP/1.1", step), body.size());
    EXPECT_TRUE(s.done()) << s.reason();
  }
  Http1StrictScanner s(Kind::RESPONSE);
  s.start_chunked(kMax);
  std::string junk = "3\r\nabcXX";
  s.scan(junk.data(), junk.size());
  EXPECT_TRUE(s.failed());
}

TEST(Http1StrictScannerResponse, ChunkSizeBound) {
  // 2^60 - 1 is the largest size taken; past it, the sum must not wrap round to a small size
  // (2^60 * 16 + 3 would be 3 in 64 bits).
  for (Kind kind : {Kind::REQUEST, Kind::RESPONSE}) {
    Http1StrictScanner ok(kind);
    ok.start_chunked(kMax);
    std::string max = "fffffffffffffff\r\n";
    EXPECT_EQ(ok.scan(max.data(), max.size()), max.size());
    EXPECT_FALSE(ok.failed());
    for (std::string size : {"1000000000000000\r\n", "10000000000000003\r\n"}) {
      Http1StrictScanner s(kind);
      s.start_chunked(kMax);
      s.scan(size.data(), size.size());
      EXPECT_TRUE(s.failed()) << size;
    }
  }
}

} // namespace
} // namespace portico::http
