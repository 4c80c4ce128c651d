#pragma once
// Per-thread free lists of small chunks in size classes from 32 B to 4 KiB, for
// objects made and freed once or more per request: nghttp2's streams, frames and header
// buffers (through nghttp2_mem) and the proxy's per-request exchange state. glibc's malloc
// costs several hundred instructions per malloc/free pair on this path; a free-list pop or push
// costs a handful. Chunks are freed on the thread that took them (every user lives on one
// worker loop); each list keeps a bounded number so a burst's peak goes back to malloc.
#include <array>
#include <cstddef>
#include <cstdint>
#include <nghttp2/nghttp2.h>

namespace portico::core {

// Classes 16 bytes apart up to 128 bytes, then four to each doubling up to 4 KiB, so that a
// chunk is at most a quarter larger than asked: 32, 48, ..., 128, 160, 192, 224, 256, 320,
// ..., 3584, 4096.
namespace size_class {
inline constexpr size_t kCount = 27;
constexpr size_t size(size_t c) {
  if (c < 7)
    return 32 + 16 * c;
  return (size_t{32} << ((c - 7) / 4)) * (5 + (c - 7) % 4);
}
// Every class size is a multiple of 16: one load finds the class, per 16 bytes of size.
inline constexpr auto kOf = [] {
  std::array<uint8_t, 4096 / 16 + 1> of{};
  for (size_t i = 0, c = 0; i < of.size(); ++i) {
    while (size(c) < i * 16)
      ++c;
    of[i] = static_cast<uint8_t>(c);
  }
  return of;
}();
inline size_t of(size_t n) {
  return n <= 4096 ? kOf[(n + 15) / 16] : kCount;
}
} // namespace size_class

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
  // Bytes before each payload; the payload's alignment (SmallAllocated checks its types').
  static constexpr size_t kHeader = 8;
  static constexpr size_t kAlignment = 8;

  // nghttp2's allocator hooks bound to the calling thread's allocator.
  static nghttp2_mem* nghttp2_allocator();

  ~SmallAllocator();

  static constexpr size_t kClasses = size_class::kCount;
  // The class that holds n bytes (kClasses and up: none, malloc'd as is), and its chunk size.
  static size_t class_of(size_t n) { return size_class::of(n); }
  static constexpr size_t class_size(size_t c) { return size_class::size(c); }
  // Each class keeps at most this many bytes free (27 MiB per thread in all): thousands of
  // concurrent streams each hold several chunks, and a free list shorter than the working
  // set sends every request back to malloc.
  static constexpr size_t kMaxFreeBytesPerClass = 1 << 20;
  static constexpr size_t max_free(size_t c) { return kMaxFree[c]; }
  // Chunks class c holds free now (for tests and diagnostics).
  size_t free_count(size_t c) const { return free_count_[c]; }
  // Gives back to malloc, in each class, the free chunks no allocation reached since the last
  // call (the fewest the list held in between: what a burst left), keeping the ones a steady
  // load cycles through; returns the bytes. Called on a timer of the owning thread's loop.
  size_t trim();
  // Large objects freed to malloc by others (OpenSSL's record buffers), so that the trimmer
  // counts them too.
  void note_large_freed(size_t n) { large_freed_ += n; }
  // Bytes of large objects freed to malloc since the last call.
  size_t take_large_freed() {
    size_t n = large_freed_;
    large_freed_ = 0;
    return n;
  }

private:
  // Looked up on every free: a division there cost more than the rest of the free.
  static constexpr auto kMaxFree = [] {
    std::array<uint32_t, size_class::kCount> m{};
    for (size_t c = 0; c < kClasses; ++c)
      m[c] = static_cast<uint32_t>(kMaxFreeBytesPerClass / size_class::size(c));
    return m;
  }();
  struct Chunk {
    Chunk* next;
  };
  Chunk* free_[kClasses] = {};
  uint32_t free_count_[kClasses] = {};
  uint32_t low_[kClasses] = {}; // the fewest free chunks since the last trim
  size_t large_freed_ = 0;
};

// A type made and freed per request takes its operator new and delete from the thread's
// allocator by deriving from this: class T : ..., public core::SmallAllocated<T>.
template <class T> struct SmallAllocated {
  static void* operator new(size_t n) {
    static_assert(alignof(T) <= SmallAllocator::kAlignment, "payloads are only 8-aligned");
    return SmallAllocator::local().allocate(n);
  }
  static void operator delete(void* p) { SmallAllocator::local().deallocate(p); }
};

} // namespace portico::core
