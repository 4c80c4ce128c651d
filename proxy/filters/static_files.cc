// A route's `static`: files from a directory (server/static_files.h), answered by the route.
// The response goes out through the filters before this one (compression, response fields);
// its body reaches the kernel with sendfile when none of them reads it and the client
// connection is cleartext HTTP/1.1, and is otherwise read into the chain as the client takes
// it.
#include "filters/route_factory.h"
#include "filters/static_settings.h"
#include "server/file_stream.h"

#include <vector>

namespace portico::filters {

namespace {

using routing::FilterStatus;

class StaticFilter final : public routing::Filter, public server::FileSink {
public:
  StaticFilter(server::StaticFiles& files, std::string_view strip) : files_(files), strip_(strip) {}

private:
  FilterStatus on_request_head(http::RequestHead& req) override {
    std::string_view path = req.path();
    if (!strip_.empty()) {
      // alias: the prefix stands for the directory; what follows it must be a path of its own
      // ("/static" does not make "/staticfoo" a file "foo" beside the directory)
      size_t cut = strip_.ends_with('/') ? strip_.size() - 1 : strip_.size();
      path = path.starts_with(strip_) ? path.substr(cut) : std::string_view();
      if (path.empty() && req.path() == strip_)
        path = "/";
      if (!path.starts_with('/')) {
        files_.respond_error(*this, 404);
        return FilterStatus::STOP;
      }
    }
    return files_.serve(*this, path) == server::StaticFiles::kPassOn ? FilterStatus::CONTINUE
                                                                     : FilterStatus::STOP;
  }

  // server::FileSink: through the chain, from this filter down.
  const http::RequestHead& request() const override { return exchange().request(); }
  http::Arena& arena() override { return exchange().arena(); }
  struct ev_loop* loop() const override {
    return exchange().loop();
  }
  void send_head(const http::ResponseHead& head) override {
    thread_local std::vector<http::Header> fields;
    fields.clear();
    head.for_each([&](const http::Header& h) { fields.push_back(h); });
    routing::FilterResponseHead out{head.status, head.content_length, &fields,
                                    routing::ResponseSource::LOCAL, false};
    respond_head(out);
  }
  void send_body(std::string_view data) override { pass_response_body(data, false); }
  void end_response() override { pass_response_body({}, true); }
  void send_file(int fd, int64_t offset, int64_t length) override {
    if (send_response_file(fd, offset, length)) {
      pass_response_body({}, true);
      return;
    }
    stream_.open(fd, offset, length);
    produce();
  }

  void on_response_writable() override { produce(); }
  void on_exchange_close() override { stream_.reset(); }

  void produce() {
    if (!stream_.active() || producing_)
      return;
    producing_ = true; // a chunk passed may drain the chain and call back here
    auto progress = stream_.pump([&](std::string_view chunk) { pass_response_body(chunk, false); },
                                 [&] { return response_blocked(); });
    producing_ = false;
    if (progress == server::FileStream::Progress::DONE)
      pass_response_body({}, true);
    else if (progress == server::FileStream::Progress::FAILED)
      fail(500, "a static file shrank or failed while it was read"); // a reset by now
  }

  server::StaticFiles& files_;
  std::string_view strip_;
  server::FileStream stream_;
  bool producing_ = false;
};

// One per route and worker: the worker's open-file cache for the route's directory.
class StaticFactory final : public routing::FilterFactory {
public:
  explicit StaticFactory(const config::RouteConfig& route, const StaticSettings& s)
      : files_(s.options), strip_(s.alias ? std::string_view(route.path_prefix) : "") {}
  routing::Filter* create(const server::Exchange&) const override {
    return new StaticFilter(files_, strip_);
  }

private:
  mutable server::StaticFiles files_; // the cache changes as it serves
  std::string_view strip_;
};

} // namespace

std::unique_ptr<routing::FilterFactory> make_static_files(const config::RouteConfig* r,
                                                          metrics::WorkerMetrics&) {
  const auto* s = r ? r->settings_for<StaticSettings>("static") : nullptr;
  if (!s)
    return nullptr;
  return std::make_unique<StaticFactory>(*r, *s);
}

} // namespace portico::filters
