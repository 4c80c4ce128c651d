#pragma once
// HTTP/1.0 and 1.1 for one client connection: one exchange at a time, pipelined requests
// parsed only once the previous response is complete, keep-alive, chunked framing both ways,
// Expect: 100-continue, the hand-over to HTTP/2 on "Upgrade: h2c", and WebSocket tunnels.
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
  bool send_file(int fd, int64_t offset, int64_t length) override;
  void end_response() override;
  void end_response_with_trailers(std::span<const http::Header> trailers) override;
  void start_tunnel(const http::ResponseHead& head) override;
  void socket_addresses(sockaddr_storage& peer, sockaddr_storage& local) const override;
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
  // Where the connection is in its life. Every change goes through set_state(), which asserts
  // that it is one of these transitions:
  //   IDLE -> HEAD -> REQUEST -> RESPONSE -> IDLE  one exchange after another
  //   IDLE -> REQUEST                              a whole head in one read
  //   REQUEST -> IDLE                              the response ended before the request did
  //   IDLE -> OUTPUT_FULL -> IDLE                  a pipelining client that reads slowly
  //   REQUEST -> UPGRADED                          "Upgrade: h2c"
  //   REQUEST, RESPONSE -> TUNNEL                  the handler answered an upgrade with 101
  //   IDLE, HEAD, REQUEST, RESPONSE, OUTPUT_FULL -> CLOSING; any but CLOSED -> CLOSED
  // What is not a stage of the connection's life stays a flag beside it (see the members).
  enum class State : uint8_t {
    IDLE,        // between requests, nothing of the next one read: the keep-alive wait
    HEAD,        // part of a request head has come: header_timeout runs from its first byte
    REQUEST,     // the handler has the head; the request body is still arriving (without a
                 // body, until the parser reaches the request's end in the same read). The
                 // response may be under way, or complete and the rest of the body dropped
    RESPONSE,    // the request is complete, its response not yet: pipelined input waits
    OUTPUT_FULL, // between requests with more than the high watermark of responses unread by
                 // the client: the next pipelined request is parsed once they drain
    UPGRADED,    // "101 Switching Protocols" queued: the connection is HTTP/2's from here
    TUNNEL,      // 101 sent for a WebSocket: bytes go both ways unparsed until either side
                 // ends; the exchange lasts as long
    CLOSING,     // the last response or an error is queued; the connection closes after it
    CLOSED,      // the connection closed, its exchange aborted: destroyed after this iteration
  };

  explicit Http1ServerSession(ClientConnection& conn);
  ~Http1ServerSession() override;

  size_t on_input(const char* data, size_t len) override;
  void on_eof() override;
  // Between requests, or answered while the rest of its body is still to come: no handler
  // paces the connection, keepalive_timeout does. (OUTPUT_FULL is not: a pipelined request
  // waits for the client to read, which send_timeout bounds.)
  bool idle() const override { return state_ == State::IDLE || answered_before_body_end(); }
  ev_tstamp head_started() const override { return head_started_; }
  void on_timeout() override;
  void drain() override;
  void goodbye() override;
  void on_close() override;
  void on_output_drained() override;
  State state() const { return state_; }

private:
  friend class Http1Exchange;
  void on_request_head(http::RequestHead& head) override;
  void on_request_body(std::string_view data) override;
  void on_request_trailers(std::span<const http::Header> trailers) override;
  void on_request_end() override;

  // The one place state_ changes; asserts that from state_ to next is a transition above.
  void set_state(State next);
  // An exchange is between its head and its close (ex_ belongs to it).
  bool in_exchange() const {
    return state_ == State::REQUEST || state_ == State::RESPONSE || state_ == State::TUNNEL;
  }
  bool answered_before_body_end() const;
  void start_tunnel(const http::ResponseHead& head);
  bool try_upgrade_h2c(const http::RequestHead& head);
  void send_error(int status);
  void send_continue();
  void finish_exchange();
  void write_head(const http::ResponseHead& head);

  ClientConnection& conn_;
  Http1Exchange ex_;
  http::Http1RequestParser parser_;
  ev_tstamp head_started_ = 0; // the request head being read began then; 0 for none
  State state_ = State::IDLE;
  // Flags beside the state: none of them is a stage of the connection's life.
  // Reentrancy guard: inside on_input, which itself goes on to the next pipelined request
  // when an exchange finishes during its parse (finish_exchange must not ask for input then).
  bool in_input_ = false;
  bool head_seen_ = false; // on_input has had a request head: what it took was no empty line
  // This exchange's response leaves the connection open: decided when its head is written
  // (in REQUEST or RESPONSE), acted on when the exchange finishes.
  bool keep_alive_ = true;
  // Expect: 100-continue, and no interim response sent yet. Only what precedes the response
  // head depends on it; the request is read the same way either way (a client may send its
  // body without waiting), so REQUEST does not split on it.
  bool continue_pending_ = false;
  // A graceful stop was asked. Every state goes on as before (an idle connection still answers
  // a request that comes within the grace); what changes is what is answered: "Connection:
  // close", and no h2c upgrade.
  bool draining_ = false;
  // The client shut its write side. Its pipelined requests are still answered, in whatever
  // state the session is; the connection closes after the last.
  bool peer_eof_ = false;
};

const char* to_string(Http1ServerSession::State s);

} // namespace portico::server
