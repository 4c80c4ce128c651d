#pragma once
// A response as the cache keeps it: its head (fields copied into one string, with what reuse
// depends on read once) and its body, which the versions of the head share (a 304 makes a
// new head, never a new body) and which requests collapsed onto its fill read as it grows.
#include "cache/freshness.h"
#include "http/header.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace portico::cache {

// Hears a body it reads grow, complete or fail (a request collapsed onto a fill).
class BodyWatcher {
public:
  virtual void on_body_grew() = 0;

protected:
  ~BodyWatcher() = default;
};

// A body, in a string while it arrives. Once complete, one of kFileAtLeast bytes or more moves
// to an anonymous memory file (memfd), mapped for reading: the kernel can then send a hit
// with sendfile(2) on cleartext HTTP/1.1, as nginx sends its cache files, with no copy
// through the process.
struct StoredBody {
  static constexpr size_t kFileAtLeast = 16 * 1024;

  StoredBody() = default;
  StoredBody(const StoredBody&) = delete;
  StoredBody& operator=(const StoredBody&) = delete;
  ~StoredBody();

  std::string bytes; // while it arrives, and after if it stays small
  bool complete = false;
  bool failed = false; // its fill was given up: readers stop where they are
  std::vector<BodyWatcher*> watchers;

  void append(std::string_view data);
  void finish(bool ok);
  void watch(BodyWatcher* w) { watchers.push_back(w); }
  void unwatch(BodyWatcher* w);
  // The bytes so far (the mapping once it has moved there).
  std::string_view data() const { return map_ ? std::string_view(map_, size_) : bytes; }
  size_t size() const { return map_ ? size_ : bytes.size(); }
  // The file holding it, or -1 (small, or not complete), and where in it the body starts.
  int fd() const { return fd_; }
  int64_t file_offset() const { return offset_; }
  // A complete body of size bytes at offset in the file fd (a disk store's), which it keeps
  // open while the process may hold more files (else it keeps only the mapping). False, fd
  // closed, when it cannot be mapped.
  bool adopt_file(int fd, int64_t offset, size_t size);

private:
  void tell();
  void move_to_file();
  // Counts fd among the files stored bodies hold: false when there are enough.
  static bool hold_file();
  int fd_ = -1;
  int64_t offset_ = 0;
  const char* map_ = nullptr;
  size_t size_ = 0;
  void* map_base_ = nullptr;
  size_t map_len_ = 0;
};

struct StoredResponse {
  int status = 200;
  std::string text;                 // the fields' names and values
  std::vector<http::Header> fields; // views into text; no Date, Age or hop-by-hop fields
  std::string date;                 // the origin's Date field, or empty
  Freshness fresh;
  bool auth_ok = false; // may answer a request with Authorization (public, s-maxage,
                        // must-revalidate: RFC 9111 3.5)
  std::vector<std::string> vary_names;
  std::string vary_key; // the request's selecting fields (vary.h)
  std::string_view etag, last_modified;
  int64_t length = -1; // the body's length when known (declared, or once complete)
  std::shared_ptr<StoredBody> body;

  // Bytes it holds, as its store counts them.
  size_t cost() const;
};

// Copies fields into r's text and points r's views (fields, etag, last_modified) at it.
void set_stored_fields(StoredResponse& r, std::span<const http::Header> fields);

// A copy of r's head with a new, empty body of its own (for another worker to fill).
std::shared_ptr<StoredResponse> copy_head(const StoredResponse& r);

// Fields a cache never stores: the hop's own, and the proxy-authentication ones (RFC 9111
// 3.1).
bool unstorable_field(std::string_view name);

// A stored response from a response's head: its fields but those never stored and those a
// no-cache="..." or private="..." names (cc), with its Date.
std::shared_ptr<StoredResponse> make_stored(int status, std::span<const http::Header> fields,
                                            const CacheControl& cc, std::string_view date);

// old updated by a 304's (or a HEAD's 200) fields (RFC 9111 3.2, 4.3.4): each field it sends
// replaces that field's lines, but those the body depends on; the same body.
std::shared_ptr<StoredResponse>
updated_by(const StoredResponse& old, std::span<const http::Header> fields, std::string_view date);

} // namespace portico::cache
