#pragma once
// One proxy worker in this process for the wire-to-wire fuzz target: its loop, router and
// server context, made once per upstream protocol and kept across inputs, as a worker keeps
// them across connections. run_one() plays one input's script against it and then checks
// that the worker is back where it started.
#include "config/config.h"
#include "core/deferred_queue.h"
#include "portico/worker_generation.h"
#include "server/server_context.h"
#include "upstream/dns_resolver.h"

#include <llhttp.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace portico::fuzz {

class WireHarness {
public:
  // Plays data (proxy_wire_script.h) and checks the invariants; aborts with a message when
  // one does not hold.
  static void run_one(const uint8_t* data, size_t size);

  explicit WireHarness(bool h2c_upstream);
  void play(const uint8_t* data, size_t size);
  ~WireHarness();
  WireHarness(const WireHarness&) = delete;
  WireHarness& operator=(const WireHarness&) = delete;

private:
  struct Upstream {
    int fd = -1;
    std::string pending; // script bytes the socket has not taken yet
    llhttp_t parser;     // what the proxy sent, read as requests (HTTP/1.1 clusters)
    llhttp_settings_t settings;
    bool tunnel = false; // upgraded: the rest is not HTTP
  };

  void open_client();
  void finish();
  void pump();
  bool service();
  bool accept_upstreams();
  bool read_client();
  bool read_upstream(Upstream& u);
  bool flush(int fd, std::string& pending);
  void check_sent_upstream(Upstream& u, const char* data, size_t n);
  Upstream* upstream(uint8_t arg);
  void close_upstream(Upstream& u);
  static void fail(const char* what, long got, long want);

  bool h2c_;
  std::string dir_;
  std::string socket_path_;
  int listen_fd_ = -1;
  struct ev_loop* loop_;
  std::unique_ptr<core::DeferredQueue> deferred_;
  std::unique_ptr<upstream::DnsResolver> resolver_;
  std::unique_ptr<proxy::WorkerGeneration> generation_;
  std::unique_ptr<server::ServerContext> ctx_;
  std::vector<double> bounds_;

  int client_fd_ = -1;
  std::string client_pending_;
  bool client_reading_ = true;
  std::vector<std::unique_ptr<Upstream>> upstreams_;
  std::string queued_upstream_; // written to the next upstream connection accepted
  int64_t peak_blocks_ = 0;
};

} // namespace portico::fuzz
