// The plain request's fast path (http/http1_request_fast_head.cc) against llhttp: every head,
// plain, declined or refused, read whole and a byte at a time, the same way.
#include "http1_request_parser_support.h"

namespace portico::http {
namespace {

using namespace request_test;

// A head that arrives whole is read by the fast path (http1_request_fast_head.cc) where it is
// plain, by llhttp otherwise; one byte at a time it is always llhttp's. Both must read every
// head, plain, almost plain or refused, the same way: the same requests, the same refusal.
TEST(Http1RequestParser, FastPathReadsEveryHeadAsLlhttpDoes) {
  ParserLimits small;
  small.max_uri_bytes = 16;
  small.max_headers = 3;
  const std::pair<std::string, ParserLimits> inputs[] = {
      {kGet, {}},
      {"HEAD /h?q=1&r=%20 HTTP/1.1\r\nHOST: Example.COM:8080\r\nX-Mixed-Case:  v  \t\r\n"
       "Empty:\r\nTabbed:\tin\tside\t\r\n\r\n",
       {}},
      {"OPTIONS /o HTTP/1.1\r\nHost: a\r\n\r\nDELETE /d HTTP/1.1\r\nHost: a\r\n\r\n"
       "PATCH /p HTTP/1.1\r\nHost: a\r\n\r\nPUT /u HTTP/1.1\r\nHost: a\r\n\r\n"
       "POST /n HTTP/1.1\r\nHost: a\r\n\r\n",
       {}},
      {"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\nGET /never HTTP/1.1\r\n\r\n", {}},
      {"GET / HTTP/1.1\r\nHost: a\r\nConnection: Keep-Alive\r\n\r\n", {}},
      {"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET / HTTP/1.0\r\n\r\n", {}},
      {"GET / HTTP/1.0\r\nConnection: close\r\n\r\n", {}},
      // Declined to llhttp: what the fast path leaves to it, alone and between plain ones.
      {"GET / HTTP/1.1\r\nHost: a\r\nConnection: close \r\n\r\n", {}},
      {"GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, x\r\n\r\n", {}},
      {"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\nConnection: close\r\n\r\n", {}},
      {"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nokGET / HTTP/1.1\r\nHost: a\r\n\r\n",
       {}},
      {"GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n"
       "GET /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
       "GET /d HTTP/1.1\r\nHost: a\r\n\r\n",
       {}},
      {"GET / HTTP/1.1\r\nHost: a\r\nProxy-Connection: close\r\n\r\n", {}},
      {"GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", {}},
      {"get / HTTP/1.1\r\nHost: a\r\n\r\n", {}},
      {"PROPFIND / HTTP/1.1\r\nHost: a\r\n\r\n", {}},
      {"GET http://b/x HTTP/1.1\r\nHost: a\r\n\r\n", {}},
      {"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", {}},
      {"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", {}},
      {"GET / HTTP/1.2\r\nHost: a\r\n\r\n", {}},
      {"GET / HTTP/2.0\r\nHost: a\r\n\r\n", {}},
      // Refused after the head: by the checks both readings share.
      {"GET / HTTP/1.1\r\n\r\n", {}},
      {"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", {}},
      {"GET / HTTP/1.1\r\nHost: a@b\r\n\r\n", {}},
      {"GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n", {}},
      {"GET / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n", {}},
      // At the limits and past them.
      {"GET /0123456789abcde HTTP/1.1\r\nHost: a\r\n\r\n", small},
      {"GET /0123456789abcdef HTTP/1.1\r\nHost: a\r\n\r\n", small},
      {"GET / HTTP/1.1\r\nHost: a\r\nB: 1\r\nC: 2\r\n\r\n", small},
      {"GET / HTTP/1.1\r\nHost: a\r\nB: 1\r\nC: 2\r\nD: 3\r\n\r\n", small},
      // llhttp takes a Connection field among trailers as the connection's: what follows
      // stays llhttp's to read (the fuzzer's find).
      {chunked_post("0\r\nConnection: close\r\n\r\n") + kGet, {}},
  };
  for (const auto& [in, limits] : inputs) {
    Outcome whole = parse(in, limits);
    Outcome bytes = parse(in, limits, 1);
    EXPECT_EQ(whole.requests, bytes.requests) << in;
    EXPECT_EQ(whole.error, bytes.error) << in << whole.reason << " / " << bytes.reason;
  }
  // And what the plain ones were read as, so that agreeing is not agreeing on nothing.
  Outcome plain = parse(inputs[1].first);
  ASSERT_EQ(plain.requests.size(), 1u);
  const Request& r = plain.requests[0];
  EXPECT_EQ(r.method, "HEAD");
  EXPECT_EQ(r.target, "/h?q=1&r=%20");
  EXPECT_EQ(r.authority, "Example.COM:8080");
  using Fields = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(r.headers, (Fields{{"host", "Example.COM:8080"},
                               {"x-mixed-case", "v"},
                               {"empty", ""},
                               {"tabbed", "in\tside"}}));
  EXPECT_TRUE(r.keep_alive && r.ended);
  EXPECT_EQ(r.head_bytes, inputs[1].first.size());
  EXPECT_EQ(parse(inputs[2].first).requests.size(), 5u);
  EXPECT_EQ(parse(inputs[3].first).requests.size(), 1u); // nothing read after a close
  EXPECT_FALSE(parse(inputs[6].first).requests[0].keep_alive);
  EXPECT_EQ(parse(inputs[21].first).status(), 400);
  EXPECT_EQ(parse(inputs[26].first, small).status(), 200);
  EXPECT_EQ(parse(inputs[27].first, small).status(), 414);
  EXPECT_EQ(parse(inputs[28].first, small).status(), 200);
  EXPECT_EQ(parse(inputs[29].first, small).status(), 431);
}

} // namespace
} // namespace portico::http
