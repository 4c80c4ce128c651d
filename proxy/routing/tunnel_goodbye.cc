#include "routing/tunnel_goodbye.h"

#include <random>

namespace portico::routing {

std::string_view TunnelGoodbye::pass(Direction d, std::string_view data, bool* goodbye_now) {
  *goodbye_now = false;
  Side& s = side_[d];
  if (s.sent)
    return {};
  if (!s.due) {
    s.cursor.advance(data, false);
    return data;
  }
  size_t n = s.cursor.advance(data, true);
  if (!s.cursor.at_boundary())
    return data; // the frame under way goes on past this chunk
  s.sent = true;
  *goodbye_now = true;
  return data.substr(0, n);
}

bool TunnelGoodbye::begin(Direction d) {
  Side& s = side_[d];
  if (s.due)
    return false;
  s.due = true;
  if (!s.cursor.at_boundary())
    return false;
  s.sent = true;
  return true;
}

std::string TunnelGoodbye::close_frame(Direction d) {
  if (d == TO_CLIENT)
    return http::websocket_going_away(false);
  // RFC 6455 5.3: a client's mask must not be predictable.
  thread_local std::mt19937 rng{std::random_device{}()};
  return http::websocket_going_away(true, static_cast<uint32_t>(rng()));
}

} // namespace portico::routing
