#include "http/http1_request_parser.h"

#include <cstring>

namespace portico::http {

int parse_error_status(ParseError e) {
  switch (e) {
  case ParseError::NONE: return 200;
  case ParseError::BAD_REQUEST: return 400;
  case ParseError::URI_TOO_LONG: return 414;
  case ParseError::HEADERS_TOO_LARGE: return 431;
  case ParseError::BODY_TOO_LARGE: return 413;
  case ParseError::BAD_VERSION: return 505;
  case ParseError::NOT_IMPLEMENTED: return 501;
  }
  return 400;
}

namespace {
Http1RequestParser* self(llhttp_t* p) { return static_cast<Http1RequestParser*>(p->data); }

bool has_control_byte(std::string_view v) {
  for (unsigned char c : v)
    if ((c < 0x20 && c != '\t') || c == 0x7f)
      return true;
  return false;
}
} // namespace

const llhttp_settings_t* Http1RequestParser::settings() {
  static const llhttp_settings_t s = [] {
    llhttp_settings_t t;
    llhttp_settings_init(&t);
    t.on_message_begin = on_message_begin;
    t.on_url = on_url;
    t.on_method = on_method;
    t.on_header_field = on_header_field;
    t.on_header_value = on_header_value;
    t.on_header_value_complete = on_header_value_complete;
    t.on_headers_complete = on_headers_complete;
    t.on_body = on_body;
    t.on_message_complete = on_message_complete;
    return t;
  }();
  return &s;
}

Http1RequestParser::Http1RequestParser(Sink& sink, RequestHead& head, Arena& arena,
                                       const ParserLimits& limits)
    : sink_(sink), head_(head), arena_(arena), limits_(limits) {
  llhttp_init(&parser_, HTTP_REQUEST, settings());
  parser_.data = this;
}

int Http1RequestParser::fail(ParseError e, const char* reason) {
  if (error_ == ParseError::NONE) {
    error_ = e;
    reason_ = reason;
  }
  return HPE_USER;
}

// llhttp 8 accepts a bare LF as a line end, which a front end reading CRLF strictly would
// split differently: refuse it anywhere in the head.
bool Http1RequestParser::scan_head_line_ends(const char* data, size_t len) {
  for (size_t i = 0; i < len && !head_scanned_; ++i) {
    char c = data[i];
    if (c == '\n' && last_ != '\r')
      return false;
    if (c == '\n' && last_ == '\r' && last2_ == '\n' && last3_ == '\r')
      head_scanned_ = true;
    last3_ = last2_;
    last2_ = last_;
    last_ = c;
  }
  return true;
}

size_t Http1RequestParser::feed(const char* data, size_t len) {
  if (failed() || paused_ || len == 0)
    return 0;
  if (in_head_ && !head_scanned_ && !scan_head_line_ends(data, len)) {
    fail(ParseError::BAD_REQUEST, "bare LF in request head");
    return 0;
  }
  llhttp_errno_t rc = llhttp_execute(&parser_, data, len);
  if (rc == HPE_OK)
    return len;
  size_t consumed = static_cast<size_t>(llhttp_get_error_pos(&parser_) - data);
  if (rc == HPE_PAUSED || rc == HPE_PAUSED_UPGRADE) {
    paused_ = true;
    upgrade_pause_ = rc == HPE_PAUSED_UPGRADE;
    return consumed;
  }
  if (rc != HPE_USER)
    fail(ParseError::BAD_REQUEST, llhttp_get_error_reason(&parser_));
  return consumed;
}

void Http1RequestParser::resume() {
  if (!paused_)
    return;
  paused_ = false;
  if (upgrade_pause_)
    llhttp_resume_after_upgrade(&parser_);
  else
    llhttp_resume(&parser_);
  upgrade_pause_ = false;
}

int Http1RequestParser::on_message_begin(llhttp_t* p) {
  auto* s = self(p);
  s->head_.clear();
  s->arena_.reset();
  s->field_ = s->value_ = {};
  s->in_value_ = false;
  s->in_message_ = true;
  s->in_head_ = true;
  s->head_bytes_ = 0;
  s->body_bytes_ = 0;
  return 0;
}

int Http1RequestParser::on_method(llhttp_t* p, const char* at, size_t len) {
  auto* s = self(p);
  s->head_bytes_ += len;
  s->head_.method = s->arena_.append(s->head_.method, {at, len});
  return 0;
}

int Http1RequestParser::on_url(llhttp_t* p, const char* at, size_t len) {
  auto* s = self(p);
  s->head_bytes_ += len;
  if (s->head_.target.size() + len > s->limits_.max_uri_bytes)
    return s->fail(ParseError::URI_TOO_LONG, "request target too long");
  s->head_.target = s->arena_.append(s->head_.target, {at, len});
  return 0;
}

int Http1RequestParser::finish_field() {
  if (field_.empty())
    return 0;
  if (has_control_byte(value_))
    return fail(ParseError::BAD_REQUEST, "control character in header value");
  if (head_.headers.size() >= limits_.max_headers)
    return fail(ParseError::HEADERS_TOO_LARGE, "too many header fields");
  // Lower-case the name in place: the arena owns these bytes.
  char* name = const_cast<char*>(field_.data());
  for (size_t i = 0; i < field_.size(); ++i)
    name[i] = ascii_lower(name[i]);
  std::string_view v = value_;
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t'))
    v.remove_suffix(1);
  head_.headers.push_back({field_, v});
  field_ = value_ = {};
  in_value_ = false;
  return 0;
}

int Http1RequestParser::on_header_field(llhttp_t* p, const char* at, size_t len) {
  auto* s = self(p);
  s->head_bytes_ += len;
  if (s->head_bytes_ > s->limits_.max_header_bytes)
    return s->fail(ParseError::HEADERS_TOO_LARGE, "header section too large");
  s->field_ = s->arena_.append(s->field_, {at, len});
  return 0;
}

int Http1RequestParser::on_header_value(llhttp_t* p, const char* at, size_t len) {
  auto* s = self(p);
  s->head_bytes_ += len;
  if (s->head_bytes_ > s->limits_.max_header_bytes)
    return s->fail(ParseError::HEADERS_TOO_LARGE, "header section too large");
  s->value_ = s->arena_.append(s->value_, {at, len});
  s->in_value_ = true;
  return 0;
}

int Http1RequestParser::on_header_value_complete(llhttp_t* p) { return self(p)->finish_field(); }

int Http1RequestParser::on_headers_complete(llhttp_t* p) {
  auto* s = self(p);
  if (s->finish_field() != 0)
    return HPE_USER;
  auto& h = s->head_;
  if (p->http_major != 1 || p->http_minor > 1)
    return s->fail(ParseError::BAD_VERSION, "unsupported HTTP version");
  h.version = p->http_minor == 0 ? Version::HTTP_1_0 : Version::HTTP_1_1;
  h.method = llhttp_method_name(static_cast<llhttp_method_t>(p->method));
  h.scheme = "http";
  h.keep_alive = llhttp_should_keep_alive(p);
  int hosts = 0;
  for (const auto& f : h.headers) {
    if (f.name == "host") {
      h.authority = f.value;
      ++hosts;
    } else if (f.name == "transfer-encoding") {
      // llhttp already refuses CL together with TE; anything but a final "chunked" is a
      // coding this server does not implement.
      if (!(p->flags & F_CHUNKED))
        return s->fail(ParseError::NOT_IMPLEMENTED, "unsupported transfer coding");
      h.chunked = true;
    } else if (f.name == "expect") {
      if (!iequals(f.value, "100-continue"))
        return s->fail(ParseError::BAD_REQUEST, "unsupported expectation");
      h.expect_continue = true;
    }
  }
  if (hosts > 1 || (hosts == 0 && h.version == Version::HTTP_1_1))
    return s->fail(ParseError::BAD_REQUEST, "missing or repeated Host");
  if (h.target.empty() || (h.target[0] != '/' && h.method != "OPTIONS" && h.method != "CONNECT" &&
                           h.target.find("://") == std::string_view::npos))
    return s->fail(ParseError::BAD_REQUEST, "bad request target");
  if (p->flags & F_CONTENT_LENGTH)
    h.content_length = static_cast<int64_t>(p->content_length);
  if (s->limits_.max_body_bytes >= 0 && h.content_length > s->limits_.max_body_bytes)
    return s->fail(ParseError::BODY_TOO_LARGE, "request body too large");
  s->in_head_ = false;
  s->head_scanned_ = false;
  s->last_ = s->last2_ = s->last3_ = 0;
  s->sink_.on_request_head(h);
  return 0;
}

int Http1RequestParser::on_body(llhttp_t* p, const char* at, size_t len) {
  auto* s = self(p);
  s->body_bytes_ += static_cast<int64_t>(len);
  if (s->limits_.max_body_bytes >= 0 && s->body_bytes_ > s->limits_.max_body_bytes)
    return s->fail(ParseError::BODY_TOO_LARGE, "request body too large");
  s->sink_.on_request_body({at, len});
  return 0;
}

int Http1RequestParser::on_message_complete(llhttp_t* p) {
  auto* s = self(p);
  s->in_message_ = false;
  s->in_head_ = true;
  s->sink_.on_request_end();
  return HPE_PAUSED;
}

} // namespace portico::http
