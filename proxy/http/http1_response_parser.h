#pragma once
// HTTP/1.x response parsing on llhttp for the upstream side. Interim 1xx responses are
// reported and skipped; a response to HEAD, or a 204/304, has no body whatever its headers say.
#include "http/arena.h"
#include "http/header.h"

#include <cstdint>
#include <llhttp.h>
#include <vector>

namespace portico::http {

struct UpstreamResponseHead {
  int status = 0;
  int minor_version = 1;
  std::vector<Header> headers; // names lower case
  int64_t content_length = -1;
  bool chunked = false;
  bool keep_alive = true;      // the upstream connection may be reused after this response
  double keepalive_timeout = 0; // from "Keep-Alive: timeout=N", 0 when absent

  void clear() {
    status = 0;
    minor_version = 1;
    headers.clear();
    content_length = -1;
    chunked = false;
    keep_alive = true;
    keepalive_timeout = 0;
  }
};

class Http1ResponseParser {
public:
  class Sink {
  public:
    virtual ~Sink() = default;
    virtual void on_response_head(UpstreamResponseHead& head) = 0;
    virtual void on_response_body(std::string_view data) = 0;
    virtual void on_response_trailer(std::string_view name, std::string_view value) {}
    virtual void on_response_end() = 0;
  };

  Http1ResponseParser(Sink& sink, UpstreamResponseHead& head, Arena& arena,
                      size_t max_header_bytes);
  Http1ResponseParser(const Http1ResponseParser&) = delete;
  Http1ResponseParser& operator=(const Http1ResponseParser&) = delete;

  // Before each request: whether its response can carry a body (not for HEAD).
  void start(bool head_request);
  // Returns bytes consumed; stops after a complete response (done() turns true).
  size_t feed(const char* data, size_t len);
  // The upstream closed: completes a close-delimited body. False if the response was cut.
  bool finish();
  bool failed() const { return failed_; }
  const char* error_reason() const { return reason_; }
  bool done() const { return done_; }
  bool started() const { return started_; } // any byte of the response seen

private:
  static int on_message_begin(llhttp_t* p);
  static int on_header_field(llhttp_t* p, const char* at, size_t len);
  static int on_header_value(llhttp_t* p, const char* at, size_t len);
  static int on_header_value_complete(llhttp_t* p);
  static int on_headers_complete(llhttp_t* p);
  static int on_body(llhttp_t* p, const char* at, size_t len);
  static int on_message_complete(llhttp_t* p);
  static const llhttp_settings_t* settings();
  int finish_field();

  llhttp_t parser_;
  Sink& sink_;
  UpstreamResponseHead& head_;
  Arena& arena_;
  size_t max_header_bytes_;
  size_t header_bytes_ = 0;
  std::string_view field_, value_;
  bool head_request_ = false;
  bool interim_ = false;   // parsing a 1xx
  bool in_trailers_ = false;
  bool done_ = false;
  bool started_ = false;
  bool failed_ = false;
  const char* reason_ = "";
};

} // namespace portico::http
