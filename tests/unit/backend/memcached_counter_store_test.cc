// MemcachedCounterStore without a memcached: the error path the counter app turns into a 503.
// A real memcached is exercised by tests/integration/test_backend_memcached.py.
#include "memcached_counter_store.h"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

namespace portico::backend {
namespace {

TEST(MemcachedCounterStore, RefusedConnectionIsAnError) {
  // Bound but not listening: the port is held, and every connect to it is refused at once.
  int held = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(held, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(held, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  socklen_t len = sizeof sa;
  ASSERT_EQ(::getsockname(held, reinterpret_cast<sockaddr*>(&sa), &len), 0);

  MemcachedCounterStore store("127.0.0.1:" + std::to_string(ntohs(sa.sin_port)));
  auto v = store.increment("k");
  ASSERT_FALSE(v.has_value()) << *v;
  EXPECT_FALSE(v.error().empty());
  ::close(held);
}

} // namespace
} // namespace portico::backend
