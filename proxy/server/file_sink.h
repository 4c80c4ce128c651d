#pragma once
// Where StaticFiles (static_files.h) sends its answer: a client Exchange (portico-backend's
// --document-root, server/exchange_file_sink.h) or a proxy route's filter chain (the
// static_files filter), which takes the response past the filters before it (compression).
#include "http/arena.h"
#include "http/request_head.h"
#include "http/response_head.h"

#include <cstdint>
#include <ev.h>
#include <string_view>

namespace portico::server {

class FileSink {
public:
  virtual const http::RequestHead& request() const = 0;
  // Where a value sent in a head (a Location) lives until the head is sent.
  virtual http::Arena& arena() = 0;
  virtual struct ev_loop* loop() const = 0;
  virtual void send_head(const http::ResponseHead& head) = 0;
  virtual void send_body(std::string_view data) = 0;
  virtual void end_response() = 0;
  // The rest of the body is length bytes of fd from offset, then the response's end. The sink
  // owns fd from here: it hands it to the kernel (sendfile) where nothing reads the bytes on
  // the way, and otherwise reads it as the client takes it (file_stream.h). A file that comes
  // up short cuts the response.
  virtual void send_file(int fd, int64_t offset, int64_t length) = 0;

protected:
  ~FileSink() = default;
};

} // namespace portico::server
