#pragma once
// The master's admin endpoint (--admin HOST:PORT): /metrics, /healthz and the dashboard (/ and
// /stats.json, master_dashboard.h) served through the
// same server core as every other HTTP/1.1 and h2c request (server/: the strict request
// parser, the header deadline, the connection limits), on the master's own libev loop. The
// master's supervision loop runs that loop once per turn, so a client can hold neither it
// nor the other clients (server::admin_limits: 32 connections, a head within 5 s).
#include "server/acceptor.h"
#include "server/server_context.h"

#include "core/expected.h"
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace portico::backend {

struct AdminResponse {
  int status = 200;
  std::string content_type = "text/plain";
  std::string body;
};

class MasterAdmin final : public server::RequestHandler {
public:
  // Called for GET and HEAD with the request's path and its query (after the '?').
  using Handler = std::function<AdminResponse(std::string_view path, std::string_view query)>;

  // Listens on address ("HOST:PORT" or "unix:/path") on loop, or says why it cannot.
  static core::expected<std::unique_ptr<MasterAdmin>, std::string>
  open(struct ev_loop* loop, const std::string& address, Handler handler);
  ~MasterAdmin() override;

  void on_request(server::Exchange& ex) override;
  // In a forked worker: the master's descriptors closed, nothing else touched.
  void close_fds_after_fork();

private:
  MasterAdmin(struct ev_loop* loop, int fd, std::string unix_path, Handler handler);

  Handler handler_;
  int listen_fd_;
  std::string unix_path_;
  server::ServerContext ctx_;
  server::Acceptor acceptor_;
};

} // namespace portico::backend
