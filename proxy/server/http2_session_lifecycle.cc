// Http2ServerSession's Lifecycle: its names and the transitions it may take.
#include "server/http2_server_session.h"

#include <cassert>

namespace portico::server {

const char* to_string(Http2ServerSession::Lifecycle l) {
  switch (l) {
  case Http2ServerSession::Lifecycle::OPEN: return "open";
  case Http2ServerSession::Lifecycle::DRAINING: return "draining";
  case Http2ServerSession::Lifecycle::CLOSING: return "closing";
  case Http2ServerSession::Lifecycle::FAILED: return "failed";
  }
  return "?";
}

void Http2ServerSession::set_lifecycle(Lifecycle next) {
  [[maybe_unused]] bool legal = next == Lifecycle::FAILED     ? lifecycle_ != Lifecycle::FAILED
                                : next == Lifecycle::DRAINING ? lifecycle_ == Lifecycle::OPEN
                                : next == Lifecycle::CLOSING  ? lifecycle_ == Lifecycle::DRAINING
                                                              : false;
  assert(legal && "Http2ServerSession lifecycle transition");
  lifecycle_ = next;
}

} // namespace portico::server
