#pragma once
// The client a request comes from as far as the proxy can tell: the peer, or, when the peer is
// a trusted proxy, the address X-Forwarded-For names before the trusted hops, read right to
// left (nginx's real_ip_recursive). What an untrusted peer sends in the field never counts, so
// a client cannot choose the address its limits are counted under.
#include "core/cidr.h"
#include "http/request_head.h"

#include <span>
#include <string_view>

namespace portico::routing {

// A view into peer or into req's fields.
std::string_view real_client(std::string_view peer, const http::RequestHead& req,
                             std::span<const core::Cidr> trusted);

} // namespace portico::routing
