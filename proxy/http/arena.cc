#include "http/arena.h"

#include "core/small_allocator.h"

#include <cstring>

namespace portico::http {

char* Arena::allocate_large(size_t n, size_t capacity) {
  char* p = new char[capacity];
  large_.push_back({p, n, capacity});
  return p;
}

char* Arena::take_spare(size_t n) {
  if (room_ != inline_ || n > kSpare)
    return nullptr;
  auto* spare = static_cast<char*>(core::SmallAllocator::local().allocate(kSpare));
  if (!spare)
    return nullptr;
  room_ = spare;
  room_capacity_ = kSpare;
  room_used_ = static_cast<uint32_t>(n);
  return spare;
}

char* Arena::allocate(size_t n) {
  if (n > core::kBlockSize / 2)
    return allocate_large(n, n);
  if (!head_) {
    if (room_used_ + n <= room_capacity_) {
      char* p = room_ + room_used_;
      room_used_ += static_cast<uint32_t>(n);
      return p;
    }
    if (char* p = take_spare(n))
      return p;
  }
  if (!head_ || head_->writable() < n) {
    core::Block* b = core::BlockPool::local().get();
    b->next = head_;
    head_ = b;
  }
  char* p = head_->data + head_->end;
  head_->end += static_cast<uint32_t>(n);
  return p;
}

std::string_view Arena::copy(std::string_view s) {
  if (s.empty())
    return {};
  char* p = allocate(s.size());
  std::memcpy(p, s.data(), s.size());
  return {p, s.size()};
}

std::string_view Arena::join(std::initializer_list<std::string_view> parts) {
  size_t n = 0;
  for (auto p : parts)
    n += p.size();
  char* out = allocate(n);
  size_t at = 0;
  for (auto p : parts) {
    if (p.empty())
      continue; // an empty view's data may be null, which memcpy must not be given
    std::memcpy(out + at, p.data(), p.size());
    at += p.size();
  }
  return {out, n};
}

std::string_view Arena::append(std::string_view last, std::string_view more) {
  if (last.empty())
    return copy(more);
  size_t n = last.size() + more.size();
  if (!head_ && last.data() + last.size() == room_ + room_used_ &&
      room_used_ + more.size() <= room_capacity_) {
    std::memcpy(room_ + room_used_, more.data(), more.size());
    room_used_ += static_cast<uint32_t>(more.size());
    return {last.data(), n};
  }
  if (head_ && last.data() + last.size() == head_->data + head_->end &&
      head_->writable() >= more.size()) {
    std::memcpy(head_->data + head_->end, more.data(), more.size());
    head_->end += static_cast<uint32_t>(more.size());
    return {last.data(), n};
  }
  if (!large_.empty()) {
    Large& l = large_.back();
    if (last.data() + last.size() == l.data + l.used && l.capacity - l.used >= more.size()) {
      std::memcpy(l.data + l.used, more.data(), more.size());
      l.used += more.size();
      return {last.data(), n};
    }
  }
  char* p = n > core::kBlockSize / 2 ? allocate_large(n, 2 * n) : allocate(n);
  std::memcpy(p, last.data(), last.size());
  std::memcpy(p + last.size(), more.data(), more.size());
  return {p, n};
}

void Arena::reset() {
  for (const Large& l : large_)
    delete[] l.data;
  large_.clear();
  while (core::Block* b = head_) {
    head_ = b->next;
    core::BlockPool::local().put(b);
  }
  if (room_ != inline_)
    core::SmallAllocator::local().deallocate(room_); // the spare chunk
  room_ = inline_;
  room_capacity_ = inline_capacity_;
  room_used_ = 0;
}

} // namespace portico::http
