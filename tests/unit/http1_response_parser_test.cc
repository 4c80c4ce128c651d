#include "http/http1_response_parser.h"

#include <gtest/gtest.h>
#include <string>

namespace portico::http {
namespace {

struct Collect : Http1ResponseParser::Sink {
  int heads = 0, ends = 0;
  std::string body;
  std::vector<std::pair<std::string, std::string>> trailers;
  int status = 0;
  void on_response_head(UpstreamResponseHead& h) override {
    ++heads;
    status = h.status;
  }
  void on_response_body(std::string_view d) override { body.append(d); }
  void on_response_trailer(std::string_view n, std::string_view v) override {
    trailers.emplace_back(n, v);
  }
  void on_response_end() override { ++ends; }
};

struct Fixture : ::testing::Test {
  Collect sink;
  UpstreamResponseHead head;
  Arena arena;
  Http1ResponseParser parser{sink, head, arena, 4096};
};

TEST_F(Fixture, ContentLengthAndKeepAliveHint) {
  parser.start(false);
  std::string r = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nKeep-Alive: timeout=7, max=9\r\n"
                  "X-A: b  \r\n\r\nhelloEXTRA";
  size_t used = parser.feed(r.data(), r.size());
  EXPECT_EQ(used, r.size() - 5);
  EXPECT_TRUE(parser.done());
  EXPECT_EQ(sink.body, "hello");
  EXPECT_EQ(head.content_length, 5);
  EXPECT_TRUE(head.keep_alive);
  EXPECT_DOUBLE_EQ(head.keepalive_timeout, 7);
  ASSERT_EQ(head.headers.size(), 3u);
  EXPECT_EQ(head.headers[2].name, "x-a");
  EXPECT_EQ(head.headers[2].value, "b");
}

TEST_F(Fixture, InterimResponsesSkippedChunkedWithTrailers) {
  parser.start(false);
  std::string r = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: "
                  "chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Sum: 9\r\n\r\n";
  for (char c : r) // one byte at a time
    parser.feed(&c, 1);
  EXPECT_TRUE(parser.done());
  EXPECT_EQ(sink.heads, 1);
  EXPECT_EQ(sink.status, 201);
  EXPECT_TRUE(head.chunked);
  EXPECT_EQ(sink.body, "abc");
  ASSERT_EQ(sink.trailers.size(), 1u);
  EXPECT_EQ(sink.trailers[0].first, "x-sum");
}

TEST_F(Fixture, HeadResponseHasNoBody) {
  parser.start(true);
  std::string r = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n";
  parser.feed(r.data(), r.size());
  EXPECT_TRUE(parser.done());
  EXPECT_TRUE(sink.body.empty());
}

TEST_F(Fixture, CloseDelimitedBodyEndsAtEof) {
  parser.start(false);
  std::string r = "HTTP/1.1 200 OK\r\n\r\npartial";
  parser.feed(r.data(), r.size());
  EXPECT_FALSE(parser.done());
  EXPECT_FALSE(head.keep_alive);
  EXPECT_TRUE(parser.finish());
  EXPECT_EQ(sink.body, "partial");
}

TEST_F(Fixture, TruncatedBodyIsNotComplete) {
  parser.start(false);
  std::string r = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
  parser.feed(r.data(), r.size());
  EXPECT_FALSE(parser.finish());
  EXPECT_EQ(sink.ends, 0);
}

TEST_F(Fixture, GarbageAndOversizedHeadsFail) {
  parser.start(false);
  std::string g = "SSH-2.0-OpenSSH\r\n";
  parser.feed(g.data(), g.size());
  EXPECT_TRUE(parser.failed());

  Collect s2;
  UpstreamResponseHead h2;
  Arena a2;
  Http1ResponseParser p2(s2, h2, a2, 64);
  p2.start(false);
  std::string big = "HTTP/1.1 200 OK\r\nX: " + std::string(100, 'a') + "\r\n\r\n";
  p2.feed(big.data(), big.size());
  EXPECT_TRUE(p2.failed());

  Collect s3;
  UpstreamResponseHead h3;
  Arena a3;
  Http1ResponseParser p3(s3, h3, a3, 4096);
  p3.start(false);
  std::string sw = "HTTP/1.1 101 Switching Protocols\r\n\r\n";
  p3.feed(sw.data(), sw.size());
  EXPECT_TRUE(p3.failed());
}

TEST_F(Fixture, ReusableAcrossResponses) {
  for (int i = 0; i < 3; ++i) {
    parser.start(false);
    std::string r = "HTTP/1.1 204 No Content\r\n\r\n";
    EXPECT_EQ(parser.feed(r.data(), r.size()), r.size());
    EXPECT_TRUE(parser.done());
  }
  EXPECT_EQ(sink.ends, 3);
}

} // namespace
} // namespace portico::http
