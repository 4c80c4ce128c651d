// The whole proxy fuzzed wire to wire (issue 29, item 1): a real worker (its router, filter
// chain, clusters and pools, client connections and sessions) inside this process, a client
// on one end of a socketpair, and a scripted upstream on a unix socket the cluster connects
// to. The input is a script (proxy_wire_script.h): client bytes, upstream bytes, half-closes,
// closes and clock steps, in any order. The loop runs on a fake clock, so a timer fires when
// the script says and never because the machine was slow.
//
// Checked after every input, not only "no crash": every exchange ends, every connection and
// descriptor is given back, no connection's buffers pass their budget, and what reaches an
// HTTP/1.1 upstream parses as requests (an h1 request never carries bytes of another).
#include "proxy_wire_harness.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  portico::fuzz::WireHarness::run_one(data, size);
  return 0;
}
