#pragma once
// Per-thread free lists of small chunks in power-of-two size classes (32 B to 4 KiB), for
// objects made and freed once or more per request: nghttp2's streams, frames and header
// buffers (through nghttp2_mem) and the proxy's per-request exchange state. glibc's malloc
// costs several hundred instructions per malloc/free pair on this path; a free-list pop or push
// costs a handful. Chunks are freed on the thread that took them (every user lives on one
// worker loop); each list keeps a bounded number so a burst's peak goes back to malloc.
#include <cstddef>
#include <cstdint>
#include <nghttp2/nghttp2.h>

namespace portico::core {

class SmallAllocator {
public:
  static SmallAllocator& local();

  void* allocate(size_t n);
  void deallocate(void* p);
  void* reallocate(void* p, size_t n);
  // Zeroed memory straight from glibc's calloc (freed through deallocate like the rest), for
  // large objects made once per connection rather than per request.
  void* allocate_zeroed(size_t n);
  static constexpr size_t kZeroedDirect = 2048;

  // nghttp2's allocator hooks bound to the calling thread's allocator.
  static nghttp2_mem* nghttp2_allocator();

  ~SmallAllocator();

  static constexpr size_t kClasses = 8; // 32, 64, ..., 4096
  // Each class keeps at most this many bytes free (16 MiB per thread in all): thousands of
  // concurrent streams each hold several chunks, and a free list shorter than the working
  // set sends every request back to malloc.
  static constexpr size_t kMaxFreeBytesPerClass = 2 << 20;
  static constexpr size_t max_free(size_t c) { return kMaxFreeBytesPerClass / (size_t{32} << c); }
  // Chunks class c holds free now (for tests and diagnostics).
  size_t free_count(size_t c) const { return free_count_[c]; }
  // Gives back to malloc, in each class, the free chunks no allocation reached since the last
  // call (the fewest the list held in between: what a burst left), keeping the ones a steady
  // load cycles through; returns the bytes. Called on a timer of the owning thread's loop.
  size_t trim();
  // Bytes of large objects freed to malloc since the last call.
  size_t take_large_freed() {
    size_t n = large_freed_;
    large_freed_ = 0;
    return n;
  }

private:
  struct Chunk {
    Chunk* next;
  };
  Chunk* free_[kClasses] = {};
  uint32_t free_count_[kClasses] = {};
  uint32_t low_[kClasses] = {}; // the fewest free chunks since the last trim
  size_t large_freed_ = 0;
};

} // namespace portico::core
