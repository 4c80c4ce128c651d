// Http1ResponseParser: what the head of an accepted response tells the upstream connection
// (framing, keep-alive, interim responses, limits), and its reuse across responses.
#include "http1_response_parser_support.h"

namespace portico::http {
namespace {

using namespace test;

// ---- what the head says ----

Response only(const Outcome& o) {
  EXPECT_FALSE(o.failed) << o.reason;
  EXPECT_EQ(o.responses.size(), 1u);
  return o.responses.empty() ? Response{} : o.responses[0];
}

TEST(Http1ResponseParser, ContentLengthAndKeepAliveHint) {
  std::string r = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nKeep-Alive: timeout=7, max=9\r\n"
                  "X-A: b  \r\n\r\nhelloEXTRA";
  Outcome o = parse(r);
  EXPECT_EQ(o.used, r.size() - 5);
  EXPECT_TRUE(o.done);
  Response h = only(o);
  EXPECT_EQ(h.body, "hello");
  EXPECT_EQ(h.content_length, 5);
  EXPECT_TRUE(h.keep_alive);
  EXPECT_DOUBLE_EQ(h.keepalive_timeout, 7);
  EXPECT_EQ(h.headers,
            (Fields{{"content-length", "5"}, {"keep-alive", "timeout=7, max=9"}, {"x-a", "b"}}));
}

TEST(Http1ResponseParser, InterimResponsesAreSkipped) {
  std::string r = "HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\nHTTP/1.1 201 Created\r\n"
                  "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Sum: 9\r\n\r\n";
  Response h = only(parse(r, {.step = 1}));
  EXPECT_EQ(h.status, 201);
  EXPECT_TRUE(h.chunked);
  EXPECT_TRUE(h.keep_alive);
  EXPECT_EQ(h.body, "abc");
  EXPECT_EQ(h.headers, (Fields{{"transfer-encoding", "chunked"}}));
  EXPECT_EQ(h.trailers, (Fields{{"x-sum", "9"}}));
}

TEST(Http1ResponseParser, InterimHeadsShareOneBudget) {
  // Each interim head fits, and so do all of them together.
  std::string hint = "HTTP/1.1 103 Early Hints\r\nLink: " + std::string(1000, 'l') + "\r\n\r\n";
  std::string r = hint + hint + hint + kOk;
  EXPECT_EQ(only(parse(r)).status, 200);
  // One more does not fit in kMax.
  Outcome o = parse(hint + r);
  EXPECT_TRUE(o.failed);
  EXPECT_TRUE(o.responses.empty());
}

TEST(Http1ResponseParser, ReasonPhraseIsOptional) {
  for (std::string line : {"HTTP/1.1 200\r\n", "HTTP/1.1 200 \r\n", "HTTP/1.1 200 OK\r\n"}) {
    Response h = only(parse(line + "Content-Length: 0\r\n\r\n", {.step = 1}));
    EXPECT_EQ(h.status, 200) << line;
    EXPECT_TRUE(h.ended) << line;
  }
}

TEST(Http1ResponseParser, HeadResponseHasNoBody) {
  std::string r = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n";
  Outcome o = parse(r + "junk", {.head_request = true});
  EXPECT_TRUE(o.done);
  EXPECT_EQ(o.used, r.size());
  Response h = only(o);
  EXPECT_TRUE(h.body.empty());
  EXPECT_EQ(h.content_length, 100); // passed on: the length the GET would have had
  EXPECT_TRUE(h.keep_alive);
}

TEST(Http1ResponseParser, HeadResponseWithoutLengthKeepsTheConnection) {
  // It ends at the empty line whatever it says, so the connection stays usable.
  Response h = only(parse("HTTP/1.1 200 OK\r\n\r\n", {.head_request = true}));
  EXPECT_TRUE(h.ended);
  EXPECT_TRUE(h.keep_alive);
  EXPECT_EQ(h.content_length, -1);
}

TEST(Http1ResponseParser, NoContentThatAnnouncesABodyEndsTheConnection) {
  // A 204 has no body (RFC 9112 6.3), but one announcing a body may be followed by it, where
  // the next response would be read.
  for (std::string field : {"Content-Length: 5", "Transfer-Encoding: chunked"}) {
    std::string r = "HTTP/1.1 204 No Content\r\n" + field + "\r\n\r\n";
    Outcome o = parse(r + "hello");
    EXPECT_TRUE(o.done) << field;
    EXPECT_EQ(o.used, r.size()) << field;
    Response h = only(o);
    EXPECT_TRUE(h.body.empty()) << field;
    EXPECT_FALSE(h.keep_alive) << field;
  }
  EXPECT_TRUE(only(parse("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")).keep_alive);
  EXPECT_TRUE(only(parse("HTTP/1.1 204 No Content\r\n\r\n")).keep_alive);
}

TEST(Http1ResponseParser, NotModifiedHasNoBody) {
  std::string r = "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n";
  Outcome o = parse(r + "0\r\n\r\n");
  EXPECT_EQ(o.used, r.size());
  Response h = only(o);
  EXPECT_TRUE(h.ended);
  EXPECT_TRUE(h.keep_alive);
}

TEST(Http1ResponseParser, KeepAlive) {
  struct Case {
    std::string response;
    bool keep_alive;
  };
  for (const Case& c : std::vector<Case>{
           {"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true},
           {"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", false},
           {"HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 0\r\n\r\n", false},
           {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", true},
           {"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false},
           {"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", true},
       }) {
    EXPECT_EQ(only(parse(c.response)).keep_alive, c.keep_alive) << c.response;
  }
}

TEST(Http1ResponseParser, CloseDelimitedBodyEndsAtEof) {
  Recorder sink;
  UpstreamResponseHead head;
  InlineArena<> arena;
  Http1ResponseParser parser(sink, head, arena, kMax);
  parser.start(false);
  std::string r = "HTTP/1.1 200 OK\r\n\r\npartial";
  EXPECT_EQ(parser.feed(r.data(), r.size()), r.size());
  EXPECT_FALSE(parser.done());
  EXPECT_FALSE(head.keep_alive);
  EXPECT_EQ(head.content_length, -1);
  EXPECT_TRUE(parser.finish());
  EXPECT_TRUE(parser.done());
  ASSERT_EQ(sink.responses.size(), 1u);
  EXPECT_EQ(sink.responses[0].body, "partial");
  EXPECT_TRUE(sink.responses[0].ended);
}

TEST(Http1ResponseParser, CutResponsesAreNotComplete) {
  for (const std::string& r : std::vector<std::string>{
           "", "HTTP/1.1 200 OK\r\nContent-Len", "HTTP/1.1 200 OK\r\n",
           "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "HTTP/1.1 100 Continue\r\n\r\n",
           chunked("3\r\nabc\r\n"), chunked("a\r\nabc"), chunked("0\r\nX-T: 1\r\n")}) {
    Recorder sink;
    UpstreamResponseHead head;
    InlineArena<> arena;
    Http1ResponseParser parser(sink, head, arena, kMax);
    parser.start(false);
    parser.feed(r.data(), r.size());
    EXPECT_FALSE(parser.finish()) << r;
    EXPECT_FALSE(parser.done()) << r;
    for (const auto& resp : sink.responses)
      EXPECT_FALSE(resp.ended) << r;
  }
}

TEST(Http1ResponseParser, HeadLimitIsExact) {
  // The whole head counts: status line, fields, and the empty line.
  std::string start = "HTTP/1.1 200 OK\r\nX: ";
  std::string end = "\r\nContent-Length: 0\r\n\r\n";
  std::string fits = start + std::string(kMax - start.size() - end.size(), 'v') + end;
  ASSERT_EQ(fits.size(), kMax);
  EXPECT_TRUE(only(parse(fits, {.step = 7})).ended);
  std::string over = start + std::string(kMax - start.size() - end.size() + 1, 'v') + end;
  Outcome o = parse(over, {.step = 7});
  EXPECT_TRUE(o.failed);
  EXPECT_TRUE(o.responses.empty());
}

TEST(Http1ResponseParser, FramingFaultWithTheHeadIsFoundBeforeTheHeadIsHandedOn) {
  // One read holds the head and a bad chunk: the client gets a 502, not a cut response.
  Outcome o = parse(chunked("3\r\nabcXX0\r\n\r\n"));
  EXPECT_TRUE(o.failed);
  EXPECT_TRUE(o.responses.empty());
  // In a later read, it is found before any of that read's body is handed on.
  Outcome later =
      parse(chunked("3\r\nabc\r\n4\r\nwxyzXX0\r\n\r\n"), {.step = chunked("3\r\nabc\r\n").size()});
  EXPECT_TRUE(later.failed);
  ASSERT_EQ(later.responses.size(), 1u);
  EXPECT_EQ(later.responses[0].body, "abc");
}

TEST(Http1ResponseParser, ReusableAcrossResponses) {
  Recorder sink;
  UpstreamResponseHead head;
  InlineArena<> arena;
  Http1ResponseParser parser(sink, head, arena, kMax);
  const std::string responses[] = {
      "HTTP/1.1 204 No Content\r\n\r\n",
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
      chunked("2\r\nok\r\n0\r\nX-T: 1\r\n\r\n"),
      "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n", // to HEAD
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
  };
  for (int round = 0; round < 2; ++round) {
    for (const auto& r : responses) {
      bool head_request = r.find("Content-Length: 7") != std::string::npos;
      parser.start(head_request);
      EXPECT_EQ(parser.feed(r.data(), r.size()), r.size()) << r;
      EXPECT_TRUE(parser.done()) << parser.error_reason();
      EXPECT_TRUE(head.keep_alive) << r;
    }
    // A refused response leaves nothing behind for the next start().
    parser.start(false);
    std::string bad = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\rX";
    parser.feed(bad.data(), bad.size());
    EXPECT_TRUE(parser.failed());
  }
  EXPECT_EQ(sink.responses.size(), 10u);
  for (const auto& r : sink.responses)
    EXPECT_TRUE(r.ended);
}

TEST(Http1ResponseParser, ScansFromTheFirstResponseWithoutStart) {
  // The constructor starts the first response: nothing reads unscanned bytes.
  Recorder sink;
  UpstreamResponseHead head;
  InlineArena<> arena;
  Http1ResponseParser parser(sink, head, arena, kMax);
  std::string bad = "HTTP/1.1 200 OK\r\nContent-Length: 0\n\n";
  parser.feed(bad.data(), bad.size());
  EXPECT_TRUE(parser.failed());
}

TEST(Http1ResponseParser, NothingAfterTheEndIsScannedOrTaken) {
  // What follows a response is no request's: the upstream sees it left over and does not
  // reuse the connection. It is neither consumed nor a reason to refuse this response.
  std::string r = "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na";
  for (std::string after : {"\n", "\r\n", "garbage\rX", "HTTP/1.1 200 OK\r\n\r\n"}) {
    Outcome o = parse(r + after);
    EXPECT_TRUE(o.done) << o.reason;
    EXPECT_EQ(o.used, r.size());
  }
}

} // namespace
} // namespace portico::http
