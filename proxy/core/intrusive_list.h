#pragma once
// A doubly linked list threaded through its elements (a ListHook member of each), for the
// request path's lists: a session's open streams, a pool's idle connections and waiting
// requests, a connection's streams. No allocation, O(1) insert and erase, and an element
// knows whether it is in the list. An element is in at most one list per hook.
#include <cstddef>

namespace portico::core {

template <typename T> struct ListHook {
  T* prev = nullptr;
  T* next = nullptr;
};

template <typename T, ListHook<T> T::*Hook> class IntrusiveList {
public:
  IntrusiveList() = default;
  IntrusiveList(const IntrusiveList&) = delete;
  IntrusiveList& operator=(const IntrusiveList&) = delete;

  T* front() const { return head_; }
  T* back() const { return tail_; }
  bool empty() const { return head_ == nullptr; }
  size_t size() const { return size_; }
  // The element after x, or null.
  static T* next(const T* x) { return (x->*Hook).next; }
  bool contains(const T* x) const { return (x->*Hook).prev || head_ == x; }

  void push_front(T* x) {
    auto& h = x->*Hook;
    h.prev = nullptr;
    h.next = head_;
    if (head_)
      (head_->*Hook).prev = x;
    else
      tail_ = x;
    head_ = x;
    ++size_;
  }
  void push_back(T* x) {
    auto& h = x->*Hook;
    h.next = nullptr;
    h.prev = tail_;
    if (tail_)
      (tail_->*Hook).next = x;
    else
      head_ = x;
    tail_ = x;
    ++size_;
  }
  // Takes x out; false (and nothing done) when x is not in the list.
  bool erase(T* x) {
    if (!contains(x))
      return false;
    auto& h = x->*Hook;
    if (h.prev)
      (h.prev->*Hook).next = h.next;
    else
      head_ = h.next;
    if (h.next)
      (h.next->*Hook).prev = h.prev;
    else
      tail_ = h.prev;
    h.prev = h.next = nullptr;
    --size_;
    return true;
  }
  T* pop_front() {
    T* x = head_;
    if (x)
      erase(x);
    return x;
  }

private:
  T* head_ = nullptr;
  T* tail_ = nullptr;
  size_t size_ = 0;
};

} // namespace portico::core
