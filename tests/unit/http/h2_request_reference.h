#pragma once
// An HTTP/2 request as frames, judged two ways: by H2RequestRules, and by an nghttp2 server
// session that checks requests itself (its HTTP messaging, on by default). The unit test and
// the fuzz target hold the first to the second.
#include "http/h2_request_rules.h"

#include <cstdlib>
#include <nghttp2/nghttp2.h>
#include <string>
#include <utility>
#include <vector>

namespace portico::http::h2_reference {

using Fields = std::vector<std::pair<std::string, std::string>>;

inline Fields request(std::string method = "GET", std::string path = "/") {
  return {
      {":method", method}, {":scheme", "https"}, {":authority", "example.com"}, {":path", path}};
}

// What a whole request comes to: the rules' verdict over its header section, its content and
// its trailer section. data: DATA frame lengths; trailers: a trailer section after them.
struct Shape {
  Fields fields;
  bool end_on_headers = true;
  std::vector<size_t> data;
  bool end_on_data = false;
  Fields trailers;
  bool has_trailers = false;
  bool trailers_end_stream = true;
  bool connect_protocol = true;
};

inline bool rules_accept(const Shape& s) {
  H2RequestRules r;
  for (const auto& [n, v] : s.fields)
    if (!r.header_field(n, v, s.connect_protocol))
      return false;
  if (!r.header_end())
    return false;
  if (s.end_on_headers)
    return r.end();
  for (size_t i = 0; i < s.data.size(); ++i) {
    if (!r.data(s.data[i]))
      return false;
    if (s.end_on_data && i + 1 == s.data.size())
      return r.end();
  }
  if (!s.has_trailers)
    return true;
  for (const auto& [n, v] : s.trailers)
    if (!r.trailer_field(n, v))
      return false;
  return H2RequestRules::trailers_end(s.trailers_end_stream) && r.end();
}

// The reference: an nghttp2 server session that checks requests itself (its HTTP messaging,
// on by default), fed the same request as frames. Its verdict: whether it reset stream 1 with
// PROTOCOL_ERROR.
class Nghttp2Reference {
public:
  bool accepts(const Shape& s) {
    nghttp2_session_callbacks* cbs;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session* session;
    if (nghttp2_session_server_new(&session, cbs, nullptr) != 0)
      std::abort();
    nghttp2_session_callbacks_del(cbs);
    nghttp2_settings_entry iv{NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL, 1};
    if (nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, &iv, s.connect_protocol) != 0)
      std::abort();
    drain(session);

    std::string in = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    frame(in, NGHTTP2_SETTINGS, 0, 0, "");
    frame(in, NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, "");
    nghttp2_hd_deflater* deflater;
    nghttp2_hd_deflate_new(&deflater, 4096);
    bool no_data = s.data.empty() && !s.has_trailers;
    frame(in, NGHTTP2_HEADERS,
          NGHTTP2_FLAG_END_HEADERS | (s.end_on_headers ? NGHTTP2_FLAG_END_STREAM : 0), 1,
          block(deflater, s.fields));
    if (!s.end_on_headers && !no_data) {
      for (size_t i = 0; i < s.data.size(); ++i) {
        bool last = s.end_on_data && i + 1 == s.data.size();
        frame(in, NGHTTP2_DATA, last ? NGHTTP2_FLAG_END_STREAM : 0, 1, std::string(s.data[i], 'd'));
      }
      if (s.has_trailers && !s.end_on_data)
        frame(in, NGHTTP2_HEADERS,
              NGHTTP2_FLAG_END_HEADERS | (s.trailers_end_stream ? NGHTTP2_FLAG_END_STREAM : 0), 1,
              block(deflater, s.trailers));
    }
    nghttp2_hd_deflate_del(deflater);
    // nghttp2 may stop early on a connection error (a frame on a stream it has closed):
    // what it wrote by then says what it made of the request.
    nghttp2_session_mem_recv(session, reinterpret_cast<const uint8_t*>(in.data()), in.size());
    bool reset = reset_with_protocol_error(drain(session));
    nghttp2_session_del(session);
    return !reset;
  }

private:
  static void frame(std::string& out, uint8_t type, uint8_t flags, int32_t id,
                    const std::string& payload) {
    size_t n = payload.size();
    const char h[9] = {char(n >> 16),  char(n >> 8),   char(n),       char(type), char(flags),
                       char(id >> 24), char(id >> 16), char(id >> 8), char(id)};
    out.append(h, 9);
    out += payload;
  }
  static std::string block(nghttp2_hd_deflater* d, const Fields& fields) {
    std::vector<nghttp2_nv> nva;
    for (const auto& [n, v] : fields)
      nva.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(n.data())),
                     reinterpret_cast<uint8_t*>(const_cast<char*>(v.data())), n.size(), v.size(),
                     NGHTTP2_NV_FLAG_NONE});
    std::string out(nghttp2_hd_deflate_bound(d, nva.data(), nva.size()), '\0');
    ssize_t n = nghttp2_hd_deflate_hd(d, reinterpret_cast<uint8_t*>(out.data()), out.size(),
                                      nva.data(), nva.size());
    if (n < 0)
      std::abort();
    out.resize(static_cast<size_t>(n));
    return out;
  }
  static std::string drain(nghttp2_session* session) {
    std::string out;
    const uint8_t* p;
    for (ssize_t n; (n = nghttp2_session_mem_send(session, &p)) > 0;)
      out.append(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
    return out;
  }
  static bool reset_with_protocol_error(const std::string& out) {
    auto u8 = [&](size_t i) { return static_cast<uint8_t>(out[i]); };
    for (size_t i = 0; i + 9 <= out.size();) {
      size_t len = (size_t(u8(i)) << 16) | (size_t(u8(i + 1)) << 8) | u8(i + 2);
      uint32_t id = ((uint32_t(u8(i + 5)) << 24) | (uint32_t(u8(i + 6)) << 16) |
                     (uint32_t(u8(i + 7)) << 8) | u8(i + 8)) &
                    0x7fffffff;
      if (u8(i + 3) == NGHTTP2_RST_STREAM && id == 1 && len == 4 && u8(i + 12) == 1)
        return true;
      i += 9 + len;
    }
    return false;
  }
};

inline std::string describe(const Shape& s) {
  std::string d;
  auto fields = [&](const Fields& f) {
    for (const auto& [n, v] : f) {
      d += "  [";
      for (char c : n + "] = [" + v)
        d += (c >= 0x20 && c < 0x7f) ? std::string(1, c) : "\\x" + std::to_string(uint8_t(c));
      d += "]\n";
    }
  };
  fields(s.fields);
  d += s.end_on_headers ? "END_STREAM on HEADERS\n" : "DATA:";
  for (size_t n : s.data)
    d += " " + std::to_string(n);
  d += s.end_on_data ? " (END_STREAM)\n" : "\n";
  if (s.has_trailers) {
    d += s.trailers_end_stream ? "trailers (END_STREAM):\n" : "trailers (no END_STREAM):\n";
    fields(s.trailers);
  }
  d += s.connect_protocol ? "ENABLE_CONNECT_PROTOCOL sent\n" : "";
  return d;
}

} // namespace portico::http::h2_reference
