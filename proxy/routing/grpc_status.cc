#include "routing/grpc_status.h"

#include <charconv>

namespace portico::routing::grpc {

bool is_grpc(const http::RequestHead& req) {
  const http::Header* ct = req.find("content-type");
  if (!ct)
    return false;
  std::string_view v = ct->value;
  constexpr std::string_view kGrpc = "application/grpc";
  return v.size() >= kGrpc.size() && http::iequals(v.substr(0, kGrpc.size()), kGrpc) &&
         (v.size() == kGrpc.size() || v[kGrpc.size()] == '+' || v[kGrpc.size()] == ';');
}

int status_for(int http_status) {
  switch (http_status) {
  case 400: return 13; // INTERNAL
  case 401: return 16; // UNAUTHENTICATED
  case 403: return 7;  // PERMISSION_DENIED
  case 404:
  case 501: return 12; // UNIMPLEMENTED
  case 413:
  case 431: return 8; // RESOURCE_EXHAUSTED
  case 429:
  case 502:
  case 503: return 14; // UNAVAILABLE
  case 504: return 4;  // DEADLINE_EXCEEDED
  default: return 2;   // UNKNOWN
  }
}

void append_message(std::string& out, std::string_view message) {
  // Anything but printable ASCII other than '%' is escaped (the gRPC HTTP/2 protocol document).
  for (unsigned char c : message) {
    if (c >= 0x20 && c < 0x7f && c != '%') {
      out.push_back(static_cast<char>(c));
    } else {
      static constexpr char kHex[] = "0123456789ABCDEF";
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
}

std::optional<double> timeout_of(const http::RequestHead& req) {
  const http::Header* t = req.find("grpc-timeout");
  if (!t || t->value.size() < 2 || t->value.size() > 9)
    return std::nullopt;
  std::string_view digits = t->value.substr(0, t->value.size() - 1);
  uint64_t n = 0;
  auto r = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (r.ec != std::errc() || r.ptr != digits.data() + digits.size())
    return std::nullopt;
  double unit;
  switch (t->value.back()) {
  case 'H': unit = 3600; break;
  case 'M': unit = 60; break;
  case 'S': unit = 1; break;
  case 'm': unit = 1e-3; break;
  case 'u': unit = 1e-6; break;
  case 'n': unit = 1e-9; break;
  default: return std::nullopt;
  }
  return static_cast<double>(n) * unit;
}

} // namespace portico::routing::grpc
