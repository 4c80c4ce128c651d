#pragma once
// HTTP/1.x request parsing on llhttp, strict: whatever llhttp tolerates that a proxy must not
// (bare LF line ends, obs-fold, control bytes in values) is refused here as well, so that no
// request is ever read two ways. The parser stops after each complete request: a session
// answers requests in order and resumes the parser when it is ready for the next one.
#include "http/arena.h"
#include "http/request_head.h"

#include <llhttp.h>

namespace portico::http {

enum class ParseError : uint8_t {
  NONE,
  BAD_REQUEST,        // 400
  URI_TOO_LONG,       // 414
  HEADERS_TOO_LARGE,  // 431
  BODY_TOO_LARGE,     // 413
  BAD_VERSION,        // 505
  NOT_IMPLEMENTED,    // 501: a transfer coding other than chunked
};

// The status a server answers a parse error with.
int parse_error_status(ParseError e);

struct ParserLimits {
  size_t max_uri_bytes = 8192;
  size_t max_header_bytes = 32768; // request line and all fields
  size_t max_headers = 100;
  int64_t max_body_bytes = -1;     // -1: unlimited
};

class Http1RequestParser {
public:
  // Receives one request at a time. Views passed in are valid only during the call; the head
  // (fields in the arena) stays valid until the next request begins.
  class Sink {
  public:
    virtual ~Sink() = default;
    virtual void on_request_head(RequestHead& head) = 0;
    virtual void on_request_body(std::string_view data) = 0;
    virtual void on_request_end() = 0;
  };

  Http1RequestParser(Sink& sink, RequestHead& head, Arena& arena, const ParserLimits& limits);
  Http1RequestParser(const Http1RequestParser&) = delete;
  Http1RequestParser& operator=(const Http1RequestParser&) = delete;

  // Parses up to len bytes and returns how many were consumed. Stops early when a request
  // ends (paused() turns true) or on an error (failed()).
  size_t feed(const char* data, size_t len);
  bool paused() const { return paused_; }
  void resume();
  bool failed() const { return error_ != ParseError::NONE; }
  ParseError error() const { return error_; }
  const char* error_reason() const { return reason_; }
  // True between requests: EOF here is a clean close, anywhere else a truncated request.
  bool idle() const { return !in_message_; }
  // Bytes of the current request's head seen so far.
  size_t head_bytes() const { return head_bytes_; }

private:
  static int on_message_begin(llhttp_t* p);
  static int on_url(llhttp_t* p, const char* at, size_t len);
  static int on_method(llhttp_t* p, const char* at, size_t len);
  static int on_header_field(llhttp_t* p, const char* at, size_t len);
  static int on_header_value(llhttp_t* p, const char* at, size_t len);
  static int on_header_value_complete(llhttp_t* p);
  static int on_headers_complete(llhttp_t* p);
  static int on_body(llhttp_t* p, const char* at, size_t len);
  static int on_message_complete(llhttp_t* p);
  static const llhttp_settings_t* settings();

  int fail(ParseError e, const char* reason);
  bool scan_head_line_ends(const char* data, size_t len);
  int finish_field();

  llhttp_t parser_;
  Sink& sink_;
  RequestHead& head_;
  Arena& arena_;
  const ParserLimits& limits_;
  std::string_view field_, value_;
  bool in_value_ = false;
  bool in_message_ = false;
  bool in_head_ = true;
  bool paused_ = false;
  bool upgrade_pause_ = false;
  char last_ = 0, last2_ = 0, last3_ = 0; // the head scan's previous bytes
  bool head_scanned_ = false;
  size_t head_bytes_ = 0;
  int64_t body_bytes_ = 0;
  ParseError error_ = ParseError::NONE;
  const char* reason_ = "";
};

} // namespace portico::http
