// A reload as the server context sees it (ServerContext::reconfigure): requests from then on go
// to the new handler on connections old and new, connections are counted by the epoch they
// were accepted in, and those on a listener that went away drain.
#include "server_session_harness.h"

namespace portico::server::test {
namespace {

constexpr std::string_view kGet = "GET /x HTTP/1.1\r\nHost: h\r\n\r\n";

void answer_ok(Exchange& ex) {
  ex.respond(200, "text/plain", "ok\n");
}

TEST(ServerContextReconfigure, TheNextRequestOnAnOpenConnectionGoesToTheNewHandler) {
  ServerHarness h;
  h.handler.answer = answer_ok;
  TestClient& c = h.connect();
  c.send(kGet);
  ASSERT_TRUE(h.run_until([&] { return c.received().find("ok\n") != std::string::npos; }));
  FakeHandler next;
  next.answer = answer_ok;
  h.context().reconfigure(next, h.context().limits(), {0});
  EXPECT_EQ(h.context().epoch(), 1u);
  EXPECT_EQ(h.context().open_from_epoch(0), 1u);
  EXPECT_EQ(h.context().open_from_epoch(1), 0u);
  c.send(kGet);
  ASSERT_TRUE(h.run_until([&] { return next.exchanges.size() == 1; }));
  EXPECT_EQ(h.handler.exchanges.size(), 1u);
  TestClient& fresh = h.connect();
  EXPECT_EQ(h.context().open_from_epoch(1), 1u);
  fresh.close();
  c.close();
  ASSERT_TRUE(h.run_until([&] { return h.context().connection_count() == 0; }));
  EXPECT_EQ(h.context().open_from_epoch(0), 0u);
  EXPECT_EQ(h.context().open_from_epoch(1), 0u);
}

TEST(ServerContextReconfigure, AConnectionOnARemovedListenerDrains) {
  ServerHarness h;
  h.handler.answer = answer_ok;
  TestClient& c = h.connect();
  h.context().reconfigure(h.handler, h.context().limits(), {-1});
  c.send(kGet);
  ASSERT_TRUE(h.run_until([&] { return c.eof(); }));
  EXPECT_NE(c.received().find("connection: close\r\n"), std::string::npos) << c.received();
  EXPECT_NE(c.received().find("ok\n"), std::string::npos);
}

} // namespace
} // namespace portico::server::test
