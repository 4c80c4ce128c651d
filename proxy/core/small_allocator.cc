#include "core/small_allocator.h"

#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <nghttp2/nghttp2.h>

namespace portico::core {

namespace {

// Every chunk is preceded by one 8-byte word: its class in the first byte while it is in use
// (kLarge: malloc'd as is), so that free() needs no size; the free-list link while it is free.
// glibc's own 8-byte header beside it makes malloc(8 + class) a chunk of exactly class + 16
// bytes, where a 16-byte header had cost class + 32 (glibc rounds to 16 after adding its 8).
// The payload is 8-aligned, as every user's type needs (static_asserts where they are made).
constexpr size_t kHeader = SmallAllocator::kHeader;
constexpr size_t kLarge = SmallAllocator::kClasses;
constexpr size_t kClassByte = 0;

unsigned char* header_of(void* p) {
  return static_cast<unsigned char*>(p) - kHeader;
}

void* nghttp2_malloc(size_t n, void*) {
  return SmallAllocator::local().allocate(n);
}
void nghttp2_free(void* p, void*) {
  SmallAllocator::local().deallocate(p);
}
void* nghttp2_calloc(size_t count, size_t n, void*) {
  size_t total = count * n;
  if (n && total / n != count)
    return nullptr;
  // A session's own tables (its 2.9 KiB struct, a 4 KiB stream map) are made once per
  // connection: glibc's calloc leaves fresh memory untouched, so an idle connection's RSS
  // holds only the pages nghttp2 writes, not every page a class chunk's memset would touch.
  if (total >= SmallAllocator::kZeroedDirect)
    return SmallAllocator::local().allocate_zeroed(total);
  void* p = SmallAllocator::local().allocate(total);
  if (p)
    std::memset(p, 0, total);
  return p;
}
void* nghttp2_realloc(void* p, size_t n, void*) {
  return SmallAllocator::local().reallocate(p, n);
}

} // namespace

SmallAllocator& SmallAllocator::local() {
  thread_local SmallAllocator allocator;
  return allocator;
}

void* SmallAllocator::allocate(size_t n) {
  size_t c = class_of(n);
  unsigned char* h;
  if (c >= kClasses) {
    h = static_cast<unsigned char*>(std::malloc(kHeader + n));
    if (!h)
      return nullptr;
    h[kClassByte] = static_cast<unsigned char>(kLarge);
  } else if (Chunk* k = free_[c]) {
    free_[c] = k->next;
    // The next pop reads that chunk's link, which the requests in between have pushed out
    // of the cache: fetched now, it is there by then.
    __builtin_prefetch(k->next, 1);
    if (--free_count_[c] < low_[c])
      low_[c] = free_count_[c];
    h = reinterpret_cast<unsigned char*>(k);
    h[kClassByte] = static_cast<unsigned char>(c); // over the link
  } else {
    h = static_cast<unsigned char*>(std::malloc(kHeader + class_size(c)));
    if (!h)
      return nullptr;
    h[kClassByte] = static_cast<unsigned char>(c);
  }
  return h + kHeader;
}

void* SmallAllocator::allocate_zeroed(size_t n) {
  auto* h = static_cast<unsigned char*>(std::calloc(1, kHeader + n));
  if (!h)
    return nullptr;
  h[kClassByte] = static_cast<unsigned char>(kLarge);
  return h + kHeader;
}

void SmallAllocator::deallocate(void* p) {
  if (!p)
    return;
  unsigned char* h = header_of(p);
  size_t c = h[kClassByte];
  if (c >= kClasses || free_count_[c] >= max_free(c)) {
    if (c >= kClasses)
      large_freed_ += ::malloc_usable_size(h);
    std::free(h);
    return;
  }
  auto* k = reinterpret_cast<Chunk*>(h);
  static_assert(sizeof(Chunk) <= kHeader);
  k->next = free_[c];
  free_[c] = k;
  ++free_count_[c];
}

void* SmallAllocator::reallocate(void* p, size_t n) {
  if (!p)
    return allocate(n);
  size_t c = header_of(p)[kClassByte];
  size_t have = c >= kClasses ? 0 : class_size(c);
  if (n <= have)
    return p;
  if (c >= kClasses) {
    auto* h = static_cast<unsigned char*>(std::realloc(header_of(p), kHeader + n));
    return h ? h + kHeader : nullptr;
  }
  void* q = allocate(n);
  if (q) {
    std::memcpy(q, p, have);
    deallocate(p);
  }
  return q;
}

nghttp2_mem* SmallAllocator::nghttp2_allocator() {
  static nghttp2_mem mem = {nullptr, nghttp2_malloc, nghttp2_free, nghttp2_calloc, nghttp2_realloc};
  return &mem;
}

size_t SmallAllocator::trim() {
  size_t bytes = 0;
  for (size_t c = 0; c < kClasses; ++c) {
    // The list is most recently freed first: keep its warm head, free its cold tail.
    size_t keep = free_count_[c] - low_[c];
    Chunk** tail = &free_[c];
    for (size_t i = 0; i < keep; ++i)
      tail = &(*tail)->next;
    for (Chunk* k = *tail; k;) {
      Chunk* next = k->next;
      std::free(k);
      k = next;
    }
    *tail = nullptr;
    bytes += low_[c] * (kHeader + class_size(c));
    free_count_[c] = static_cast<uint32_t>(keep);
    low_[c] = free_count_[c];
  }
  return bytes;
}

SmallAllocator::~SmallAllocator() {
  for (Chunk*& head : free_)
    while (Chunk* k = head) {
      head = k->next;
      std::free(k);
    }
}

} // namespace portico::core
