#pragma once
// When an HTTP/2 request is malformed (RFC 9113 8.1.1, 8.2, 8.3), judged by the proxy as nghttp2
// hands over each decoded field, instead of by nghttp2's own "HTTP messaging" pass. That pass
// cost 7% of the proxy's instructions per small request: it tells pseudo-fields apart with a
// name check and a token switch of its own, and calls a check per field, before the proxy tells
// them apart again to store them. The verdicts stay nghttp2's: the bytes are judged by the
// library's classes (tabulated from nghttp2_check_header_name, _value, _method, _path,
// _authority), the rules follow its nghttp2_http.c, and a differential test and fuzz target
// feed the same requests to this class and to an nghttp2 server session that checks them.
//
// Every verdict of false means the same thing: the stream is reset with PROTOCOL_ERROR, and
// nothing of the request goes further.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace portico::http {

// A value as RFC 9113 8.2.1 allows it, judged as nghttp2_check_header_value_rfc9113 does.
bool field_value_ok(std::string_view v);
// A regular field's name: lower-case token characters, as nghttp2_check_header_name judges.
bool field_name_ok(std::string_view n);

class H2RequestRules {
public:
  // A field of the request's header section. connect_protocol: SETTINGS_ENABLE_CONNECT_PROTOCOL
  // was sent (RFC 8441), so :protocol may come.
  bool header_field(std::string_view name, std::string_view value, bool connect_protocol) {
    return field(name, value, false, connect_protocol);
  }
  // A field of the trailer section: no pseudo-fields, the rest as in the header section.
  bool trailer_field(std::string_view name, std::string_view value) {
    return field(name, value, true, false);
  }
  // The header section is whole: the pseudo-fields a request needs are there and agree.
  bool header_end();
  // The trailer section is whole; end_stream: it carried END_STREAM, as it must.
  static bool trailers_end(bool end_stream) { return end_stream; }
  // n more bytes of request content: false once they pass a content-length.
  bool data(size_t n) {
    received_ += static_cast<int64_t>(n);
    return content_length_ < 0 || received_ <= content_length_;
  }
  // END_STREAM: the content was as long as a content-length said.
  bool end() const { return content_length_ < 0 || content_length_ == received_; }

private:
  bool field(std::string_view name, std::string_view value, bool trailer, bool connect_protocol);
  // Once-only fields (the pseudo-fields, Host) and what their values said.
  enum Flag : uint16_t {
    AUTHORITY = 1 << 0,
    METHOD = 1 << 1,
    PATH = 1 << 2,
    SCHEME = 1 << 3,
    PROTOCOL = 1 << 4,
    HOST = 1 << 5,
    REGULAR_SEEN = 1 << 6, // a regular field came: no pseudo-field may follow
    METH_CONNECT = 1 << 7,
    METH_OPTIONS = 1 << 8,
    PATH_REGULAR = 1 << 9,   // starts with "/"
    PATH_ASTERISK = 1 << 10, // is "*"
    SCHEME_HTTP = 1 << 11,   // http or https, any case
  };
  // Sets flag; false when it was set already or the value is empty.
  bool once(Flag flag, std::string_view value);
  uint16_t flags_ = 0;
  int64_t content_length_ = -1;
  int64_t received_ = 0;
};

} // namespace portico::http
