// Http1StrictScanner: it must end each section exactly where it ends (never reading into the
// next pipelined request), whatever the pieces the bytes arrive in. The refusals themselves
// are tested through the parser in http1_request_parser_test.cc.
#include "http/http1_strict_scanner.h"

#include <gtest/gtest.h>

#include <string>

namespace portico::http {
namespace {

constexpr size_t kMax = 1000;

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

TEST(Http1StrictScanner, HeadEndsAtTheEmptyLine) {
  const std::string head = "\r\n\r\nGET /x?y HTTP/1.1\r\nHost: a\r\nX:\tv \xff\r\n\r\n";
  const std::string next = "GET /next HTTP/1.1\r\n\r\n";
  for (size_t step : {size_t{1}, size_t{2}, size_t{5}, size_t{1000}}) {
    Http1StrictScanner s;
    s.start_head(kMax);
    EXPECT_TRUE(s.scanning());
    EXPECT_EQ(scan_in_pieces(s, head + next, step), head.size()) << "step " << step;
    EXPECT_TRUE(s.done());
    EXPECT_FALSE(s.scanning());
    EXPECT_EQ(s.section_bytes(), head.size());
    // Done: it takes nothing more.
    EXPECT_EQ(s.scan(next.data(), next.size()), 0u);
  }
}

TEST(Http1StrictScanner, ChunkedBodyEndsAfterItsTrailers) {
  // Chunk data is skipped by count: bytes in it that look like framing are data.
  const std::string body =
      "5\r\n\r\n0\r\n\r\n1a;ext=\"v\"\r\n" + std::string(26, '\n') + "\r\n0\r\nTrailer: x\r\n\r\n";
  const std::string next = "GET / HTTP/1.1\r\n";
  for (size_t step : {size_t{1}, size_t{3}, size_t{7}, size_t{1000}}) {
    Http1StrictScanner s;
    s.start_chunked(kMax);
    EXPECT_EQ(scan_in_pieces(s, body + next, step), body.size()) << "step " << step;
    EXPECT_TRUE(s.done()) << s.reason();
    // Only the trailer section counts against the limit, not the chunks.
    EXPECT_EQ(s.section_bytes(), std::string("Trailer: x\r\n\r\n").size());
  }
}

TEST(Http1StrictScanner, NoTrailers) {
  Http1StrictScanner s;
  s.start_chunked(kMax);
  std::string body = "0\r\n\r\nX";
  EXPECT_EQ(s.scan(body.data(), body.size()), 5u);
  EXPECT_TRUE(s.done());
}

TEST(Http1StrictScanner, StopAndRestart) {
  Http1StrictScanner s;
  s.start_head(kMax);
  s.stop();
  EXPECT_FALSE(s.scanning());
  EXPECT_FALSE(s.done());
  std::string bad = "\n";
  EXPECT_EQ(s.scan(bad.data(), bad.size()), 0u);
  EXPECT_FALSE(s.failed());
  s.start_head(kMax);
  s.scan(bad.data(), bad.size());
  EXPECT_TRUE(s.failed());
  EXPECT_EQ(s.error(), ParseError::BAD_REQUEST);
  // A new section starts clean.
  s.start_head(kMax);
  std::string ok = "GET / HTTP/1.0\r\n\r\n";
  EXPECT_EQ(s.scan(ok.data(), ok.size()), ok.size());
  EXPECT_TRUE(s.done());
}

TEST(Http1StrictScanner, VersionIsDecidedAtTheMinorDigit) {
  for (std::string v : {"HTTP/1.2", "HTTP/2.0", "HTTP/0.9", "HTTP/9.9"}) {
    Http1StrictScanner s;
    s.start_head(kMax);
    std::string line = "GET / " + v; // no CR yet: refused already
    s.scan(line.data(), line.size());
    EXPECT_TRUE(s.failed()) << v;
    EXPECT_EQ(s.error(), ParseError::BAD_VERSION) << v;
  }
}

TEST(Http1StrictScanner, HeadLimit) {
  std::string line = "GET / HTTP/1.1\r\n";
  std::string field = "X: " + std::string(kMax, 'v') + "\r\n\r\n";
  Http1StrictScanner s;
  s.start_head(kMax);
  s.scan(line.data(), line.size());
  EXPECT_FALSE(s.failed());
  s.scan(field.data(), field.size());
  EXPECT_TRUE(s.failed());
  EXPECT_EQ(s.error(), ParseError::HEADERS_TOO_LARGE);

  // Over the limit inside the request line, or with a request line over the limit: 414.
  std::string long_line = "GET /" + std::string(kMax, 'a') + " HTTP/1.1\r\n\r\n";
  for (size_t step : {size_t{100}, long_line.size()}) {
    Http1StrictScanner t;
    t.start_head(kMax);
    scan_in_pieces(t, long_line, step);
    EXPECT_EQ(t.error(), ParseError::URI_TOO_LONG) << "step " << step;
  }
}

TEST(Http1StrictScanner, ChunkExtensionsAreBounded) {
  Http1StrictScanner s;
  s.start_chunked(kMax);
  std::string line = "1;" + std::string(kMax + 1, 'e');
  s.scan(line.data(), line.size());
  EXPECT_TRUE(s.failed());
  EXPECT_EQ(s.error(), ParseError::BAD_REQUEST);
}

TEST(Http1StrictScanner, ChunkDataBytesAreNotInspected) {
  Http1StrictScanner s;
  s.start_chunked(kMax);
  std::string body("4\r\n\0\r\x7f\n\r\n0\r\n\r\n", 14);
  EXPECT_EQ(s.scan(body.data(), body.size()), body.size());
  EXPECT_TRUE(s.done()) << s.reason();
}

} // namespace
} // namespace portico::http

namespace portico::http {
namespace {

TEST(RequestTarget, VisibleAsciiWithoutFragment) {
  EXPECT_TRUE(is_valid_request_target("/a/b?c=d%23e"));
  EXPECT_TRUE(is_valid_request_target("*"));
  for (std::string_view bad :
       {std::string_view(""), std::string_view("/a#b"), std::string_view("/a b"),
        std::string_view("/a\tb"), std::string_view("/caf\xc3\xa9"), std::string_view("/a\x7f"),
        std::string_view("/a\0b", 4)})
    EXPECT_FALSE(is_valid_request_target(bad)) << bad;
}

// The target, the field names and the values are skipped a word (or four bytes) at a time:
// every byte value at every offset is judged as the byte tables judge it.
TEST(Http1StrictScanner, EveryByteOfATargetANameOrAValueIsJudgedWhereverItIs) {
  for (size_t len = 1; len <= 20; ++len) {
    for (size_t at = 0; at < len; ++at) {
      for (int b = 0; b < 256; ++b) {
        std::string part(len, 'a');
        part[at] = static_cast<char>(b);
        bool target_ok = is_valid_request_target("/" + part);
        bool token_ok = (b >= '0' && b <= '9') || ((b | 0x20) >= 'a' && (b | 0x20) <= 'z') ||
                        std::string_view("!#$%&'*+-.^_`|~").find(char(b)) != std::string::npos;
        token_ok |= b == ':' && at > 0; // the name ends early: the rest is the value's
        bool value_ok = b == '\t' || (b >= 0x20 && b != 0x7f);
        const std::string heads[] = {"GET /" + part + " HTTP/1.1\r\nHost: a\r\n\r\n",
                                     "GET / HTTP/1.1\r\n" + part + ": v\r\n\r\n",
                                     "GET / HTTP/1.1\r\nX: " + part + "\r\n\r\n"};
        const bool ok[] = {target_ok, token_ok, value_ok};
        for (int i = 0; i < 3; ++i) {
          Http1StrictScanner s;
          s.start_head(kMax);
          s.scan(heads[i].data(), heads[i].size());
          EXPECT_EQ(s.done(), ok[i]) << i << " len " << len << " at " << at << " byte " << b;
        }
      }
    }
  }
}

// The fast paths split a head at the scanner's marks: each field line's colon and CR, for a head
// scanned whole by one call, and none for any other.
TEST(Http1StrictScanner, MarksEachFieldLineOfAHeadScannedWhole) {
  const std::string head = "\r\nGET / HTTP/1.1\r\nHost: a\r\nX-Y:\t v : w\r\nEmpty:\r\n\r\nNEXT";
  Http1StrictScanner s;
  s.start_head(kMax);
  EXPECT_EQ(s.scan(head.data(), head.size()), head.size() - 4);
  ASSERT_NE(s.marks(), nullptr);
  ASSERT_EQ(s.mark_count(), 3u);
  size_t from = head.find("Host");
  for (size_t i = 0; i < 3; ++i) {
    const auto& m = s.marks()[i];
    EXPECT_EQ(m.colon, head.find(':', from)) << i;
    EXPECT_EQ(m.cr, head.find('\r', from)) << i;
    from = m.cr + 2;
  }

  // In two calls: no marks.
  s.start_head(kMax);
  s.scan(head.data(), 20);
  EXPECT_EQ(s.marks(), nullptr); // not done yet
  s.scan(head.data() + 20, head.size() - 20);
  EXPECT_TRUE(s.done());
  EXPECT_EQ(s.marks(), nullptr);

  // More field lines than there are marks: none.
  std::string many = "HTTP/1.1 200 OK\r\n";
  for (size_t i = 0; i <= Http1StrictScanner::kMaxMarks; ++i)
    many += "F: " + std::to_string(i) + "\r\n";
  many += "\r\n";
  Http1StrictScanner r(Http1StrictScanner::Kind::RESPONSE);
  r.start_head(kMax);
  r.scan(many.data(), many.size());
  EXPECT_TRUE(r.done());
  EXPECT_EQ(r.marks(), nullptr);
  many.erase(many.find("F: 64\r\n"), 7); // exactly kMaxMarks
  r.start_head(kMax);
  r.scan(many.data(), many.size());
  ASSERT_NE(r.marks(), nullptr);
  EXPECT_EQ(r.mark_count(), Http1StrictScanner::kMaxMarks);

  // A trailer section is no head: no marks.
  const std::string body = "0\r\nT: 1\r\n\r\n";
  s.start_chunked(kMax);
  s.scan(body.data(), body.size());
  EXPECT_TRUE(s.done());
  EXPECT_EQ(s.marks(), nullptr);
}

} // namespace
} // namespace portico::http
