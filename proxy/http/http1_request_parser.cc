#include "http/http1_request_parser.h"

#include <array>

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
  case ParseError::EXPECTATION_FAILED: return 417;
  }
  return 400;
}

namespace {

Http1RequestParser* self(llhttp_t* p) {
  return static_cast<Http1RequestParser*>(p->data);
}

// uri-host and port bytes (RFC 3986 3.2.2): unreserved, pct-encoded, sub-delims, ":" and the
// brackets of an IP literal. No "@": userinfo in a request is refused (RFC 9110 4.2.4).
constexpr auto kAuthority = [] {
  std::array<bool, 256> t{};
  for (unsigned char c : std::string_view("-._~!$&'()*+,;=:[]%"))
    t[c] = true;
  for (int c = '0'; c <= '9'; ++c)
    t[c] = true;
  for (int c = 'a'; c <= 'z'; ++c)
    t[c] = t[c - 32] = true;
  return t;
}();

bool valid_authority(std::string_view a) {
  for (unsigned char c : a)
    if (!kAuthority[c])
      return false;
  return true;
}

} // namespace

const llhttp_settings_t* Http1RequestParser::settings() {
  static const llhttp_settings_t s = [] {
    llhttp_settings_t t;
    llhttp_settings_init(&t);
    t.on_message_begin = on_message_begin;
    t.on_method_complete = on_method_complete;
    t.on_url = on_url;
    t.on_header_field = on_header_field;
    t.on_header_value = on_header_value;
    t.on_header_value_complete = on_header_value_complete;
    t.on_headers_complete = on_headers_complete;
    t.on_chunk_header = on_chunk_header;
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
  scanner_.start_head(limits_.max_header_bytes);
}

int Http1RequestParser::fail(ParseError e, const char* reason) {
  if (error_ == ParseError::NONE) {
    error_ = e;
    reason_ = reason;
  }
  return HPE_USER;
}

size_t Http1RequestParser::feed(const char* data, size_t len) {
  if (failed() || paused_ || len == 0)
    return 0;
  if (closed_)
    return len;
  buf_end_ = data + len;
  scan_pos_ = data;
  // A head that begins here, at its request line (leading empty lines are llhttp's).
  bool fresh = !in_message_ && !llhttp_closing_ && scanner_.scanning() &&
               scanner_.section_bytes() == 0 && data[0] >= 'A' && data[0] <= 'Z';
  if (scanner_.scanning()) {
    scan_pos_ += scanner_.scan(data, len);
    if (scanner_.failed()) {
      fail(scanner_.error(), scanner_.reason());
      return 0;
    }
  }
  if (fresh && scanner_.done())
    if (long n = fast_head(data, static_cast<size_t>(scan_pos_ - data)); n >= 0)
      return static_cast<size_t>(n);
  const char* from = data;
  for (;;) {
    llhttp_errno_t rc = llhttp_execute(&parser_, from, static_cast<size_t>(buf_end_ - from));
    if (rc == HPE_OK) {
      // A section the scanner saw end in this buffer must have ended for llhttp too (and a
      // request end pauses it): otherwise the two read the bytes differently.
      if (scanner_.done()) {
        fail(ParseError::BAD_REQUEST, "ambiguous request framing");
        return static_cast<size_t>(scan_pos_ - data);
      }
      return len;
    }
    const char* stop = llhttp_get_error_pos(&parser_);
    if (rc == HPE_PAUSED_UPGRADE) {
      // After an Upgrade or CONNECT request, which on_message_complete has already paused on,
      // llhttp stops once more. A session that switches protocols stops feeding; one that
      // declines the upgrade reads HTTP/1.1 on.
      llhttp_resume_after_upgrade(&parser_);
      from = stop;
      continue;
    }
    if (rc == HPE_PAUSED) {
      paused_ = true;
      return static_cast<size_t>(stop - data);
    }
    if (rc != HPE_USER)
      fail(ParseError::BAD_REQUEST, llhttp_get_error_reason(&parser_));
    return static_cast<size_t>(stop - data);
  }
}

void Http1RequestParser::resume() {
  if (!paused_)
    return;
  paused_ = false;
  llhttp_resume(&parser_);
}

int Http1RequestParser::on_message_begin(llhttp_t* p) {
  return self(p)->begin_message();
}

int Http1RequestParser::begin_message() {
  head_.clear();
  arena_.reset();
  field_ = value_ = {};
  trailers_.clear();
  in_message_ = true;
  in_head_ = true;
  head_bytes_ = 0;
  body_bytes_ = 0;
  return 0;
}

int Http1RequestParser::on_method_complete(llhttp_t* p) {
  // Known from here, not only once the head is whole: a head refused later (431, 414) is
  // logged with its method.
  self(p)->head_.method = llhttp_method_name(static_cast<llhttp_method_t>(p->method));
  return 0;
}

int Http1RequestParser::on_url(llhttp_t* p, const char* at, size_t len) {
  auto* s = self(p);
  if (s->head_.target.size() + len > s->limits_.max_uri_bytes)
    return s->fail(ParseError::URI_TOO_LONG, "request target too long");
  s->head_.target = s->arena_.append(s->head_.target, {at, len});
  return 0;
}

int Http1RequestParser::on_header_field(llhttp_t* p, const char* at, size_t len) {
  auto* s = self(p);
  s->field_ = s->arena_.append(s->field_, {at, len});
  return 0;
}

int Http1RequestParser::on_header_value(llhttp_t* p, const char* at, size_t len) {
  auto* s = self(p);
  s->value_ = s->arena_.append(s->value_, {at, len});
  return 0;
}

int Http1RequestParser::on_header_value_complete(llhttp_t* p) {
  return self(p)->finish_field();
}

int Http1RequestParser::finish_field() {
  if (field_.empty())
    return fail(ParseError::BAD_REQUEST, "empty header field name");
  if (head_.headers.size() + trailers_.size() >= limits_.max_headers)
    return fail(ParseError::HEADERS_TOO_LARGE, "too many header fields");
  // Lower-case the name in place: the arena owns these bytes.
  char* name = const_cast<char*>(field_.data());
  for (size_t i = 0; i < field_.size(); ++i)
    name[i] = ascii_lower(name[i]);
  // llhttp drops the leading whitespace of a value, not the trailing.
  std::string_view v = value_;
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t'))
    v.remove_suffix(1);
  // A trailer (the scanner has checked its syntax) goes aside, never into the head.
  (in_head_ ? head_.headers : trailers_).push_back({field_, v});
  field_ = value_ = {};
  return 0;
}

int Http1RequestParser::on_headers_complete(llhttp_t* p) {
  auto* s = self(p);
  // llhttp and the scanner must agree on where the head ends (the scanner saw this buffer
  // first, so it has reached the end already if they do).
  if (!s->scanner_.done())
    return s->fail(ParseError::BAD_REQUEST, "ambiguous request head");
  s->head_bytes_ = s->scanner_.section_bytes();
  Framing f;
  f.major = p->http_major;
  f.minor = p->http_minor;
  f.method = llhttp_method_name(static_cast<llhttp_method_t>(p->method));
  f.keep_alive = llhttp_should_keep_alive(p);
  f.chunked = (p->flags & F_CHUNKED) != 0;
  f.has_length = (p->flags & F_CONTENT_LENGTH) != 0;
  f.length = p->content_length;
  if (s->check_head(f) != 0)
    return HPE_USER;
  s->in_head_ = false;
  if (s->head_.chunked) {
    // The body starts where the head ended, in this very buffer: check the framing of what
    // has arrived before the head is handed on.
    s->scanner_.start_chunked(s->limits_.max_header_bytes);
    s->scan_pos_ += s->scanner_.scan(s->scan_pos_, static_cast<size_t>(s->buf_end_ - s->scan_pos_));
    if (s->scanner_.failed())
      return s->fail(s->scanner_.error(), s->scanner_.reason());
  } else {
    s->scanner_.stop();
  }
  s->sink_.on_request_head(s->head_);
  return 0;
}

int Http1RequestParser::check_head(const Framing& fr) {
  auto& h = head_;
  if (fr.major != 1 || fr.minor > 1)
    return fail(ParseError::BAD_VERSION, "unsupported HTTP version");
  h.version = fr.minor == 0 ? Version::HTTP_1_0 : Version::HTTP_1_1;
  h.method = fr.method;
  h.scheme = "http";
  h.keep_alive = fr.keep_alive;
  if (check_framing(fr) != 0)
    return HPE_USER;
  int hosts = 0;
  for (const auto& f : h.headers) {
    if (f.name == "host") {
      h.authority = f.value;
      ++hosts;
    } else if (f.name == "expect") {
      if (!iequals(f.value, "100-continue"))
        return fail(ParseError::EXPECTATION_FAILED, "unsupported expectation");
      h.expect_continue = true;
    }
  }
  if (hosts > 1 || (hosts == 0 && h.version == Version::HTTP_1_1))
    return fail(ParseError::BAD_REQUEST, "missing or repeated Host");
  if (!valid_authority(h.authority))
    return fail(ParseError::BAD_REQUEST, "bad Host");
  return check_target();
}

// Content-Length and Transfer-Encoding, the two ways to read a body differently: llhttp
// already refuses both together, repeated or malformed Content-Length, and a chunked that is
// not the final coding.
int Http1RequestParser::check_framing(const Framing& fr) {
  auto& h = head_;
  bool te = false;
  for (const auto& f : h.headers) {
    if (f.name != "transfer-encoding")
      continue;
    // Only "chunked" alone is implemented: other codings are 501 (RFC 9112 6.1), and llhttp
    // has refused a list where chunked is not last.
    if (!iequals(f.value, "chunked"))
      return fail(f.value.empty() ? ParseError::BAD_REQUEST : ParseError::NOT_IMPLEMENTED,
                  "unsupported transfer coding");
    te = true;
  }
  h.chunked = fr.chunked;
  if (te != h.chunked)
    return fail(ParseError::BAD_REQUEST, "ambiguous Transfer-Encoding");
  // An HTTP/1.0 message with Transfer-Encoding has faulty framing (RFC 9112 6.1).
  if (te && h.version == Version::HTTP_1_0)
    return fail(ParseError::BAD_REQUEST, "Transfer-Encoding in an HTTP/1.0 request");
  if (fr.has_length)
    h.content_length = static_cast<int64_t>(fr.length);
  if (h.method == "CONNECT" && h.has_body())
    return fail(ParseError::BAD_REQUEST, "CONNECT with a body");
  if (limits_.max_body_bytes >= 0 && h.content_length > limits_.max_body_bytes)
    return fail(ParseError::BODY_TOO_LARGE, "request body too large");
  return 0;
}

// origin-form "/p?q"; asterisk-form "*" for OPTIONS; authority-form for CONNECT; absolute-form
// "http://host/p?q", which becomes origin-form with its authority replacing Host (RFC 9112
// 3.2.2), so that the router and the upstream see the same authority.
int Http1RequestParser::check_target() {
  auto& h = head_;
  std::string_view t = h.target;
  bool connect = h.method == "CONNECT";
  if (!t.empty() && t[0] == '/' && !connect)
    return 0;
  if (t == "*")
    return h.method == "OPTIONS" ? 0 : fail(ParseError::BAD_REQUEST, "bad request target");
  if (connect) {
    if (t.empty() || !valid_authority(t) || t.find(':') == std::string_view::npos)
      return fail(ParseError::BAD_REQUEST, "CONNECT needs host:port");
    return 0;
  }
  size_t colon = t.find("://");
  if (colon == std::string_view::npos)
    return fail(ParseError::BAD_REQUEST, "bad request target");
  std::string_view scheme = t.substr(0, colon);
  if (iequals(scheme, "http"))
    h.scheme = "http";
  else if (iequals(scheme, "https"))
    h.scheme = "https";
  else
    return fail(ParseError::BAD_REQUEST, "unsupported URI scheme");
  std::string_view rest = t.substr(colon + 3);
  size_t path = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, path);
  if (authority.empty() || !valid_authority(authority))
    return fail(ParseError::BAD_REQUEST, "bad authority in request target");
  h.authority = authority;
  if (path == std::string_view::npos)
    h.target = "/";
  else if (rest[path] == '?')
    h.target = arena_.append(arena_.copy("/"), rest.substr(path));
  else
    h.target = rest.substr(path);
  return 0;
}

int Http1RequestParser::on_chunk_header(llhttp_t* p) {
  auto* s = self(p);
  // Refuse a body over the limit as soon as a chunk size says so, not after reading it.
  int64_t max = s->limits_.max_body_bytes;
  if (max >= 0 && p->content_length > static_cast<uint64_t>(max - s->body_bytes_))
    return s->fail(ParseError::BODY_TOO_LARGE, "request body too large");
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
  if (s->head_.chunked && !s->scanner_.done())
    return s->fail(ParseError::BAD_REQUEST, "ambiguous chunked framing");
  s->llhttp_closing_ = !llhttp_should_keep_alive(p);
  return s->end_message();
}

int Http1RequestParser::end_message() {
  in_message_ = false;
  in_head_ = true;
  closed_ = !head_.keep_alive;
  scanner_.start_head(limits_.max_header_bytes);
  if (!trailers_.empty())
    sink_.on_request_trailers(trailers_);
  sink_.on_request_end();
  return HPE_PAUSED;
}

} // namespace portico::http
