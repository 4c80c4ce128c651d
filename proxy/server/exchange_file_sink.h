#pragma once
// StaticFiles answering straight into a client Exchange (portico-backend's document root):
// a file body goes to the kernel with sendfile where the connection allows (cleartext
// HTTP/1.1), else is read as the client takes it.
#include "server/exchange.h"
#include "server/file_sink.h"

namespace portico::server {

class ExchangeFileSink final : public FileSink {
public:
  explicit ExchangeFileSink(Exchange& ex) : ex_(ex) {}
  const http::RequestHead& request() const override { return ex_.request(); }
  http::Arena& arena() override { return ex_.arena(); }
  struct ev_loop* loop() const override {
    return ex_.loop();
  }
  void send_head(const http::ResponseHead& head) override { ex_.send_head(head); }
  void send_body(std::string_view data) override { ex_.send_body(data); }
  void end_response() override { ex_.end_response(); }
  void send_file(int fd, int64_t offset, int64_t length) override;

private:
  Exchange& ex_;
};

} // namespace portico::server
