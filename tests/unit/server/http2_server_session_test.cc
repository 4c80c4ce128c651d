// Http2ServerSession driven through a real ClientConnection on a socketpair, by an nghttp2
// client session in the test: a GET on a stream, two streams at once answered out of order, a
// request body delivered to the listener, and RST_STREAM closing the exchange.
#include "server/http2_exchange.h"
#include "server/http2_server_session.h"
#include "server_session_harness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <nghttp2/nghttp2.h>
#include <string>

namespace portico::server::test {
namespace {

// An HTTP/2 client over a TestClient: frames built by nghttp2, written to the socket at once,
// and what the server sends fed back to nghttp2 as the loop reads it.
class H2Client {
public:
  struct Stream {
    int status = 0;
    std::string body;
    bool closed = false;
    uint32_t error_code = 0;
  };

  explicit H2Client(TestClient& sock, std::vector<nghttp2_settings_entry> settings = {})
      : sock_(sock) {
    nghttp2_session_callbacks* cbs;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
    nghttp2_session_client_new(&session_, cbs, this);
    nghttp2_session_callbacks_del(cbs);
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings.data(), settings.size());
    sock_.on_data = [this](std::string_view d) {
      ssize_t n =
          nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(d.data()), d.size());
      EXPECT_EQ(n, static_cast<ssize_t>(d.size())) << "the server sent what nghttp2 refuses";
      flush(); // SETTINGS ACK, WINDOW_UPDATE, PING ACK
    };
    flush(); // the client preface and SETTINGS
  }
  ~H2Client() {
    sock_.on_data = nullptr;
    nghttp2_session_del(session_);
  }
  H2Client(const H2Client&) = delete;
  H2Client& operator=(const H2Client&) = delete;

  // extra: more fields after the pseudo-fields, as given (not copied, so not lower-cased).
  int32_t get(const std::string& path,
              const std::vector<std::pair<std::string, std::string>>& extra = {}) {
    auto nv = request_fields("GET", path);
    for (const auto& [n, v] : extra) {
      const std::string& name = paths_.emplace_back(n);
      const std::string& value = paths_.emplace_back(v);
      nv.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(),
                    value.size(), NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE});
    }
    int32_t id = nghttp2_submit_request(session_, nullptr, nv.data(), nv.size(), nullptr, nullptr);
    flush();
    return id;
  }
  // A POST whose HEADERS and first DATA are sent, and the stream left open.
  int32_t post_open(const std::string& path, const std::string& first) {
    auto nv = request_fields("POST", path);
    Body& body = bodies_.emplace_back();
    body.data = first;
    nghttp2_data_provider prd;
    prd.source.ptr = &body;
    prd.read_callback = read_body;
    int32_t id = nghttp2_submit_request(session_, nullptr, nv.data(), nv.size(), &prd, nullptr);
    body_of_[id] = &body;
    flush();
    return id;
  }
  // More of a request body; end: the last of it (END_STREAM).
  void send_data(int32_t id, const std::string& data, bool end) {
    Body& body = *body_of_.at(id);
    body.data += data;
    body.end = end;
    EXPECT_EQ(nghttp2_session_resume_data(session_, id), 0);
    flush();
  }
  void reset(int32_t id, uint32_t code) {
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, code);
    flush();
  }
  void ping() {
    nghttp2_submit_ping(session_, NGHTTP2_FLAG_NONE, nullptr);
    flush();
  }

  std::map<int32_t, Stream> streams;
  std::vector<int32_t> close_order;
  bool goaway = false;
  int ping_acks = 0;
  std::vector<size_t> data_lengths; // of every DATA frame received

private:
  std::vector<nghttp2_nv> request_fields(const char* method, const std::string& path) {
    paths_.push_back(path); // the values must outlive the submit call
    const std::string& p = paths_.back();
    auto nv = [](const char* n, const char* v, size_t vlen) {
      return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(n)),
                        reinterpret_cast<uint8_t*>(const_cast<char*>(v)), std::strlen(n), vlen,
                        NGHTTP2_NV_FLAG_NONE};
    };
    return {nv(":method", method, std::strlen(method)), nv(":scheme", "http", 4),
            nv(":authority", "x", 1), nv(":path", p.data(), p.size())};
  }
  void flush() {
    for (;;) {
      const uint8_t* p;
      ssize_t n = nghttp2_session_mem_send(session_, &p);
      ASSERT_GE(n, 0);
      if (n == 0)
        return;
      sock_.send({reinterpret_cast<const char*>(p), static_cast<size_t>(n)});
    }
  }
  struct Body {
    std::string data; // not framed yet
    bool end = false; // the last of it is in data
  };
  static ssize_t read_body(nghttp2_session*, int32_t, uint8_t* buf, size_t len, uint32_t* flags,
                           nghttp2_data_source* src, void*) {
    auto* b = static_cast<Body*>(src->ptr);
    if (b->data.empty() && !b->end)
      return NGHTTP2_ERR_DEFERRED; // send_data resumes it
    size_t n = std::min(len, b->data.size());
    std::memcpy(buf, b->data.data(), n);
    b->data.erase(0, n);
    if (b->data.empty() && b->end)
      *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }
  static H2Client* self(void* ud) { return static_cast<H2Client*>(ud); }
  static int on_header(nghttp2_session*, const nghttp2_frame* f, const uint8_t* name, size_t nlen,
                       const uint8_t* value, size_t vlen, uint8_t, void* ud) {
    if (f->hd.type == NGHTTP2_HEADERS &&
        std::string_view(reinterpret_cast<const char*>(name), nlen) == ":status")
      self(ud)->streams[f->hd.stream_id].status =
          std::stoi(std::string(reinterpret_cast<const char*>(value), vlen));
    return 0;
  }
  static int on_data(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t len,
                     void* ud) {
    self(ud)->streams[id].body.append(reinterpret_cast<const char*>(data), len);
    return 0;
  }
  static int on_stream_close(nghttp2_session*, int32_t id, uint32_t code, void* ud) {
    auto& st = self(ud)->streams[id];
    st.closed = true;
    st.error_code = code;
    self(ud)->close_order.push_back(id);
    return 0;
  }
  static int on_frame_recv(nghttp2_session*, const nghttp2_frame* f, void* ud) {
    if (f->hd.type == NGHTTP2_GOAWAY)
      self(ud)->goaway = true;
    if (f->hd.type == NGHTTP2_PING && (f->hd.flags & NGHTTP2_FLAG_ACK))
      ++self(ud)->ping_acks;
    if (f->hd.type == NGHTTP2_DATA)
      self(ud)->data_lengths.push_back(f->hd.length);
    return 0;
  }

  TestClient& sock_;
  nghttp2_session* session_ = nullptr;
  std::deque<Body> bodies_; // request bodies, where their data providers point
  std::map<int32_t, Body*> body_of_;
  std::deque<std::string> paths_;
};

// A stream's object is made for each concurrent stream and kept parked for reuse. The request's
// fields and a small response's bytes share its arena's inline bytes (then one spare chunk);
// with 1 KiB of them and 512 more for the response the object was 1,968 bytes, a tenth of a
// busy h2c connection's memory.
TEST(Http2ServerSession, AStreamsObjectIsItsArenaAndLittleElse) {
  EXPECT_LE(sizeof(Http2Exchange), http::Arena::kInline + 512);
}

TEST(Http2ServerSession, GetOnAStreamIsAnswered) {
  ServerHarness h;
  http::Version version = http::Version::HTTP_1_1;
  std::string authority;
  h.handler.answer = [&](Exchange& ex) {
    version = ex.request().version;
    authority = ex.request().authority;
    ex.respond(200, "text/plain", "hello " + std::string(ex.request().target));
  };
  TestClient& sock = h.connect();
  H2Client c(sock);
  int32_t id = c.get("/x");
  ASSERT_TRUE(h.run_until([&] { return c.streams[id].closed; }));
  EXPECT_EQ(c.streams[id].status, 200);
  EXPECT_EQ(c.streams[id].body, "hello /x");
  EXPECT_EQ(c.streams[id].error_code, static_cast<uint32_t>(NGHTTP2_NO_ERROR));
  EXPECT_EQ(version, http::Version::HTTP_2);
  EXPECT_EQ(authority, "x");
  EXPECT_EQ(h.handler.targets, (std::vector<std::string>{"/x"}));
  // The connection stays for more streams.
  EXPECT_FALSE(c.goaway);
  EXPECT_FALSE(sock.eof());
  EXPECT_EQ(h.context().stats().h2_streams_closed.get(), 1u);
}

uint64_t sleeping(ServerHarness& h) {
  auto& st = h.context().stats();
  return st.h2_dormant_entered.get() - st.h2_dormant_left.get();
}

TEST(Http2ServerSession, AConnectionWithoutAStreamSleepsAndWakesWithTheClientsSettings) {
  ServerHarness h;
  h.handler.answer = [](Exchange& ex) { ex.respond(200, "text/plain", "hello world\n"); };
  TestClient& sock = h.connect();
  // A stream window of 5 bytes: a session that forgot it would send the body in one frame.
  H2Client c(sock, {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 5}});
  ASSERT_TRUE(h.run_until([&] { return sleeping(h) == 1; }));
  // A PING wakes it; answered, it sleeps again.
  c.ping();
  ASSERT_TRUE(h.run_until(
      [&] { return c.ping_acks == 1 && h.context().stats().h2_dormant_entered.get() == 2; }));
  EXPECT_EQ(sleeping(h), 1u);
  int32_t id = c.get("/x");
  ASSERT_TRUE(h.run_until([&] { return c.streams[id].closed; }));
  EXPECT_EQ(c.streams[id].status, 200);
  EXPECT_EQ(c.streams[id].body, "hello world\n");
  ASSERT_FALSE(c.data_lengths.empty());
  EXPECT_EQ(c.data_lengths.front(), 5u);
  // With a stream behind it the session stays awake until h2_sleep_after (1 s) of quiet.
  h.run_ready();
  EXPECT_EQ(sleeping(h), 0u);
  int32_t again = c.get("/y");
  ASSERT_TRUE(h.run_until([&] { return c.streams[again].closed; }));
  EXPECT_EQ(c.streams[again].body, "hello world\n");
  EXPECT_FALSE(c.goaway);
  EXPECT_FALSE(sock.eof());
}

TEST(Http2ServerSession, TwoConcurrentStreamsAreAnsweredInTheOrderTheHandlerChooses) {
  ServerHarness h; // every exchange is held: the test answers them
  TestClient& sock = h.connect();
  H2Client c(sock);
  int32_t first = c.get("/first");
  int32_t second = c.get("/second");
  // Both reach the handler before either is answered: nothing serialises them.
  ASSERT_TRUE(h.run_until([&] { return h.handler.exchanges.size() == 2; }));
  h.run_ready();
  EXPECT_TRUE(c.close_order.empty());
  Exchange* ex_first = nullptr;
  Exchange* ex_second = nullptr;
  for (Exchange* ex : h.handler.exchanges)
    (ex->request().target == "/first" ? ex_first : ex_second) = ex;
  ASSERT_NE(ex_first, nullptr);
  ASSERT_NE(ex_second, nullptr);

  ex_second->respond(200, "text/plain", "two");
  ASSERT_TRUE(h.run_until([&] { return c.streams[second].closed; }));
  EXPECT_FALSE(c.streams[first].closed) << "the first stream waits for its own answer only";
  ex_first->respond(201, "text/plain", "one");
  ASSERT_TRUE(h.run_until([&] { return c.streams[first].closed; }));

  EXPECT_EQ(c.close_order, (std::vector<int32_t>{second, first}));
  EXPECT_EQ(c.streams[first].status, 201);
  EXPECT_EQ(c.streams[first].body, "one");
  EXPECT_EQ(c.streams[second].status, 200);
  EXPECT_EQ(c.streams[second].body, "two");
}

TEST(Http2ServerSession, RequestBodyIsDeliveredToTheListener) {
  ServerHarness h;
  RecordingListener l;
  l.at_end = [&](Exchange& ex) { ex.respond(200, "text/plain", "got " + l.body); };
  h.handler.answer = [&](Exchange& ex) { ex.set_listener(&l); };
  TestClient& sock = h.connect();
  H2Client c(sock);
  int32_t id = c.post_open("/up", "part one, ");
  ASSERT_TRUE(h.run_until([&] { return l.body == "part one, "; }));
  EXPECT_EQ(l.ends, 0);
  c.send_data(id, "part two", true);
  ASSERT_TRUE(h.run_until([&] { return c.streams[id].closed; }));
  EXPECT_EQ(l.body, "part one, part two");
  EXPECT_EQ(l.ends, 1);
  EXPECT_EQ(l.closes, 1);
  EXPECT_EQ(c.streams[id].status, 200);
  EXPECT_EQ(c.streams[id].body, "got part one, part two");
}

TEST(Http2ServerSession, RstStreamFromTheClientClosesTheExchange) {
  ServerHarness h;
  RecordingListener l;
  h.handler.answer = [&](Exchange& ex) {
    if (ex.request().target == "/upload")
      ex.set_listener(&l); // held: never answered
    else
      ex.respond(200, "text/plain", "still here");
  };
  TestClient& sock = h.connect();
  H2Client c(sock);
  int32_t id = c.post_open("/upload", "some");
  ASSERT_TRUE(h.run_until([&] { return l.body == "some"; }));
  EXPECT_EQ(l.closes, 0);

  c.reset(id, NGHTTP2_CANCEL);
  ASSERT_TRUE(h.run_until([&] { return l.closes == 1; }));
  EXPECT_EQ(l.ends, 0) << "a reset request never ends";
  h.run_ready();
  EXPECT_EQ(l.closes, 1);
  EXPECT_EQ(h.context().stats().h2_streams_closed.get(), 1u);

  // The reset took one stream, not the connection.
  int32_t next = c.get("/next");
  ASSERT_TRUE(h.run_until([&] { return c.streams[next].closed; }));
  EXPECT_EQ(c.streams[next].status, 200);
  EXPECT_EQ(c.streams[next].body, "still here");
  EXPECT_FALSE(c.goaway);
  EXPECT_EQ(h.context().connection_count(), 1u);
}

// The request rules are the stream's own: a malformed request is reset with PROTOCOL_ERROR and
// never reaches the handler, and the next stream (its exchange recycled) is judged afresh.
TEST(Http2ServerSession, AMalformedRequestIsResetAndTheNextOneIsJudgedAfresh) {
  ServerHarness h;
  h.handler.answer = [](Exchange& ex) { ex.respond(200, "text/plain", "ok"); };
  TestClient& sock = h.connect();
  H2Client c(sock);
  int32_t bad = c.get("/bad", {{"connection", "close"}});
  ASSERT_TRUE(h.run_until([&] { return c.streams[bad].closed; }));
  EXPECT_EQ(c.streams[bad].error_code, static_cast<uint32_t>(NGHTTP2_PROTOCOL_ERROR));
  int32_t upper = c.get("/upper", {{"X-Upper", "1"}});
  ASSERT_TRUE(h.run_until([&] { return c.streams[upper].closed; }));
  EXPECT_EQ(c.streams[upper].error_code, static_cast<uint32_t>(NGHTTP2_PROTOCOL_ERROR));
  int32_t good = c.get("/good", {{"te", "trailers"}});
  ASSERT_TRUE(h.run_until([&] { return c.streams[good].closed; }));
  EXPECT_EQ(c.streams[good].status, 200);
  EXPECT_EQ(c.streams[good].error_code, static_cast<uint32_t>(NGHTTP2_NO_ERROR));
  EXPECT_EQ(h.handler.targets, (std::vector<std::string>{"/good"}));
  EXPECT_FALSE(c.goaway);
}

TEST(Http2ServerSession, AClosedStreamIsForgottenAtOnce) {
  // nghttp2 would keep up to max_concurrent_streams closed streams per connection for RFC
  // 7540's priority tree (several KiB a used connection, and longer stream-map probes).
  ServerHarness h;
  Http2ServerSession* session = nullptr;
  h.handler.answer = [&](Exchange& ex) {
    session = &static_cast<Http2Exchange&>(ex).session();
    ex.respond(200, "text/plain", "hello");
  };
  TestClient& sock = h.connect();
  H2Client c(sock);
  int32_t first = c.get("/first");
  ASSERT_TRUE(h.run_until([&] { return c.streams[first].closed; }));
  int32_t second = c.get("/second");
  ASSERT_TRUE(h.run_until([&] { return c.streams[second].closed; }));
  ASSERT_NE(session, nullptr);
  ASSERT_NE(session->nghttp2(), nullptr) << "the session is awake: it just served a stream";
  EXPECT_EQ(nghttp2_session_find_stream(session->nghttp2(), first), nullptr);
  EXPECT_EQ(nghttp2_session_find_stream(session->nghttp2(), second), nullptr);
  EXPECT_EQ(c.streams[second].body, "hello");
}

// Our HPACK encoder's table holds at most 1 KiB (HPACK's measure): response fields whose
// values change (Date once a second, a request id) are indexed, and on a busy connection that
// lives for minutes the 4 KiB a client allows would fill with them: about 60 Date entries, some
// 320 bytes each in memory, 19 KiB a connection.
TEST(Http2ServerSession, TheEncodersTableStaysWithinOneKibibyte) {
  ServerHarness h;
  Http2ServerSession* session = nullptr;
  int n = 0;
  h.handler.answer = [&](Exchange& ex) {
    session = &static_cast<Http2Exchange&>(ex).session();
    std::string seq = "response-" + std::to_string(n++);
    http::Header more[] = {{"x-seq", seq}};
    ex.respond(200, "text/plain", "hello", more);
  };
  TestClient& sock = h.connect();
  H2Client c(sock);
  for (int i = 0; i < 100; ++i) {
    int32_t id = c.get("/");
    ASSERT_TRUE(h.run_until([&] { return c.streams[id].closed; }));
    ASSERT_EQ(c.streams[id].status, 200);
  }
  ASSERT_NE(session->nghttp2(), nullptr);
  EXPECT_LE(nghttp2_session_get_hd_deflate_dynamic_table_size(session->nghttp2()), 1024u);
  EXPECT_GT(nghttp2_session_get_hd_deflate_dynamic_table_size(session->nghttp2()), 512u)
      << "the fields are indexed all the same";
}

TEST(Http2ServerSession, ConnectionClosedUnderAnOpenStreamClosesItsExchange) {
  ServerHarness h;
  RecordingListener l;
  h.handler.answer = [&](Exchange& ex) { ex.set_listener(&l); };
  TestClient& sock = h.connect();
  {
    H2Client c(sock);
    c.get("/held");
    ASSERT_TRUE(h.run_until([&] { return h.handler.exchanges.size() == 1; }));
  }
  EXPECT_EQ(l.closes, 0);
  sock.close();
  ASSERT_TRUE(h.run_until([&] { return l.closes == 1; }));
  ASSERT_TRUE(h.run_until([&] { return h.context().connection_count() == 0; }));
}

} // namespace
} // namespace portico::server::test
