// Http1RequestParser: what a strict HTTP/1 request reader accepts, and what it refuses with
// which status. The refusal table runs every vector fed whole and fed one byte at a time, since
// a check that only works when the bytes arrive together is a check a client can split around.
#include "http1_request_parser_support.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace portico::http {
namespace {

using namespace request_test;

// ---- refusals ----

struct Refusal {
  const char* name;
  std::string request;
  int status;
};

void PrintTo(const Refusal& r, std::ostream* os) {
  *os << r.name;
}

class RefusedRequest : public ::testing::TestWithParam<Refusal> {};

TEST_P(RefusedRequest, FedWhole) {
  const Refusal& r = GetParam();
  ParserLimits limits;
  limits.max_body_bytes = 1000;
  Outcome o = parse(r.request, limits);
  EXPECT_EQ(o.status(), r.status) << o.reason;
  for (const auto& req : o.requests)
    EXPECT_FALSE(req.ended) << "a refused request must never complete";
}

TEST_P(RefusedRequest, FedOneByteAtATime) {
  const Refusal& r = GetParam();
  ParserLimits limits;
  limits.max_body_bytes = 1000;
  Outcome o = parse(r.request, limits, 1);
  EXPECT_EQ(o.status(), r.status) << o.reason;
  for (const auto& req : o.requests)
    EXPECT_FALSE(req.ended) << "a refused request must never complete";
}

// Request smuggling: every way to make two readers disagree on where a request ends.
INSTANTIATE_TEST_SUITE_P(
    Smuggling, RefusedRequest,
    ::testing::Values(
        Refusal{"ContentLengthAndChunked",
                "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: "
                "chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
                400},
        Refusal{"ChunkedAndContentLength",
                "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: "
                "3\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
                400},
        Refusal{"TwoDifferentContentLengths",
                "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
                400},
        // RFC 9112 6.3 allows reading identical duplicates as one; refusing is safer, and is
        // what llhttp does.
        Refusal{"TwoIdenticalContentLengths",
                "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\ncontent-length: 3\r\n\r\nabc",
                400},
        Refusal{"ContentLengthList",
                "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 3\r\n\r\nabc", 400},
        Refusal{"ContentLengthPlus", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +3\r\n\r\nabc",
                400},
        Refusal{"ContentLengthMinus", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -3\r\n\r\nabc",
                400},
        Refusal{"ContentLengthHex", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x3\r\n\r\nabc",
                400},
        Refusal{"ContentLengthInnerSpace",
                "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1 2\r\n\r\nabc", 400},
        Refusal{"ContentLengthEmpty", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n",
                400},
        Refusal{"ContentLengthOverflow",
                "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n",
                400},
        Refusal{"ChunkedNotLast",
                "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\nabc",
                400},
        Refusal{"ChunkedTwice",
                "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
                "chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
                400},
        Refusal{"TransferEncodingEmpty",
                "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \r\n\r\nabc", 400},
        Refusal{"TransferEncodingInHttp10",
                "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 400},
        Refusal{"BareLfEverywhere", "GET / HTTP/1.1\nHost: a\n\n", 400},
        Refusal{"BareLfAfterRequestLine", "GET / HTTP/1.1\nHost: a\r\n\r\n", 400},
        Refusal{"BareLfAfterField", "GET / HTTP/1.1\r\nHost: a\nX: 1\r\n\r\n", 400},
        Refusal{"BareLfEndsHead", "GET / HTTP/1.1\r\nHost: a\r\n\n", 400},
        Refusal{"BareLfBeforeRequest", "\n\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        Refusal{"BareLfAfterEmptyLines", "\r\n\r\nGET / HTTP/1.1\nHost: a\n\n", 400},
        Refusal{"BareCrInValue", "GET / HTTP/1.1\r\nHost: a\rX: 1\r\n\r\n", 400},
        Refusal{"BareCrEndsHead", "GET / HTTP/1.1\r\nHost: a\r\n\rXGET /x HTTP/1.1\r\n\r\n", 400},
        Refusal{"BareCrAfterRequestLine", "GET / HTTP/1.1\rXHost: a\r\n\r\n", 400},
        Refusal{"ObsFoldSpace", "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", 400},
        Refusal{"ObsFoldTab", "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n\tb\r\n\r\n", 400},
        Refusal{"ObsFoldOfFraming",
                "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nX: 1\r\n "
                "Transfer-Encoding: chunked\r\n\r\n",
                400},
        Refusal{"WhitespaceBeforeFirstField", "GET / HTTP/1.1\r\n Host: a\r\n\r\n", 400},
        Refusal{"SpaceBeforeColon",
                "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n", 400},
        Refusal{"TabBeforeColon", "GET / HTTP/1.1\r\nHost: a\r\nX\t: 1\r\n\r\n", 400},
        Refusal{"NulInValue", std::string("GET / HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n", 35), 400},
        Refusal{"NulInName", std::string("GET / HTTP/1.1\r\nHost: a\r\nX\0: a\r\n\r\n", 34), 400},
        Refusal{"NulInTarget", std::string("GET /a\0 HTTP/1.1\r\nHost: a\r\n\r\n", 29), 400},
        Refusal{"DelInValue", "GET / HTTP/1.1\r\nHost: a\r\nX: a\x7f\r\n\r\n", 400},
        Refusal{"VerticalTabInValue", "GET / HTTP/1.1\r\nHost: a\r\nX: a\x0b\r\n\r\n", 400},
        Refusal{"EmptyFieldName", "GET / HTTP/1.1\r\nHost: a\r\n: x\r\n\r\n", 400},
        Refusal{"FieldWithoutColon", "GET / HTTP/1.1\r\nHost: a\r\nX\r\n\r\n", 400},
        Refusal{"SeparatorInFieldName", "GET / HTTP/1.1\r\nHost: a\r\nX(: 1\r\n\r\n", 400},
        // Chunk framing.
        Refusal{"ChunkSizeNotHex", chunked_post("zz\r\nabc\r\n0\r\n\r\n"), 400},
        Refusal{"ChunkSizeNegative", chunked_post("-3\r\nabc\r\n0\r\n\r\n"), 400},
        Refusal{"ChunkSizeSpaceAfter", chunked_post("3 \r\nabc\r\n0\r\n\r\n"), 400},
        Refusal{"ChunkSizeSpaceBefore", chunked_post(" 3\r\nabc\r\n0\r\n\r\n"), 400},
        Refusal{"ChunkSizeHexPrefix", chunked_post("0x3\r\nabc\r\n0\r\n\r\n"), 400},
        Refusal{"ChunkSizeMissing", chunked_post("\r\nabc\r\n0\r\n\r\n"), 400},
        Refusal{"ChunkSizeOverflow", chunked_post("fffffffffffffffff\r\nabc\r\n0\r\n\r\n"), 400},
        Refusal{"ChunkSizeHuge", chunked_post("7fffffffffffffff\r\nabc\r\n0\r\n\r\n"), 400},
        Refusal{"ChunkSizeBareLf", chunked_post("3\nabc\r\n0\r\n\r\n"), 400},
        Refusal{"ChunkSizeBareCr", chunked_post("3\rXabc\r\n0\r\n\r\n"), 400},
        Refusal{"ChunkExtensionBareLf", chunked_post("3;e\nxt\r\nabc\r\n0\r\n\r\n"), 400},
        Refusal{"ChunkExtensionControl", chunked_post("3;e=\x01\r\nabc\r\n0\r\n\r\n"), 400},
        Refusal{"ChunkDataWithoutCrlf", chunked_post("3\r\nabcXX0\r\n\r\n"), 400},
        Refusal{"ChunkDataBareLf", chunked_post("3\r\nabc\n0\r\n\r\n"), 400},
        Refusal{"ChunkDataTooLong", chunked_post("3\r\nabcd\r\n0\r\n\r\n"), 400},
        Refusal{"LastChunkBareLf", chunked_post("3\r\nabc\r\n0\n\r\n"), 400},
        Refusal{"TrailersEndBareLf", chunked_post("3\r\nabc\r\n0\r\n\n"), 400},
        Refusal{"TrailersEndBareCr", chunked_post("3\r\nabc\r\n0\r\n\rX"), 400},
        Refusal{"TrailerObsFold", chunked_post("0\r\nX: a\r\n b\r\n\r\n"), 400},
        Refusal{"TrailerBareLf", chunked_post("0\r\nX: 1\n\r\n"), 400},
        Refusal{"TrailerNul", chunked_post(std::string("0\r\nX: \0\r\n\r\n", 11)), 400}),
    [](const auto& info) { return std::string(info.param.name); });

// The request line and the head's other fields.
INSTANTIATE_TEST_SUITE_P(
    Head, RefusedRequest,
    ::testing::Values(
        Refusal{"DoubleSpaceBeforeTarget", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        Refusal{"DoubleSpaceBeforeVersion", "GET /  HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        Refusal{"SpaceAfterVersion", "GET / HTTP/1.1 \r\nHost: a\r\n\r\n", 400},
        Refusal{"SpaceInTarget", "GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        Refusal{"TabInTarget", "GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        Refusal{"RawUtf8InTarget", "GET /\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        Refusal{"FragmentInTarget", "GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        Refusal{"LowerCaseMethod", "get / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        Refusal{"UnknownMethod", "FOO / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        Refusal{"NoVersion", "GET /\r\n\r\n", 400},
        Refusal{"LowerCaseVersion", "GET / http/1.1\r\nHost: a\r\n\r\n", 400},
        Refusal{"MinorVersionTwoDigits", "GET / HTTP/1.10\r\nHost: a\r\n\r\n", 400},
        Refusal{"RelativeTarget", "GET x HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        Refusal{"AsteriskForGet", "GET * HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        Refusal{"MissingHost", "GET / HTTP/1.1\r\n\r\n", 400},
        Refusal{"TwoHosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
        Refusal{"HostWithSpace", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400},
        Refusal{"HostWithUserinfo", "GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", 400},
        Refusal{"AbsoluteFormUserinfo", "GET http://u@b/ HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        Refusal{"AbsoluteFormNoAuthority", "GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        Refusal{"AbsoluteFormOtherScheme", "GET ftp://b/x HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        Refusal{"ConnectOriginForm", "CONNECT /x HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        Refusal{"ConnectWithBody",
                "CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\nContent-Length: 2\r\n\r\nhi", 400},
        Refusal{"Http12", "GET / HTTP/1.2\r\nHost: a\r\n\r\n", 505},
        Refusal{"Http20", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505},
        Refusal{"Http31", "GET / HTTP/3.1\r\nHost: a\r\n\r\n", 505},
        Refusal{"Http09", "GET / HTTP/0.9\r\n\r\n", 505},
        Refusal{"Http2Preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505},
        Refusal{"TransferCodingGzip",
                "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
        Refusal{"TransferCodingGzipChunked",
                "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
                501},
        Refusal{
            "TransferCodingIdentityChunked",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity, chunked\r\n\r\n0\r\n\r\n",
            501},
        Refusal{"TransferCodingUnknown",
                "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n", 501},
        Refusal{"ExpectUnknown", "GET / HTTP/1.1\r\nHost: a\r\nExpect: foo\r\n\r\n", 417},
        Refusal{"ExpectList", "GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue, foo\r\n\r\n",
                417},
        Refusal{"ContentLengthOverLimit",
                "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1001\r\n\r\n", 413},
        Refusal{"ChunkOverLimit", chunked_post("3e9\r\n"), 413},
        Refusal{"ChunksOverLimit", chunked_post("1f4\r\n" + std::string(500, 'x') + "\r\n1f5\r\n"),
                413}),
    [](const auto& info) { return std::string(info.param.name); });

// ---- what is accepted, and how it reads ----

TEST(Http1RequestParser, ReadsASimpleGet) {
  Outcome o = parse("GET /p?q=1 HTTP/1.1\r\nHost: example.com:8080\r\nAccept: */*\r\n\r\n");
  ASSERT_EQ(o.error, ParseError::NONE) << o.reason;
  ASSERT_EQ(o.requests.size(), 1u);
  const Request& r = o.requests[0];
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.scheme, "http");
  EXPECT_EQ(r.authority, "example.com:8080");
  EXPECT_EQ(r.target, "/p?q=1");
  EXPECT_EQ(r.version, Version::HTTP_1_1);
  EXPECT_EQ(r.content_length, -1);
  EXPECT_FALSE(r.chunked);
  EXPECT_TRUE(r.keep_alive);
  EXPECT_FALSE(r.expect_continue);
  EXPECT_TRUE(r.ended);
  EXPECT_EQ(r.head_bytes, 60u); // every byte of the head, CRLFs included
}

TEST(Http1RequestParser, LowerCasesNamesAndTrimsValues) {
  Outcome o = parse("GET / HTTP/1.1\r\nHOST: a\r\nX-Mixed-Case:  \t v a l \t \r\nEmpty:\r\n"
                    "Sp: \r\nObs-Text: caf\xc3\xa9\r\n\r\n");
  ASSERT_EQ(o.error, ParseError::NONE) << o.reason;
  ASSERT_EQ(o.requests.size(), 1u);
  using H = std::pair<std::string, std::string>;
  EXPECT_EQ(o.requests[0].headers, (std::vector<H>{{"host", "a"},
                                                   {"x-mixed-case", "v a l"},
                                                   {"empty", ""},
                                                   {"sp", ""},
                                                   {"obs-text", "caf\xc3\xa9"}}));
}

TEST(Http1RequestParser, ReadsAContentLengthBody) {
  Outcome o = parse("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length:  005 \r\n\r\nhello");
  ASSERT_EQ(o.error, ParseError::NONE) << o.reason;
  ASSERT_EQ(o.requests.size(), 1u);
  EXPECT_EQ(o.requests[0].content_length, 5);
  EXPECT_EQ(o.requests[0].body, "hello");
  EXPECT_TRUE(o.requests[0].ended);
}

TEST(Http1RequestParser, ReadsAChunkedBodyWithExtensionsAndTrailers) {
  Outcome o = parse(chunked_post("3;ext=1\r\nabc\r\n00A;q=\"x y\"\r\n0123456789\r\n0\r\n"
                                 "X-Checksum: 42\r\nHost: evil\r\n\r\n") +
                    kGet);
  ASSERT_EQ(o.error, ParseError::NONE) << o.reason;
  ASSERT_EQ(o.requests.size(), 2u);
  const Request& r = o.requests[0];
  EXPECT_TRUE(r.chunked);
  EXPECT_EQ(r.content_length, -1);
  EXPECT_EQ(r.body, "abc0123456789");
  EXPECT_TRUE(r.ended);
  // Trailers never join the head: a trailer cannot smuggle in a Host.
  EXPECT_EQ(r.authority, "a");
  for (const auto& h : r.headers)
    EXPECT_NE(h.first, "x-checksum");
  EXPECT_EQ(o.requests[1].target, "/");
}

TEST(Http1RequestParser, TrailerSectionIsBounded) {
  ParserLimits limits;
  limits.max_header_bytes = 100;
  Outcome ok = parse(chunked_post("0\r\nX: " + std::string(60, 'v') + "\r\n\r\n"), limits);
  EXPECT_EQ(ok.error, ParseError::NONE) << ok.reason;
  Outcome big = parse(chunked_post("0\r\nX: " + std::string(200, 'v') + "\r\n\r\n"), limits);
  EXPECT_EQ(big.status(), 431);
}

TEST(Http1RequestParser, PausesAfterEachPipelinedRequest) {
  std::string a = "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n";
  std::string b = "POST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi";
  std::string c = "GET /3 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
  std::string all = a + b + c + "GET /4 HTTP/1.1\r\nHost: a\r\n\r\n";
  Recorder sink;
  RequestHead head;
  InlineArena<> arena;
  ParserLimits limits;
  Http1RequestParser parser(sink, head, arena, limits);
  EXPECT_TRUE(parser.idle());

  size_t used = parser.feed(all.data(), all.size());
  EXPECT_EQ(used, a.size());
  EXPECT_TRUE(parser.paused());
  EXPECT_TRUE(parser.idle());
  ASSERT_EQ(sink.requests.size(), 1u);
  // Paused, it takes nothing until resumed, and the head stays readable meanwhile.
  EXPECT_EQ(parser.feed(all.data() + used, all.size() - used), 0u);
  EXPECT_EQ(head.target, "/1");

  parser.resume();
  size_t k = parser.feed(all.data() + used, all.size() - used);
  EXPECT_EQ(k, b.size());
  used += k;
  ASSERT_EQ(sink.requests.size(), 2u);
  EXPECT_EQ(sink.requests[1].body, "hi");

  parser.resume();
  k = parser.feed(all.data() + used, all.size() - used);
  EXPECT_EQ(k, c.size());
  used += k;
  ASSERT_EQ(sink.requests.size(), 3u);
  EXPECT_FALSE(sink.requests[2].keep_alive);

  // After "Connection: close" nothing more is a request: the rest is consumed unread.
  parser.resume();
  EXPECT_EQ(parser.feed(all.data() + used, all.size() - used), all.size() - used);
  EXPECT_EQ(sink.requests.size(), 3u);
  EXPECT_FALSE(parser.failed());
}

TEST(Http1RequestParser, SplitFeedsReadTheSameAsOneFeed) {
  const std::string inputs[] = {
      kGet,
      "\r\nGET /after-empty-line HTTP/1.1\r\nHost: a\r\n\r\n",
      "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\nX-Long: " + std::string(300, 'L') +
          "\r\n\r\nhello world",
      chunked_post("5\r\nhello\r\n1;a=b\r\n \r\n5\r\nworld\r\n0\r\nT: 1\r\n\r\n"),
      "GET /a HTTP/1.1\r\nHost: a\r\n\r\nPOST /b HTTP/1.1\r\nHost: b\r\nContent-Length: 3\r\n\r\n"
      "xyzGET http://c:81/c?d HTTP/1.1\r\nHost: a\r\n\r\n",
      "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /two HTTP/1.0\r\n\r\n",
  };
  for (const auto& in : inputs) {
    Outcome whole = parse(in);
    ASSERT_EQ(whole.error, ParseError::NONE) << whole.reason << " in " << in;
    ASSERT_FALSE(whole.requests.empty());
    Outcome bytes = parse(in, {}, 1);
    EXPECT_EQ(bytes.error, ParseError::NONE) << bytes.reason;
    EXPECT_EQ(bytes.requests, whole.requests) << in;
    for (unsigned seed = 1; seed <= 20; ++seed) {
      Outcome split = parse_random_splits(in, seed);
      EXPECT_EQ(split.error, ParseError::NONE) << split.reason;
      EXPECT_EQ(split.requests, whole.requests) << "seed " << seed << " in " << in;
    }
  }
}

TEST(Http1RequestParser, AbsoluteFormBecomesOriginFormWithItsAuthority) {
  struct Case {
    const char* target;
    const char* scheme;
    const char* authority;
    const char* path;
  };
  for (const Case& c : {Case{"http://b.example/x?y=1", "http", "b.example", "/x?y=1"},
                        Case{"HTTPS://b.example:8443/x", "https", "b.example:8443", "/x"},
                        Case{"http://b.example", "http", "b.example", "/"},
                        Case{"http://b.example?q", "http", "b.example", "/?q"},
                        Case{"http://[::1]:80/", "http", "[::1]:80", "/"}}) {
    // The target's authority wins over Host (RFC 9112 3.2.2): the router and the upstream
    // must not see two different ones.
    Outcome o = parse(std::string("GET ") + c.target + " HTTP/1.1\r\nHost: a.example\r\n\r\n");
    ASSERT_EQ(o.error, ParseError::NONE) << o.reason << " for " << c.target;
    ASSERT_EQ(o.requests.size(), 1u);
    EXPECT_EQ(o.requests[0].scheme, c.scheme);
    EXPECT_EQ(o.requests[0].authority, c.authority);
    EXPECT_EQ(o.requests[0].target, c.path);
  }
}

TEST(Http1RequestParser, AcceptsAsteriskAndAuthorityForms) {
  Outcome options = parse("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n");
  ASSERT_EQ(options.error, ParseError::NONE) << options.reason;
  EXPECT_EQ(options.requests.at(0).target, "*");
  Outcome connect = parse("CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n");
  ASSERT_EQ(connect.error, ParseError::NONE) << connect.reason;
  EXPECT_EQ(connect.requests.at(0).target, "a.example:443");
  EXPECT_EQ(connect.requests.at(0).method, "CONNECT");
}

TEST(Http1RequestParser, ExpectContinueSetsTheFlag) {
  Outcome o = parse("PUT /x HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: "
                    "1\r\n\r\nx");
  ASSERT_EQ(o.error, ParseError::NONE) << o.reason;
  EXPECT_TRUE(o.requests.at(0).expect_continue);
  EXPECT_FALSE(parse(kGet).requests.at(0).expect_continue);
}

TEST(Http1RequestParser, KeepAliveFollowsTheVersionAndConnection) {
  struct Case {
    const char* request;
    Version version;
    bool keep_alive;
  };
  for (const Case& c : {
           Case{"GET / HTTP/1.0\r\n\r\n", Version::HTTP_1_0, false},
           Case{"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", Version::HTTP_1_0, true},
           Case{"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\nHost: a\r\n\r\n", Version::HTTP_1_0,
                true},
           Case{"GET / HTTP/1.1\r\nHost: a\r\n\r\n", Version::HTTP_1_1, true},
           Case{"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", Version::HTTP_1_1, false},
           Case{"GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, close\r\n\r\n",
                Version::HTTP_1_1, false},
       }) {
    Outcome o = parse(c.request);
    ASSERT_EQ(o.error, ParseError::NONE) << o.reason << " for " << c.request;
    ASSERT_EQ(o.requests.size(), 1u);
    EXPECT_EQ(o.requests[0].version, c.version) << c.request;
    EXPECT_EQ(o.requests[0].keep_alive, c.keep_alive) << c.request;
  }
  // A persistent HTTP/1.0 connection carries the next request; a plain one does not.
  EXPECT_EQ(parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET / HTTP/1.0\r\n\r\n")
                .requests.size(),
            2u);
  EXPECT_EQ(parse("GET / HTTP/1.0\r\n\r\nGET / HTTP/1.0\r\n\r\n").requests.size(), 1u);
}

TEST(Http1RequestParser, DeclinedUpgradeReadsOnAsHttp1) {
  Outcome o = parse("GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                    "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n" +
                    kGet);
  ASSERT_EQ(o.error, ParseError::NONE) << o.reason;
  ASSERT_EQ(o.requests.size(), 2u);
  EXPECT_TRUE(o.requests[0].ended);
  EXPECT_TRUE(o.requests[1].ended);
}

TEST(Http1RequestParser, TargetLimitIs414) {
  ParserLimits limits;
  limits.max_uri_bytes = 100;
  std::string at_limit = "/" + std::string(99, 'a');
  EXPECT_EQ(parse("GET " + at_limit + " HTTP/1.1\r\nHost: a\r\n\r\n", limits).error,
            ParseError::NONE);
  EXPECT_EQ(parse("GET " + at_limit + "b HTTP/1.1\r\nHost: a\r\n\r\n", limits).status(), 414);
  EXPECT_EQ(parse("GET " + at_limit + "b HTTP/1.1\r\nHost: a\r\n\r\n", limits, 1).status(), 414);
  // A request line longer than the whole head may be is refused before llhttp sees it.
  std::string huge = "GET /" + std::string(40000, 'a') + " HTTP/1.1\r\nHost: a\r\n\r\n";
  EXPECT_EQ(parse(huge).status(), 414);
}

TEST(Http1RequestParser, HeaderSectionLimitIs431) {
  ParserLimits limits;
  limits.max_header_bytes = 200;
  std::string head = "GET / HTTP/1.1\r\nHost: a\r\nX: ";
  std::string fits = head + std::string(200 - head.size() - 4, 'v') + "\r\n\r\n";
  ASSERT_EQ(fits.size(), 200u);
  EXPECT_EQ(parse(fits, limits).error, ParseError::NONE) << parse(fits, limits).reason;
  std::string over = head + std::string(200 - head.size() - 3, 'v') + "\r\n\r\n";
  EXPECT_EQ(parse(over, limits).status(), 431);
  EXPECT_EQ(parse(over, limits, 7).status(), 431);
  // Whitespace llhttp skips without a callback counts too.
  std::string spaces = head + std::string(300, ' ') + "v\r\n\r\n";
  EXPECT_EQ(parse(spaces, limits).status(), 431);
}

TEST(Http1RequestParser, TooManyHeadersIs431) {
  ParserLimits limits;
  limits.max_headers = 3;
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: a\r\nB: 1\r\nC: 1\r\n\r\n", limits).error,
            ParseError::NONE);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: a\r\nB: 1\r\nC: 1\r\nD: 1\r\n\r\n", limits).status(),
            431);
}

TEST(Http1RequestParser, BodyLimitIs413) {
  ParserLimits limits;
  limits.max_body_bytes = 10;
  std::string ten(10, 'x');
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n" + ten, limits).error,
            ParseError::NONE);
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\n" + ten + "x", limits)
                .status(),
            413);
  EXPECT_EQ(parse(chunked_post("5\r\n12345\r\n5\r\n67890\r\n0\r\n\r\n"), limits).error,
            ParseError::NONE);
  EXPECT_EQ(parse(chunked_post("5\r\n12345\r\n6\r\n"), limits).status(), 413);
  EXPECT_EQ(parse(chunked_post("5\r\n12345\r\n6\r\n"), limits, 1).status(), 413);
  limits.max_body_bytes = -1;
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n" +
                      std::string(100000, 'x'),
                  limits)
                .error,
            ParseError::NONE);
}

TEST(Http1RequestParser, StaysFailedAndIdleTracksTheMessage) {
  Recorder sink;
  RequestHead head;
  InlineArena<> arena;
  ParserLimits limits;
  Http1RequestParser parser(sink, head, arena, limits);
  std::string part = "GET / HTTP/1.1\r\nHo";
  EXPECT_EQ(parser.feed(part.data(), part.size()), part.size());
  EXPECT_FALSE(parser.idle()); // EOF here is a truncated request
  std::string bad = "st: a\r\nX: 1\n\r\n";
  parser.feed(bad.data(), bad.size());
  ASSERT_TRUE(parser.failed());
  EXPECT_EQ(parser.error(), ParseError::BAD_REQUEST);
  EXPECT_STRNE(parser.error_reason(), "");
  EXPECT_FALSE(parser.idle());
  EXPECT_EQ(parser.feed(kGet.data(), kGet.size()), 0u);
  EXPECT_TRUE(sink.requests.empty());
}

TEST(Http1RequestParser, ParseErrorStatuses) {
  EXPECT_EQ(parse_error_status(ParseError::BAD_REQUEST), 400);
  EXPECT_EQ(parse_error_status(ParseError::URI_TOO_LONG), 414);
  EXPECT_EQ(parse_error_status(ParseError::HEADERS_TOO_LARGE), 431);
  EXPECT_EQ(parse_error_status(ParseError::BODY_TOO_LARGE), 413);
  EXPECT_EQ(parse_error_status(ParseError::BAD_VERSION), 505);
  EXPECT_EQ(parse_error_status(ParseError::NOT_IMPLEMENTED), 501);
  EXPECT_EQ(parse_error_status(ParseError::EXPECTATION_FAILED), 417);
}

} // namespace
} // namespace portico::http
