#pragma once
// A WebSocket tunnel's goodbye on a graceful stop: a close frame (1001, going away) to the
// client and to the upstream, each between two frames of its direction (a close may come
// between the fragments of a message, never inside a frame). After it a direction carries
// nothing more: RFC 6455 5.5.1 lets an endpoint send no data frame after its close.
#include "http/websocket_frames.h"

#include <string>
#include <string_view>

namespace portico::routing {

class TunnelGoodbye {
public:
  enum Direction { TO_UPSTREAM = 0, TO_CLIENT = 1 };

  // Bytes on their way in one direction. Returns the part to forward; *goodbye_now is set
  // when the close frame (close_frame) must follow that part, at once.
  std::string_view pass(Direction d, std::string_view data, bool* goodbye_now);
  // The goodbye is due in that direction. True when it goes at once (between two frames);
  // otherwise pass() says when.
  bool begin(Direction d);
  bool begun() const { return side_[0].due; }
  // The close frame went that way: nothing more does.
  bool over(Direction d) const { return side_[d].sent; }
  // The close frame for that direction: masked towards the upstream, as a client's must be.
  static std::string close_frame(Direction d);

private:
  struct Side {
    http::WebSocketFrameCursor cursor;
    bool due = false;  // goodbye asked for
    bool sent = false; // the close frame went: the direction is over
  };
  Side side_[2];
};

} // namespace portico::routing
