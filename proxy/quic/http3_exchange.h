#pragma once
// One HTTP/3 request stream as an Exchange. Its response body waits in the stream's queue;
// nghttp3 is handed views of it and the bytes stay until QUIC says the client has them (a
// lost packet is sent again from them), then they are dropped.
#include "core/byte_queue.h"
#include "server/exchange.h"

#include <cstdint>
#include <nghttp3/nghttp3.h>
#include <vector>

namespace portico::quic {

class Http3Session;

class Http3Exchange final : public server::Exchange {
public:
  Http3Exchange(Http3Session& s, int64_t id);
  ~Http3Exchange() override;

  void send_head(const http::ResponseHead& head) override;
  void send_body(std::string_view data) override;
  void end_response() override;
  void end_response_with_trailers(std::span<const http::Header> trailers) override;
  size_t buffered() const override { return body_.size(); }
  void socket_addresses(sockaddr_storage& peer, sockaddr_storage& local) const override;
  void pause_request_body() override;
  void resume_request_body() override;
  void abort() override;

  int64_t id() const { return id_; }

private:
  friend class Http3Session;

  // nghttp3's data reader: views of the bytes not handed to it yet.
  nghttp3_ssize read_data(nghttp3_vec* vec, size_t veccnt, uint32_t* pflags);
  // The client has len more bytes of the body: they go.
  void acked(uint64_t len);

  Http3Session* session_;
  int64_t id_;
  core::ByteQueue
      body_; // response body: handed_ bytes given to nghttp3, unacknowledged; then the rest
  size_t handed_ = 0;
  std::vector<http::Header> request_trailers_;  // in the arena, until the request ends
  std::vector<http::Header> response_trailers_; // in the arena, until the last body byte goes
  size_t header_bytes_ = 0;                     // request header section size, for the limit
  size_t unconsumed_ = 0;     // request body bytes held back from the flow-control window
  int64_t body_received_ = 0; // request body so far, for max_body_bytes
  bool dispatched_ = false;   // the handler has the head
  bool too_large_ = false;    // the head went over max_header_bytes: answered 431 when complete
  bool paused_ = false;
  bool has_reader_ = false; // the response was submitted with a body
  bool blocked_ = false;    // the reader said WOULDBLOCK: resume when bytes come
  bool writable_wanted_ = false;
  bool closed_ = false; // nghttp3 closed the stream: no more calls into it
};

} // namespace portico::quic
