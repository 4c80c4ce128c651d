#pragma once
// HTTP/1.x response parsing on llhttp for the upstream side, strict: a pooled keep-alive
// connection is shared by the requests of many clients, so a response that two readers could
// frame differently (bare LF or CR line ends, obs-fold, junk after chunk data, an ambiguous
// Content-Length or Transfer-Encoding) lets a backend, or whoever controls a response's bytes,
// desynchronise the connection and answer another client's request. Http1StrictScanner checks
// the line syntax before llhttp reads it, and the framing fields are checked once the head is
// complete; any doubt fails the response, which the upstream answers with 502, closing the
// connection.
//
// Interim 1xx responses are checked and skipped (never a body); a response to HEAD, or a
// 204/304, has no body whatever its headers say (RFC 9112 6.3 rule 1). A 101 is the final
// response to a request that asked to upgrade (WebSocket), and refused for any other: what
// follows it is no longer HTTP, and the parser is done.
#include "http/arena.h"
#include "http/header.h"
#include "http/http1_strict_scanner.h"

#include <cstdint>
#include <llhttp.h>
#include <vector>

namespace portico::http {

// The timeout of "Keep-Alive: timeout=N, max=M" in seconds, 0 when absent or not a number.
double parse_keepalive_timeout(std::string_view v);

struct UpstreamResponseHead {
  int status = 0;
  int minor_version = 1;
  std::vector<Header> headers; // names lower case
  int64_t content_length = -1;
  bool chunked = false;
  bool keep_alive = true;       // the upstream connection may be reused after this response
  bool body_announced = false;  // a bodiless response (HEAD, 204, 304) states a body length
  double keepalive_timeout = 0; // from "Keep-Alive: timeout=N", 0 when absent

  void clear() {
    status = 0;
    minor_version = 1;
    headers.clear();
    content_length = -1;
    chunked = false;
    keep_alive = true;
    body_announced = false;
    keepalive_timeout = 0;
  }
};

class Http1ResponseParser {
public:
  // Receives the final response; interim ones are not reported. Views passed in are valid only
  // during the call; the head (fields in the arena) until the next start().
  class Sink {
  public:
    virtual ~Sink() = default;
    virtual void on_response_head(UpstreamResponseHead& head) = 0;
    virtual void on_response_body(std::string_view data) = 0;
    virtual void on_response_trailer(std::string_view name, std::string_view value) {}
    virtual void on_response_end() = 0;
  };

  // max_header_bytes bounds the final head (status line, fields, empty line), the trailer
  // section, and, separately, all interim heads of one response together.
  Http1ResponseParser(Sink& sink, UpstreamResponseHead& head, Arena& arena,
                      size_t max_header_bytes);
  Http1ResponseParser(const Http1ResponseParser&) = delete;
  Http1ResponseParser& operator=(const Http1ResponseParser&) = delete;

  // Before each request: whether its response can carry a body (not for HEAD), and whether
  // the request asked to upgrade, so that a 101 may end the HTTP part of the connection.
  void start(bool head_request, bool upgrade = false);
  // The response was a 101 to an upgrade: done(), and the bytes after it are the new protocol's.
  bool upgraded() const { return upgraded_; }
  // Returns bytes consumed: all of them, or fewer when the response ends in this buffer
  // (done() turns true; the rest belongs to no request) or on an error (failed()).
  size_t feed(const char* data, size_t len);
  // The upstream closed: completes a close-delimited body. False if the response was cut.
  bool finish();
  bool failed() const { return failed_; }
  const char* error_reason() const { return reason_; }
  bool done() const { return done_; }
  bool started() const { return started_; } // any byte of the response seen

private:
  static int on_message_begin(llhttp_t* p);
  static int on_status_complete(llhttp_t* p);
  static int on_header_field(llhttp_t* p, const char* at, size_t len);
  static int on_header_value(llhttp_t* p, const char* at, size_t len);
  static int on_header_value_complete(llhttp_t* p);
  static int on_headers_complete(llhttp_t* p);
  static int on_body(llhttp_t* p, const char* at, size_t len);
  static int on_message_complete(llhttp_t* p);
  static const llhttp_settings_t* settings();

  size_t parse(const char* data, size_t len);
  // The plain final response without llhttp (http1_response_fast_head.cc): the head, whole in
  // this buffer and accepted by the scanner, split here, and the body counted; -1 declines
  // (nothing changed), else the bytes consumed.
  long fast_head(const char* data, size_t len, size_t head_len);
  size_t fast_body(const char* data, size_t len);
  // A field's first piece is a view into the input buffer (no copy); a second piece copies
  // both into the arena.
  std::string_view take(std::string_view last, std::string_view more);
  void pin_views(const char* data, size_t len);
  int fail(const char* reason);
  int finish_field();
  int end_interim_head();
  int check_framing(bool no_body);
  // Scans what is left of the current buffer after a section began inside it.
  int scan_rest();

  llhttp_t parser_;
  Http1StrictScanner scanner_{Http1StrictScanner::Kind::RESPONSE};
  Sink& sink_;
  UpstreamResponseHead& head_;
  Arena& arena_;
  size_t max_header_bytes_;
  size_t interim_bytes_ = 0; // heads of this response's 1xx so far
  // The current buffer, and the first byte of it the scanner has not seen.
  const char* scan_pos_ = nullptr;
  const char* buf_end_ = nullptr;
  std::string_view field_, value_;
  int64_t fast_left_ = -1; // >= 0: the body bytes still to come of a response read by the fast
                           // path
  bool head_request_ = false;
  bool upgrade_ = false;  // the request asked to upgrade: a 101 is its final response
  bool upgraded_ = false; // and that 101 came
  bool interim_ = false;  // parsing a 1xx
  bool in_trailers_ = false;
  bool views_in_buffer_ = false; // some field views point into the current input buffer
  bool done_ = false;
  bool started_ = false;
  bool failed_ = false;
  const char* reason_ = "";
};

} // namespace portico::http
