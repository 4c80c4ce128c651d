#include "app_router.h"

#include "bytes_app.h"
#include "core/json_escape.h"
#include "counter_store.h"
#include "delay_app.h"
#include "echo_app.h"
#include "request_meter.h"
#include "server/exchange_file_sink.h"
#include "server/static_files.h"

#include <charconv>
#include <string>

namespace portico::backend {

namespace {

constexpr std::string_view kHello = "hello world\n";
constexpr std::string_view kJson = "application/json";

bool valid_counter_id(std::string_view id) {
  if (id.empty() || id.size() > 48)
    return false;
  for (char c : id)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
          c == '-'))
      return false;
  return true;
}

int status_app(server::Exchange& ex, std::string_view code) {
  int status = 0;
  auto r = std::from_chars(code.data(), code.data() + code.size(), status);
  if (r.ec != std::errc() || r.ptr != code.data() + code.size() || status < 200 || status > 599) {
    ex.respond(400, "text/plain", "status must be 200..599\n");
    return 400;
  }
  if (http::status_has_no_body(status)) {
    http::ResponseHead head;
    head.status = status;
    ex.send_head(head);
    ex.end_response();
    return status;
  }
  std::string_view reason = http::reason_phrase(status);
  char body[64];
  size_t n = 0;
  n += static_cast<size_t>(std::to_chars(body, body + 4, status).ptr - body);
  body[n++] = ' ';
  size_t k = std::min(reason.size(), sizeof body - n - 1);
  std::copy_n(reason.data(), k, body + n);
  n += k;
  body[n++] = '\n';
  ex.respond(status, "text/plain", {body, n});
  return status;
}

// The request as this server saw it, one "name: value" line per field after the request
// line: what a proxy in front added, dropped or joined.
int headers_app(server::Exchange& ex) {
  const auto& req = ex.request();
  std::string body;
  body.reserve(512);
  body.append(req.method).append(" ").append(req.target).append("\n");
  body.append(":authority: ").append(req.authority).append("\n");
  for (const auto& h : req.headers)
    body.append(h.name).append(": ").append(h.value).append("\n");
  ex.respond(200, "text/plain", body);
  return 200;
}

} // namespace

void AppRouter::on_request(server::Exchange& ex) {
  if (on_each_request)
    on_each_request();
  App app;
  if (!meter_) {
    dispatch(ex, &app);
    return;
  }
  double started = meter_->begin();
  int status = dispatch(ex, &app);
  meter_->end_dispatch(ex, app, status, started);
}

int AppRouter::dispatch(server::Exchange& ex, App* app) {
  const auto& req = ex.request();
  std::string_view path = req.path();
  std::string_view query = req.query();
  if (path == "/" || path == "/hello") {
    std::string_view id = http::query_param(query, "id");
    if (path == "/" && !id.empty()) {
      *app = App::COUNTER;
      return counter(ex, id);
    }
    *app = App::HELLO;
    ex.respond(200, "text/plain", kHello);
    return 200;
  }
  if (path == "/healthz") { // the app's readiness, for a proxy's health check
    *app = App::HELLO;
    ex.respond(200, "text/plain", "ok\n");
    return 200;
  }
  if (path == "/counter") {
    *app = App::COUNTER;
    return counter(ex, http::query_param(query, "id"));
  }
  if (path == "/echo") {
    *app = App::ECHO;
    return EchoApp::start(ex);
  }
  if (path.starts_with("/status/")) {
    *app = App::STATUS;
    return status_app(ex, path.substr(8));
  }
  if (path == "/delay") {
    *app = App::DELAY;
    return DelayApp::start(ex, http::query_param(query, "ms"), kHello);
  }
  if (path == "/bytes") {
    *app = App::BYTES;
    return BytesApp::start(ex, http::query_param(query, "n"), http::query_param(query, "max_age"));
  }
  if (path == "/headers") {
    *app = App::HEADERS;
    return headers_app(ex);
  }
  if (files_) {
    *app = App::STATIC;
    server::ExchangeFileSink sink(ex);
    return files_->serve(sink, ex.request().path());
  }
  *app = App::NOT_FOUND;
  ex.respond(404, "text/plain", "not found\n");
  return 404;
}

int AppRouter::counter(server::Exchange& ex, std::string_view id) {
  if (!valid_counter_id(id)) {
    ex.respond(400, kJson, "{\"error\":\"id must be 1-48 characters of [A-Za-z0-9_-]\"}\n");
    return 400;
  }
  return counters_.start(ex, id);
}

} // namespace portico::backend
