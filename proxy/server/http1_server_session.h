#pragma once
// HTTP/1.0 and 1.1 for one client connection: one exchange at a time, pipelined requests
// parsed only once the previous response is complete, keep-alive, chunked framing both ways,
// Expect: 100-continue, and the hand-over to HTTP/2 on "Upgrade: h2c".
#include "http/http1_request_parser.h"
#include "server/exchange.h"
#include "server/server_session.h"

namespace portico::server {

class ClientConnection;
class Http1ServerSession;

class Http1Exchange final : public Exchange {
public:
  explicit Http1Exchange(Http1ServerSession& s) : session_(s) {}
  void send_head(const http::ResponseHead& head) override;
  void send_body(std::string_view data) override;
  void end_response() override;
  void end_response_with_trailers(std::span<const http::Header> trailers) override;
  size_t buffered() const override;
  void pause_request_body() override;
  void resume_request_body() override;
  void abort() override;

private:
  friend class Http1ServerSession;
  void reset(struct ev_loop* loop);
  Http1ServerSession& session_;
  bool chunked_ = false;
  bool no_body_ = false;
};

class Http1ServerSession final : public ServerSession, private http::Http1RequestParser::Sink {
public:
  explicit Http1ServerSession(ClientConnection& conn);
  ~Http1ServerSession() override;

  size_t on_input(const char* data, size_t len) override;
  void on_eof() override;
  bool idle() const override { return !active_ && parser_.idle(); }
  ev_tstamp head_started() const override { return head_started_; }
  void on_timeout() override;
  void drain() override;
  void on_close() override;
  void on_output_drained() override;

private:
  friend class Http1Exchange;
  void on_request_head(http::RequestHead& head) override;
  void on_request_body(std::string_view data) override;
  void on_request_trailers(std::span<const http::Header> trailers) override;
  void on_request_end() override;

  bool try_upgrade_h2c(const http::RequestHead& head);
  void send_error(int status);
  void send_continue();
  void finish_exchange();
  void write_head(const http::ResponseHead& head);

  ClientConnection& conn_;
  Http1Exchange ex_;
  http::Http1RequestParser parser_;
  ev_tstamp head_started_ = 0; // the request head being read began then; 0 for none
  bool active_ = false;        // an exchange is between its head and its close
  bool in_input_ = false;      // inside on_input: a finished exchange lets the loop go on
  bool keep_alive_ = true;     // this exchange's response leaves the connection open
  bool draining_ = false;
  bool peer_eof_ = false;
  bool upgraded_ = false;
  bool writable_wanted_ = false;
  bool output_full_ = false;      // pipelined requests wait until the client reads its responses
  bool continue_pending_ = false; // Expect: 100-continue, and no interim response sent yet
};

} // namespace portico::server
