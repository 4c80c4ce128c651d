// Http1ServerSession driven through a real ClientConnection on a socketpair: keep-alive,
// pipelining in order, a pipelining client that does not read, chunked request bodies,
// Expect: 100-continue, a bad request line, and a graceful drain.
#include "server/http1_server_session.h"
#include "server_session_harness.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace portico::server::test {
namespace {

// Answers every request at once with "hello <target>".
void answer_hello(Exchange& ex) {
  ex.respond(200, "text/plain", "hello " + std::string(ex.request().target));
}

TEST(Http1ServerSession, KeepAliveGetAnsweredTwiceOnOneConnection) {
  ServerHarness h;
  h.handler.answer = answer_hello;
  TestClient& c = h.connect();
  c.send("GET /one HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(h.run_until([&] { return parse_responses(c.received()).size() == 1; }));
  c.send("GET /two HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(h.run_until([&] { return parse_responses(c.received()).size() == 2; }));

  auto rs = parse_responses(c.received());
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[0].status, 200);
  EXPECT_EQ(rs[0].body, "hello /one");
  EXPECT_EQ(rs[1].status, 200);
  EXPECT_EQ(rs[1].body, "hello /two");
  for (const auto& r : rs) {
    EXPECT_EQ(r.header("connection"), "");
    EXPECT_EQ(r.header("content-length"), std::to_string(r.body.size()));
  }
  // Both on the one connection, which stays open for a third.
  EXPECT_FALSE(c.eof());
  EXPECT_EQ(h.context().connection_count(), 1u);
  EXPECT_EQ(h.handler.targets, (std::vector<std::string>{"/one", "/two"}));
  EXPECT_EQ(h.context().stats().connections_accepted.get(), 1u);
}

TEST(Http1ServerSession, Http10WithoutKeepAliveClosesAfterTheResponse) {
  ServerHarness h;
  h.handler.answer = answer_hello;
  TestClient& c = h.connect();
  c.send("GET /old HTTP/1.0\r\n\r\n");
  ASSERT_TRUE(h.run_until([&] { return c.eof(); }));
  auto rs = parse_responses(c.received(), true);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(c.received().substr(0, 12), "HTTP/1.0 200");
  EXPECT_EQ(rs[0].header("connection"), "close");
  EXPECT_EQ(rs[0].body, "hello /old");
}

TEST(Http1ServerSession, PipelinedRequestsAreDispatchedOneAtATimeAndAnsweredInOrder) {
  ServerHarness h; // the handler holds every exchange: the test answers them
  TestClient& c = h.connect();
  c.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
         "GET /b HTTP/1.1\r\nHost: x\r\n\r\n"
         "GET /c HTTP/1.1\r\nHost: x\r\n\r\n");
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(h.run_until([&] { return h.handler.exchanges.size() == i + 1; })) << i;
    // The next request waits in the input until this one is answered.
    h.run_ready();
    ASSERT_EQ(h.handler.exchanges.size(), i + 1);
    EXPECT_EQ(parse_responses(c.received()).size(), i);
    Exchange& ex = *h.handler.exchanges[i];
    ex.respond(200, "text/plain", "answer " + std::string(ex.request().target));
  }
  ASSERT_TRUE(h.run_until([&] { return parse_responses(c.received()).size() == 3; }));
  auto rs = parse_responses(c.received());
  EXPECT_EQ(rs[0].body, "answer /a");
  EXPECT_EQ(rs[1].body, "answer /b");
  EXPECT_EQ(rs[2].body, "answer /c");
  EXPECT_FALSE(c.eof());
}

TEST(Http1ServerSession, PipelinedRequestWaitsWhileTheClientDoesNotReadItsResponses) {
  // 2 MiB for /big: far more than the high watermark stays in the connection's output, with
  // the server's socket buffer kept small.
  const std::string big(2 << 20, 'b');
  ServerHarness h;
  h.handler.answer = [&](Exchange& ex) {
    if (ex.request().target == "/big")
      ex.respond(200, "application/octet-stream", big);
    else
      ex.respond(200, "text/plain", "small");
  };
  TestClient& c = h.connect(16 * 1024);
  c.pause_reading();
  c.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n"
         "GET /small HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(h.run_until([&] { return h.handler.exchanges.size() == 1; }));
  h.run_ready(50);
  EXPECT_EQ(h.handler.targets, (std::vector<std::string>{"/big"}))
      << "the pipelined request was parsed while megabytes waited for the client";

  c.resume_reading();
  ASSERT_TRUE(h.run_until([&] { return parse_responses(c.received()).size() == 2; }));
  auto rs = parse_responses(c.received());
  EXPECT_EQ(rs[0].body.size(), big.size());
  EXPECT_EQ(rs[0].body, big);
  EXPECT_EQ(rs[1].body, "small");
  EXPECT_EQ(h.handler.targets, (std::vector<std::string>{"/big", "/small"}));
  EXPECT_FALSE(c.eof());
}

TEST(Http1ServerSession, ChunkedRequestBodyIsDeliveredWholeToTheListener) {
  ServerHarness h;
  RecordingListener l;
  l.at_end = [&](Exchange& ex) {
    ex.respond(200, "text/plain", "got " + std::to_string(l.body.size()));
  };
  h.handler.answer = [&](Exchange& ex) { ex.set_listener(&l); };
  TestClient& c = h.connect();
  c.send("POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
  ASSERT_TRUE(h.run_until([&] { return l.body == "hello"; }));
  // Streamed as it comes: the first chunk before the rest is even sent.
  EXPECT_EQ(l.ends, 0);
  ASSERT_EQ(h.handler.exchanges.size(), 1u);
  EXPECT_TRUE(h.handler.exchanges[0]->request().chunked);
  // The next chunk split in the middle of its data, then the last chunk with a trailer.
  c.send("6\r\n wo");
  ASSERT_TRUE(h.run_until([&] { return l.body == "hello wo"; }));
  c.send("rld\r\n0\r\nx-checksum: 42\r\n\r\n");
  ASSERT_TRUE(h.run_until([&] { return parse_responses(c.received()).size() == 1; }));

  EXPECT_EQ(l.body, "hello world");
  EXPECT_EQ(l.ends, 1);
  EXPECT_EQ(l.trailers, (Fields{{"x-checksum", "42"}}));
  EXPECT_EQ(l.closes, 1);
  auto rs = parse_responses(c.received());
  EXPECT_EQ(rs[0].status, 200);
  EXPECT_EQ(rs[0].body, "got 11");
  // The body was read to its end: the connection carries on.
  EXPECT_EQ(rs[0].header("connection"), "");
  EXPECT_FALSE(c.eof());
}

TEST(Http1ServerSession, ExpectContinueIsAnsweredOnceTheHandlerWaitsForTheBody) {
  ServerHarness h;
  RecordingListener l;
  l.at_end = [&](Exchange& ex) { ex.respond(200, "text/plain", "stored " + l.body); };
  h.handler.answer = [&](Exchange& ex) { ex.set_listener(&l); };
  TestClient& c = h.connect();
  c.send("PUT /f HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  ASSERT_TRUE(h.run_until([&] { return !parse_responses(c.received()).empty(); }));
  h.run_ready();
  auto rs = parse_responses(c.received());
  ASSERT_EQ(rs.size(), 1u) << "only the interim response before the body";
  EXPECT_EQ(c.received(), "HTTP/1.1 100 Continue\r\n\r\n");
  EXPECT_EQ(l.body_calls, 0);

  c.send("hello");
  ASSERT_TRUE(h.run_until([&] { return parse_responses(c.received()).size() == 2; }));
  rs = parse_responses(c.received());
  EXPECT_EQ(rs[1].status, 200);
  EXPECT_EQ(rs[1].body, "stored hello");
  EXPECT_EQ(rs[1].header("connection"), "");
  EXPECT_EQ(l.ends, 1);
}

TEST(Http1ServerSession, ExpectContinueIsNotSentWhenTheHandlerRefusesTheBody) {
  ServerHarness h;
  h.handler.answer = [](Exchange& ex) { ex.respond(413, "text/plain", "too big\n"); };
  TestClient& c = h.connect();
  c.send("PUT /f HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n");
  ASSERT_TRUE(h.run_until([&] { return parse_responses(c.received()).size() == 1; }));
  h.run_ready();
  auto rs = parse_responses(c.received());
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].status, 413);
  EXPECT_EQ(rs[0].body, "too big\n");
  // Whether a body follows is now unknown: the connection cannot carry another request.
  EXPECT_EQ(rs[0].header("connection"), "close");
  EXPECT_EQ(c.received().find("100 Continue"), std::string::npos);
  // The client, told so, sends no body and ends its side; the server closes.
  c.shutdown_write();
  ASSERT_TRUE(h.run_until([&] { return c.eof(); }));
  EXPECT_EQ(parse_responses(c.received(), true).size(), 1u);
  ASSERT_TRUE(h.run_until([&] { return h.context().connection_count() == 0; }));
}

TEST(Http1ServerSession, ARefusedBodyThatNeverComesDoesNotHoldTheConnection) {
  // The client is told its body is refused and the connection closes; it sends nothing more
  // and never closes. The server must not wait for that body: it closes its side at once.
  ServerHarness h;
  h.handler.answer = [](Exchange& ex) { ex.respond(413, "text/plain", "too big\n"); };
  TestClient& c = h.connect();
  c.send("PUT /f HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n");
  ASSERT_TRUE(h.run_until([&] { return c.eof(); }));
  auto rs = parse_responses(c.received(), true);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].status, 413);
}

TEST(Http1ServerSession, AnEarlyAnswerToAnUploadClosesWithoutWaitingForTheRest) {
  // No Expect: the upload has begun; the answer comes first, and the connection will not be
  // kept (the rest of a large body is not worth reading). A client that stops sending must
  // not hold it.
  ServerHarness h;
  h.handler.answer = [](Exchange& ex) { ex.respond(403, "text/plain", "no\n"); };
  TestClient& c = h.connect();
  c.send("PUT /f HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\npartial");
  ASSERT_TRUE(h.run_until([&] { return c.eof(); }));
  auto rs = parse_responses(c.received(), true);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].status, 403);
  EXPECT_EQ(rs[0].header("connection"), "close");
}

TEST(Http1ServerSession, ExpectContinueComesBeforeASuccessThatStreamsTheBodyBack) {
  // An echo: the response head at once, streamed (chunked), its body the request's.
  struct Echo : RecordingListener {
    void on_request_body(Exchange& ex, std::string_view data) override {
      RecordingListener::on_request_body(ex, data);
      ex.send_body(data);
    }
  };
  ServerHarness h;
  Echo l;
  h.handler.answer = [&](Exchange& ex) {
    ex.set_listener(&l);
    ex.send_head(http::ResponseHead{});
  };
  l.at_end = [](Exchange& ex) { ex.end_response(); };
  TestClient& c = h.connect();
  c.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n");
  ASSERT_TRUE(
      h.run_until([&] { return c.received().find("\r\n\r\nHTTP/1.1 200") != std::string::npos; }));
  EXPECT_TRUE(c.received().starts_with("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"));
  c.send("abc");
  ASSERT_TRUE(h.run_until([&] { return parse_responses(c.received()).size() == 2; }));
  auto rs = parse_responses(c.received());
  EXPECT_EQ(rs[1].status, 200);
  EXPECT_EQ(rs[1].header("transfer-encoding"), "chunked");
  EXPECT_EQ(rs[1].body, "abc");
  EXPECT_EQ(l.body, "abc");
}

TEST(Http1ServerSession, BadRequestLineGets400AndTheConnectionCloses) {
  ServerHarness h;
  h.handler.answer = answer_hello;
  TestClient& c = h.connect();
  // A good request, then a request line with no version: the first is answered, the second
  // refused, and nothing after it is read.
  c.send("GET /ok HTTP/1.1\r\nHost: x\r\n\r\n"
         "GET /bad\r\nHost: x\r\n\r\n"
         "GET /never HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(h.run_until([&] { return c.eof(); }));
  auto rs = parse_responses(c.received(), true);
  ASSERT_EQ(rs.size(), 2u) << c.received();
  EXPECT_EQ(rs[0].status, 200);
  EXPECT_EQ(rs[1].status, 400);
  EXPECT_EQ(rs[1].header("connection"), "close");
  EXPECT_EQ(rs[1].body, "Bad Request\n");
  EXPECT_EQ(h.handler.targets, (std::vector<std::string>{"/ok"}));
  c.close();
  ASSERT_TRUE(h.run_until([&] { return h.context().connection_count() == 0; }));
}

TEST(Http1ServerSession, BadRequestLineFirstThingGets400) {
  ServerHarness h;
  h.handler.answer = answer_hello;
  TestClient& c = h.connect();
  c.send("NOT AN HTTP REQUEST\r\n\r\n");
  ASSERT_TRUE(h.run_until([&] { return c.eof(); }));
  auto rs = parse_responses(c.received(), true);
  ASSERT_EQ(rs.size(), 1u) << c.received();
  EXPECT_EQ(rs[0].status, 400);
  EXPECT_TRUE(h.handler.targets.empty());
}

TEST(Http1ServerSession, DrainClosesAnIdleConnectionAndLetsAnExchangeInFlightFinish) {
  ServerLimits limits;
  limits.drain_idle_grace = 0.05;
  limits.keepalive_timeout = 60; // only the drain closes the idle connection within the test
  ServerHarness h(limits);
  h.handler.answer = [](Exchange& ex) {
    if (ex.request().target == "/now")
      answer_hello(ex);
    // "/slow" is held: the test answers it after the drain began.
  };
  TestClient& idle = h.connect();
  TestClient& busy = h.connect();
  idle.send("GET /now HTTP/1.1\r\nHost: x\r\n\r\n");
  busy.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(h.run_until([&] {
    return parse_responses(idle.received()).size() == 1 && h.handler.exchanges.size() == 2;
  }));
  Exchange* slow = nullptr;
  for (Exchange* ex : h.handler.exchanges)
    if (ex->request().target == "/slow")
      slow = ex;
  ASSERT_NE(slow, nullptr);
  RecordingListener l;
  slow->set_listener(&l);

  bool drained = false;
  h.context().begin_drain([&] { drained = true; });
  ASSERT_TRUE(h.run_until([&] { return idle.eof(); }));
  EXPECT_EQ(parse_responses(idle.received(), true).size(), 1u);
  // The busy connection is still there, its exchange unanswered and not aborted.
  EXPECT_FALSE(busy.eof());
  EXPECT_EQ(l.closes, 0);
  EXPECT_TRUE(busy.received().empty());
  EXPECT_FALSE(drained);

  slow->respond(200, "text/plain", "late");
  ASSERT_TRUE(h.run_until([&] { return busy.eof(); }));
  auto rs = parse_responses(busy.received(), true);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].body, "late");
  EXPECT_EQ(rs[0].header("connection"), "close");
  EXPECT_EQ(l.closes, 1);
  idle.close();
  busy.close();
  ASSERT_TRUE(h.run_until([&] { return drained; }));
  EXPECT_EQ(h.context().connection_count(), 0u);
}

TEST(Http1ServerSession, DrainStillAnswersARequestThatComesWithinTheGrace) {
  ServerLimits limits;
  limits.drain_idle_grace = 5; // longer than the test takes
  ServerHarness h(limits);
  h.handler.answer = answer_hello;
  TestClient& c = h.connect();
  c.send("GET /first HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(h.run_until([&] { return parse_responses(c.received()).size() == 1; }));
  h.context().begin_drain([] {});
  c.send("GET /second HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(h.run_until([&] { return c.eof(); }));
  auto rs = parse_responses(c.received(), true);
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[0].header("connection"), "");
  EXPECT_EQ(rs[1].body, "hello /second");
  EXPECT_EQ(rs[1].header("connection"), "close");
}

TEST(Http1ServerSession, EveryStateHasItsOwnName) {
  using S = Http1ServerSession::State;
  std::set<std::string> names;
  for (S s : {S::IDLE, S::HEAD, S::REQUEST, S::RESPONSE, S::OUTPUT_FULL, S::UPGRADED, S::CLOSING,
              S::CLOSED})
    names.insert(to_string(s));
  EXPECT_EQ(names.size(), 8u);
  EXPECT_EQ(names.count("?"), 0u);
  EXPECT_STREQ(to_string(S::OUTPUT_FULL), "OUTPUT_FULL");
}

} // namespace
} // namespace portico::server::test
