#include "master_admin.h"

#include "core/listen_address.h"

#include <unistd.h>

namespace portico::backend {

core::expected<std::unique_ptr<MasterAdmin>, std::string>
MasterAdmin::open(struct ev_loop* loop, const std::string& address, Handler handler) {
  auto a = core::parse_listen_address(address);
  if (!a)
    return core::unexpected(a.error());
  auto fd = core::open_listener(*a, 64, core::PortSharing::NONE);
  if (!fd)
    return core::unexpected(fd.error());
  std::unique_ptr<MasterAdmin> m(new MasterAdmin(
      loop, *fd, a->kind == core::ListenAddress::Kind::UNIX ? a->path : "", std::move(handler)));
  if (!m->acceptor_.ok())
    return core::unexpected("epoll for the admin listener failed");
  m->acceptor_.start();
  return m;
}

MasterAdmin::MasterAdmin(struct ev_loop* loop, int fd, std::string unix_path, Handler handler)
    : handler_(std::move(handler)), listen_fd_(fd), unix_path_(std::move(unix_path)),
      ctx_(loop, *this, server::admin_limits("portico-backend")), acceptor_(ctx_, fd) {}

MasterAdmin::~MasterAdmin() {
  acceptor_.stop();
  ctx_.close_all();
  ::close(listen_fd_);
  if (!unix_path_.empty())
    ::unlink(unix_path_.c_str());
}

void MasterAdmin::on_request(server::Exchange& ex) {
  const auto& r = ex.request();
  if (r.method != "GET" && r.method != "HEAD") {
    http::ResponseHead head;
    head.status = 405;
    head.add("content-type", "text/plain");
    head.add("allow", "GET, HEAD");
    static constexpr std::string_view kBody = "GET or HEAD\n";
    head.content_length = kBody.size();
    ex.send_head(head);
    ex.send_body(kBody);
    ex.end_response();
    return;
  }
  AdminResponse a = handler_(r.path(), r.query());
  ex.respond(a.status, a.content_type, a.body);
}

void MasterAdmin::close_fds_after_fork() {
  ctx_.close_fds_after_fork();
  acceptor_.close_fds_after_fork();
  ::close(listen_fd_);
}

} // namespace portico::backend
