// The common request read without llhttp: part of Http1RequestParser. Profiled on HTTP/1.1
// (plain and over TLS), llhttp and its callbacks were the largest part of Portico's own work
// per request after the strict scanner, which had just checked the same head line by line.
// When a head arrives whole in one buffer, the scanner has accepted it, and it is of the plain
// kind (a method of the table below, an origin-form target, HTTP/1.1 or 1.0, no body: neither
// Content-Length nor Transfer-Encoding; Connection "close" or "keep-alive" if any; no Upgrade
// or Proxy-Connection), the head is split here. Anything else is declined before anything
// changes that llhttp's reading would not reset, and llhttp reads it as before. The checks
// after the head (Host, Expect, the target, limits) are the same code for both. Both readings
// must agree: http1_request_parser_fuzz parses every input whole (this path) and in small
// pieces (llhttp's) and compares the two, and the unit tests do the same.
#include "http/http1_request_parser.h"

#include <cstring>

namespace portico::http {

namespace {

// The methods taken here, by their request-line spelling (case-sensitive, as llhttp reads
// them), with the names llhttp gives them.
struct Method {
  std::string_view wire;
  llhttp_method_t id;
};
constexpr Method kMethods[] = {
    {"GET", HTTP_GET},       {"HEAD", HTTP_HEAD},       {"POST", HTTP_POST},  {"PUT", HTTP_PUT},
    {"DELETE", HTTP_DELETE}, {"OPTIONS", HTTP_OPTIONS}, {"PATCH", HTTP_PATCH}};

} // namespace

long Http1RequestParser::fast_head(const char* data, size_t head_len) {
  // The scanner has checked "token SP target SP HTTP/d.d CRLF", field lines and the empty line.
  const char* line_end = static_cast<const char*>(std::memchr(data, '\r', head_len));
  std::string_view line(data, static_cast<size_t>(line_end - data));
  size_t sp1 = line.find(' ');
  size_t sp2 = line.rfind(' ');
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  const Method* m = nullptr;
  for (const auto& k : kMethods)
    if (k.wire == method)
      m = &k;
  const Http1StrictScanner::Mark* marks = scanner_.marks();
  size_t fields = scanner_.mark_count();
  if (!m || !marks || fields > limits_.max_headers || target.empty() || target[0] != '/' ||
      target.size() > limits_.max_uri_bytes || (version != "HTTP/1.1" && version != "HTTP/1.0"))
    return -1;

  begin_message();
  // One copy of the whole head into the arena, where the views live: names are lower-cased
  // there in place.
  char* copy = arena_.allocate(head_len);
  std::memcpy(copy, data, head_len);
  head_.target = {copy + sp1 + 1, target.size()};
  int connection = 0; // 0 none, 1 close, 2 keep-alive
  size_t from = line.size() + 2;
  for (const auto* k = marks; k < marks + fields; ++k) {
    // The scanner's marks: each field line runs from the end of the last one to its CR, and
    // has its colon where marked.
    char* name = copy + from;
    size_t name_len = k->colon - from;
    for (size_t i = 0; i < name_len; ++i)
      name[i] = ascii_lower(name[i]);
    std::string_view n(name, name_len);
    // As llhttp reads a value: without its leading whitespace; the framing fields are judged
    // on that (trailing whitespace in them is llhttp's to judge), and every value is passed on
    // without its trailing whitespace as well (finish_field).
    std::string_view raw = trim_ows_front({copy + k->colon + 1, k->cr - k->colon - 1});
    from = k->cr + 2;
    if (n == "content-length" || n == "transfer-encoding" || n == "upgrade" ||
        n == "proxy-connection")
      return decline();
    if (n == "connection") {
      if (connection != 0)
        return decline();
      connection = iequals(raw, "close") ? 1 : iequals(raw, "keep-alive") ? 2 : -1;
      if (connection < 0)
        return decline();
    }
    head_.headers.push_back({n, trim_ows_back(raw)});
  }
  Framing f;
  f.minor = static_cast<uint8_t>(version[7] - '0');
  f.method = llhttp_method_name(m->id);
  f.keep_alive = f.minor == 1 ? connection != 1 : connection == 2;
  head_bytes_ = scanner_.section_bytes();
  if (check_head(f) != 0)
    return static_cast<long>(head_len);
  in_head_ = false;
  scanner_.stop();
  sink_.on_request_head(head_);
  end_message();
  paused_ = true;
  return static_cast<long>(head_len);
}

long Http1RequestParser::decline() {
  // llhttp's on_message_begin resets the rest; a head in progress is its to read from scratch.
  in_message_ = false;
  return -1;
}

} // namespace portico::http
