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

  // What the start line and the framing fields said, as llhttp or the fast path read them.
  struct Framing {
    uint8_t major = 1, minor = 1;
    std::string_view method;
    bool keep_alive = true;
    bool chunked = false;    // Transfer-Encoding ends in chunked
    bool has_length = false; // a Content-Length
    uint64_t length = 0;
  };

  int fail(ParseError e, const char* reason);
  int finish_field();
  int check_head(const Framing& f);
  int check_target();
  int check_framing(const Framing& f);
  // The common request read without llhttp (http1_request_fast_head.cc): the whole head of
  // head_len bytes is in data and the scanner has accepted it. Returns the bytes consumed, or
  // -1, with nothing changed that llhttp would not reset, when llhttp must read it.
  long fast_head(const char* data, size_t head_len);
  long decline();
  // After a request's head: where the llhttp and the fast path share their last steps.
  int begin_message();
  int end_message();

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
  // llhttp took the connection as closing after the last request (a Connection field among its
  // trailers) where its head had not: llhttp reads what follows as it did before the fast path
  // existed, and the fast path leaves it to llhttp.
  bool llhttp_closing_ = false;
  size_t head_bytes_ = 0;
  int64_t body_bytes_ = 0;
  ParseError error_ = ParseError::NONE;
  const char* reason_ = "";
};

} // namespace portico::http
