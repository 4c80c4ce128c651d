#pragma once
// What a TLS listener answers a client that sent plain HTTP where a ClientHello belonged (it
// forgot https://): nginx's "400 The plain HTTP request was sent to HTTPS port", in clear
// text, the only thing that client can read.
namespace portico::server {

// Reads what the client sent (a close with unread bytes is a reset, which can destroy the
// answer in flight), writes the 400 and shuts the sending side; the caller closes fd.
void send_plain_http_reply(int fd);

} // namespace portico::server
