#include "http/arena.h"

#include <cstring>

namespace portico::http {

char* Arena::allocate(size_t n) {
  if (n > core::kBlockSize / 2) {
    char* p = new char[n];
    large_.push_back(p);
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

std::string_view Arena::append(std::string_view last, std::string_view more) {
  if (last.empty())
    return copy(more);
  if (head_ && last.data() + last.size() == head_->data + head_->end &&
      head_->writable() >= more.size()) {
    std::memcpy(head_->data + head_->end, more.data(), more.size());
    head_->end += static_cast<uint32_t>(more.size());
    return {last.data(), last.size() + more.size()};
  }
  char* p = allocate(last.size() + more.size());
  std::memcpy(p, last.data(), last.size());
  std::memcpy(p + last.size(), more.data(), more.size());
  return {p, last.size() + more.size()};
}

void Arena::reset() {
  for (char* p : large_)
    delete[] p;
  large_.clear();
  if (!head_)
    return;
  core::Block* keep = head_;
  core::Block* b = head_->next;
  while (b) {
    core::Block* n = b->next;
    core::BlockPool::local().put(b);
    b = n;
  }
  keep->next = nullptr;
  keep->begin = keep->end = 0;
  head_ = keep;
}

void Arena::release() {
  reset();
  if (head_)
    core::BlockPool::local().put(head_);
  head_ = nullptr;
}

} // namespace portico::http
