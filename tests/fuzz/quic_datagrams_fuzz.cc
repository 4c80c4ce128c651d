// libFuzzer target for what a QUIC listener does with datagrams from the network: a worker's
// QuicEndpoint, on a real loopback UDP socket, with its TLS context, secret and limits, reads
// the input's datagrams (each a 2-byte length, then its bytes) from one client address and
// answers them: Version Negotiation, stateless resets, Retries and their tokens, refusals at
// the connection cap, connections made for Initials and fed what follows. After each input the
// endpoint closes every connection it made; none may be left (every one opened is counted
// closed), and no answer may be larger than three times the datagram that caused it while no
// handshake is done (RFC 9000 8.1: every datagram here is unvalidated).
#include "config/config.h"
#include "metrics/server_stats.h"
#include "quic/connection_ids.h"
#include "quic/quic_endpoint.h"
#include "quic/quic_tls_context.h"
#include "server/exchange.h"
#include "server/server_context.h"

#include <arpa/inet.h>
#include <ev.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace {

using namespace portico;

#define FUZZ_CHECK(cond)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::fprintf(stderr, "check failed: %s\n", #cond);                                           \
      __builtin_trap();                                                                            \
    }                                                                                              \
  } while (0)

struct Hello : server::RequestHandler {
  void on_request(server::Exchange& ex) override { ex.respond(200, "text/plain", "ok\n"); }
};

int bound_udp(sockaddr_in* addr) {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  FUZZ_CHECK(fd >= 0);
  int one = 1;
  ::setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
  int big = 4 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  *addr = sockaddr_in{};
  addr->sin_family = AF_INET;
  addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  FUZZ_CHECK(::bind(fd, reinterpret_cast<sockaddr*>(addr), sizeof *addr) == 0);
  socklen_t len = sizeof *addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(addr), &len);
  return fd;
}

// Made once, as a worker makes them once: the loop, the server context, the TLS context (a
// certificate made with openssl in a temporary directory) and the two sockets.
struct World {
  World() {
    char dir[] = "/tmp/portico-quic-fuzz-XXXXXX";
    FUZZ_CHECK(::mkdtemp(dir) != nullptr);
    std::string d = dir;
    std::string cmd = "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
                      "-keyout " +
                      d + "/k.pem -out " + d +
                      "/c.pem -days 2 -subj /CN=localhost "
                      ">/dev/null 2>&1";
    FUZZ_CHECK(std::system(cmd.c_str()) == 0);
    config::TlsConfig tc;
    tc.certificate = d + "/c.pem";
    tc.private_key = d + "/k.pem";
    auto made = quic::QuicTlsContext::create(tc);
    FUZZ_CHECK(made.has_value());
    tls = std::shared_ptr<const quic::QuicTlsContext>(std::move(*made));
    std::system(("rm -rf " + d).c_str());
    loop = ev_loop_new(EVFLAG_AUTO);
    ctx = std::make_unique<server::ServerContext>(loop, hello, limits);
    endpoint_fd = bound_udp(&endpoint_addr);
    client_fd = bound_udp(&client_addr);
    // Small caps, so that inputs reach the Retry and refusal paths.
    cfg.enabled = true;
    cfg.max_connections = 3;
    cfg.retry_above_handshakes = 2;
  }

  Hello hello;
  server::ServerLimits limits;
  struct ev_loop* loop;
  std::unique_ptr<server::ServerContext> ctx;
  std::shared_ptr<const quic::QuicTlsContext> tls;
  std::shared_ptr<const quic::QuicSecret> secret = std::make_shared<quic::QuicSecret>();
  config::QuicConfig cfg;
  int endpoint_fd, client_fd;
  sockaddr_in endpoint_addr, client_addr;
};

// The bytes of the answers the client socket holds.
size_t drain_answers(World& w) {
  uint8_t buf[65536];
  size_t total = 0;
  for (;;) {
    ssize_t n = ::recv(w.client_fd, buf, sizeof buf, 0);
    if (n < 0)
      return total;
    total += static_cast<size_t>(n);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World* w = new World;
  auto ep = std::make_unique<quic::QuicEndpoint>(*w->ctx, w->endpoint_fd, w->tls, w->cfg, w->secret,
                                                 0, 0);
  const auto& stats = w->ctx->stats();
  uint64_t opened = stats.quic_opened.get(), closed = stats.quic_closed.get();
  // Nothing here can validate the client's address (no handshake completes, no Retry token
  // is forged): all the endpoint sends stays within three times what it received.
  size_t sent = 0, answered = 0;
  for (size_t at = 0; at + 2 <= size;) {
    size_t len = static_cast<size_t>(data[at]) << 8 | data[at + 1];
    at += 2;
    len = std::min(len, size - at);
    if (len == 0)
      continue;
    ::sendto(w->client_fd, data + at, len, 0, reinterpret_cast<sockaddr*>(&w->endpoint_addr),
             sizeof w->endpoint_addr);
    sent += len;
    at += len;
    // Read, answered and flushed as a worker's loop pass would.
    ev_run(w->loop, EVRUN_NOWAIT);
    ev_run(w->loop, EVRUN_NOWAIT);
    answered += drain_answers(*w);
    FUZZ_CHECK(answered <= 3 * sent);
    FUZZ_CHECK(ep->open_connections() <= w->cfg.max_connections);
  }
  ep.reset(); // every connection closed, and disposed of
  FUZZ_CHECK(stats.quic_opened.get() - opened == stats.quic_closed.get() - closed);
  answered += drain_answers(*w); // the closes
  FUZZ_CHECK(answered <= 3 * sent);
  return 0;
}
