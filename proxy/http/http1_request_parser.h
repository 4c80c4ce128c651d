#pragma once
// HTTP/1.x request parsing on llhttp, strict: whatever llhttp tolerates that a proxy must not
// (bare LF or bare CR line ends, obs-fold, whitespace before the colon, a sloppy request line or
// chunk framing) is refused by Http1StrictScanner before llhttp reads it, and the framing fields
// are checked once the head is complete, so that no request is ever read two ways. The parser
// stops after each complete request: a session answers requests in order and resumes the
// parser when it is ready for the next one.
#include "http/arena.h"
#include "http/http1_strict_scanner.h"
#include "http/parse_error.h"
#include "http/request_head.h"

#include <llhttp.h>
#include <span>
#include <vector>

namespace portico::http {

struct ParserLimits {
  size_t max_uri_bytes = 8192;
  size_t max_header_bytes = 32768; // request line and all fields; the trailer section too
  size_t max_headers = 100;
  int64_t max_body_bytes = -1; // -1: unlimited
};

class Http1RequestParser {
public:
  // Receives one request at a time. Views passed in are valid only during the call; the head
  // (fields in the arena) stays valid until the next request begins. Trailer fields never
  // join the head: they come to on_request_trailers, just before on_request_end.
  class Sink {
  public:
    virtual ~Sink() = default;
    virtual void on_request_head(RequestHead& head) = 0;
    virtual void on_request_body(std::string_view data) = 0;
    virtual void on_request_trailers(std::span<const Header> trailers) {}
    virtual void on_request_end() = 0;
  };

  Http1RequestParser(Sink& sink, RequestHead& head, Arena& arena, const ParserLimits& limits);
  Http1RequestParser(const Http1RequestParser&) = delete;
  Http1RequestParser& operator=(const Http1RequestParser&) = delete;

  // Parses up to len bytes and returns how many were consumed. Stops early when a request
  // ends (paused() turns true) or on an error (failed()). After a request that ends the
  // connection (head.keep_alive false) the rest is not HTTP to us: it is consumed unread.
  // An absolute-form target is handed on in origin form, its authority replacing Host.
  size_t feed(const char* data, size_t len);
  bool paused() const { return paused_; }
  void resume();
  bool failed() const { return error_ != ParseError::NONE; }
  ParseError error() const { return error_; }
  const char* error_reason() const { return reason_; }
  // True between requests: EOF here is a clean close, anywhere else a truncated request.
  bool idle() const { return !in_message_ && !failed(); }
  // Bytes of the current request's head seen so far.
  size_t head_bytes() const { return in_head_ ? scanner_.section_bytes() : head_bytes_; }

private:
  static int on_message_begin(llhttp_t* p);
  static int on_method_complete(llhttp_t* p);
  static int on_url(llhttp_t* p, const char* at, size_t len);
  static int on_header_field(llhttp_t* p, const char* at, size_t len);
  static int on_header_value(llhttp_t* p, const char* at, size_t len);
  static int on_header_value_complete(llhttp_t* p);
  static int on_headers_complete(llhttp_t* p);
  static int on_chunk_header(llhttp_t* p);
  static int on_body(llhttp_t* p, const char* at, size_t len);
  static int on_message_complete(llhttp_t* p);
  static const llhttp_settings_t* settings();

  int fail(ParseError e, const char* reason);
  int finish_field();
  int check_head();
  int check_target();
  int check_framing();

  llhttp_t parser_;
  Http1StrictScanner scanner_;
  Sink& sink_;
  RequestHead& head_;
  Arena& arena_;
  const ParserLimits& limits_;
  // The current buffer, and the first byte of it the scanner has not seen.
  const char* scan_pos_ = nullptr;
  const char* buf_end_ = nullptr;
  std::string_view field_, value_;
  std::vector<Header> trailers_; // of the current request, in the arena
  bool in_message_ = false;
  bool in_head_ = true; // fields go to the head; after it, they are trailers
  bool paused_ = false;
  bool closed_ = false; // a request without keep-alive ended: no more requests
  size_t head_bytes_ = 0;
  int64_t body_bytes_ = 0;
  ParseError error_ = ParseError::NONE;
  const char* reason_ = "";
};

} // namespace portico::http
