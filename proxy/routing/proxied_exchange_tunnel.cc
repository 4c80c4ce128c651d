// The WebSocket tunnel part of a ProxiedExchange: the upstream's 101 (or an HTTP/2 client's
// 2xx, RFC 8441) opens the client's side, bytes then pass raw both ways past TunnelGoodbye's
// frame tracking, and a graceful stop's goodbye closes both ends with a close frame each.
#include "routing/proxied_exchange.h"

namespace portico::routing {

void ProxiedExchange::open_tunnel(std::span<const http::Header> fields) {
  response_began(101);
  tunnel_ = true;
  replayable_ = false; // nothing is sent twice once the upstream has switched protocols
  goodbye_ = std::make_unique<TunnelGoodbye>();
  // What the client sent before the 101 goes now, as the tunnel's first bytes.
  replay_.for_each_run([&](std::string_view run) { tunnel_to_upstream(run); });
  replay_.clear();
  hold_client(kHeldByUpstream, false);
  up_->set_tunnel_timeout(tunnel_timeout_);
  thread_local std::vector<http::Header> kept;
  kept.clear();
  int status = 101;
  if (ex_.request().framed()) {
    // RFC 8441 5: the client's 2xx; Sec-WebSocket-Accept answers a key it never sent.
    status = 200;
    for (const auto& f : fields)
      if (f.name != "sec-websocket-accept")
        kept.push_back(f);
  } else {
    kept.assign(fields.begin(), fields.end());
  }
  send_response_head(status, -1, kept, true);
  if (client_shut_early_ && up_)
    up_->end_request({});
}

void ProxiedExchange::tunnel_to_upstream(std::string_view data) {
  bool now = false;
  std::string_view part = goodbye_->pass(TunnelGoodbye::TO_UPSTREAM, data, &now);
  if (!part.empty() && up_)
    up_->send_body(part);
  if (now)
    say_goodbye(TunnelGoodbye::TO_UPSTREAM);
}

void ProxiedExchange::say_goodbye(TunnelGoodbye::Direction d) {
  std::string frame = TunnelGoodbye::close_frame(d);
  if (d == TunnelGoodbye::TO_CLIENT) {
    ex_.send_body(frame);
    return;
  }
  // The upstream's close answers ours and then it closes, which ends the exchange (and the
  // client's connection, after our close frame to it).
  if (up_) {
    up_->send_body(frame);
    up_->end_request({});
  }
}

bool ProxiedExchange::on_goodbye(server::Exchange&) {
  if (!tunnel_ || !goodbye_ || closed_ || state_ == State::FINISHED)
    return false;
  if (goodbye_->begun())
    return true;
  if (goodbye_->begin(TunnelGoodbye::TO_CLIENT))
    say_goodbye(TunnelGoodbye::TO_CLIENT);
  if (goodbye_->begin(TunnelGoodbye::TO_UPSTREAM))
    say_goodbye(TunnelGoodbye::TO_UPSTREAM);
  return true;
}

} // namespace portico::routing
