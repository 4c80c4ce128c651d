#pragma once
// The UDP sockets of a QUIC listener: one per worker on the TLS listener's address, joined in
// one SO_REUSEPORT group, and a steering program on the group so that every packet of a
// connection reaches the worker that holds it, even after the client's address changed.
#include "core/expected.h"
#include "core/listen_address.h"

#include <cstdint>
#include <string>

namespace portico::quic {

// Binds a non-blocking, close-on-exec UDP socket on a's address with SO_REUSEPORT, asking for
// each datagram's destination address (IP_PKTINFO) and ECN bits. first: no socket of this
// process is bound there yet, so that anyone else's is an error rather than a share of the
// packets.
core::expected<int, std::string> open_udp(const core::ListenAddress& a, bool first);

// Attaches the steering program to fd's group (any socket of it): a short-header packet goes
// to socket number (first byte of its destination connection ID), which connection_ids.h
// makes the worker's index; a long-header packet (a handshake, whose 4-tuple cannot change
// before it is confirmed) to the kernel's hash of its addresses.
core::expected<void, std::string> attach_steering(int fd);

} // namespace portico::quic
