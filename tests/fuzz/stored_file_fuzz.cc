// What a disk cache reads back from its directory (cache/stored_file.h): a file may be cut
// short, damaged or of another version. Never a crash; a head that reads is the one its
// response writes again, byte for byte (the format has one spelling per response).
#include "cache/stored_file.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

using namespace portico;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  uint64_t head_size = 0, body_size = 0;
  if (!cache::decode_file_prefix(in, head_size, body_size))
    return 0;
  std::string_view head = in.substr(cache::kFilePrefix);
  if (head.size() < head_size)
    return 0;
  head = head.substr(0, head_size);
  std::string key;
  cache::StoredResponse r;
  std::vector<http::Header> fields;
  if (!cache::decode_file_head(head, key, r, fields))
    return 0;
  r.fields = fields; // views into the input, which outlives them here
  std::string again;
  cache::encode_file_head(key, r, body_size, again);
  if (again != in.substr(0, cache::kFilePrefix + head_size))
    std::abort();
  return 0;
}
