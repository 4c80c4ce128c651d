#pragma once
// What the server side of one worker counts (client connections, sessions, streams, TLS
// handshakes, timeouts, GOAWAYs, paused accepts, buffers), declared once with the names the
// exposition labels them by. Written by the worker with relaxed stores, read by the admin
// thread. Here in metrics/ rather than server/ so that the exposition needs no server header.
#include "core/counter.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>

namespace portico::metrics {

// Why the server side cut a client short; kClientTimeoutKinds names them in order.
enum class ClientTimeout : uint8_t {
  HEADER,      // a request head (or TLS handshake, or HTTP/2 header block) took too long
  IDLE,        // keep-alive: no request for keepalive_timeout
  SEND,        // the client took no byte of queued output for send_timeout
  STREAM_SEND, // an HTTP/2 stream's window stayed shut for send_timeout
  COUNT
};
inline constexpr const char* kClientTimeoutKinds[] = {"client_header", "client_idle", "client_send",
                                                      "h2_stream_send"};
static_assert(std::size(kClientTimeoutKinds) == static_cast<size_t>(ClientTimeout::COUNT));

// Why a client connection was not taken at once; kClientRejections names them in order.
enum class ClientRejection : uint8_t {
  AT_LIMIT,         // max_connections (the process's or a listener's): accepting paused
  MEMORY,           // max_buffer_memory: accepting paused until buffers drain
  OUT_OF_RESOURCES, // accept failed for want of file descriptors or memory: backing off
  PER_CLIENT,       // max_connections_per_client: that one connection closed at once
  COUNT
};
inline constexpr const char* kClientRejections[] = {"max_connections", "buffer_memory",
                                                    "out_of_resources", "per_client"};

// HTTP/2 GOAWAY frames sent to clients, by error code; kGoawayReasons names them in order.
inline constexpr const char* kGoawayReasons[] = {"no_error", "protocol_error", "flow_control_error",
                                                 "enhance_your_calm", "other"};

// Written by the worker, readable from the admin thread.
struct ServerStats {
  core::Counter connections_accepted;
  core::Counter connections_closed;
  core::Counter requests;
  // By protocol (0 HTTP/1.x, 1 HTTP/2) and TLS (0 no, 1 yes), from when the protocol is known.
  core::Counter sessions_opened[2][2];
  core::Counter sessions_closed[2][2];
  core::Counter h2_streams_opened, h2_streams_closed;
  // HTTP/2 connections with no stream yet whose nghttp2 session was put away, and those that
  // woke (or closed) since: the difference is how many sleep now.
  core::Counter h2_dormant_entered, h2_dormant_left;
  core::Counter tls_handshakes, tls_handshake_failures;
  // TLS client connections that gave their record buffers back while quiet, and those that
  // took them again (or closed) since: the difference is how many rest now.
  core::Counter tls_rested, tls_woke;
  core::Counter timeouts[static_cast<size_t>(ClientTimeout::COUNT)];
  core::Counter h2_goaways[std::size(kGoawayReasons)];
  core::Counter rejected[static_cast<size_t>(ClientRejection::COUNT)];
  std::atomic<int64_t> buffer_blocks{0}; // the thread's BlockPool in_use(), published by it
  core::Counter buffer_limit_aborts;     // exchanges aborted at max_buffered_response_bytes
  core::Counter sendfile_bytes;          // response bytes sent from files by sendfile(2)
  // QUIC (HTTP/3) connections made and ended; Retry packets sent (address validation under
  // load); client Initials dropped (at max_connections, or draining).
  core::Counter quic_opened, quic_closed, quic_retries, quic_refused;
  void count(ClientRejection r) { rejected[static_cast<size_t>(r)].inc(); }
  void count(ClientTimeout t) { timeouts[static_cast<size_t>(t)].inc(); }
};

} // namespace portico::metrics
