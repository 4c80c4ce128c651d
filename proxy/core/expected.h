#pragma once
// core::expected is std::expected wherever the standard library has it (g++ 12, C++23: the
// product and its tests). Debian 12's clang (14, and 16 too) declares nothing in libstdc++ 12's
// <expected>, which asks for __cpp_concepts >= 202002L; the fuzz targets are built with that
// clang, so there a minimal stand-in with the same spelling serves what Portico uses: a value
// or an error, has_value / operator bool, *, ->, value_or, error().
#include <expected>

#if defined(__cpp_lib_expected)

namespace portico::core {
using std::expected;
using std::unexpected;
} // namespace portico::core

#else

#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

namespace portico::core {

template <typename E> class unexpected {
public:
  explicit unexpected(E e) : e_(std::move(e)) {}
  E& error() & { return e_; }
  E&& error() && { return std::move(e_); }

private:
  E e_;
};
template <typename E> unexpected(E) -> unexpected<E>;

template <typename T, typename E> class expected {
public:
  template <typename U = T, typename = std::enable_if_t<std::is_convertible_v<U&&, T>>>
  expected(U&& v) : v_(std::in_place_index<0>, std::forward<U>(v)) {}
  template <typename G>
  expected(unexpected<G> u) : v_(std::in_place_index<1>, std::move(u).error()) {}

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& operator*() & { return std::get<0>(v_); }
  const T& operator*() const& { return std::get<0>(v_); }
  T&& operator*() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  template <typename U> T value_or(U&& d) const& {
    return has_value() ? std::get<0>(v_) : static_cast<T>(std::forward<U>(d));
  }
  E& error() & { return std::get<1>(v_); }
  const E& error() const& { return std::get<1>(v_); }

private:
  std::variant<T, E> v_;
};

// expected<void, E>: success carries nothing, an error its E (a probe, a bind).
template <typename E> class expected<void, E> {
public:
  expected() = default;
  template <typename G> expected(unexpected<G> u) : e_(std::move(u).error()) {}

  bool has_value() const { return !e_.has_value(); }
  explicit operator bool() const { return has_value(); }
  void operator*() const {}
  E& error() & { return *e_; }
  const E& error() const& { return *e_; }

private:
  std::optional<E> e_;
};

} // namespace portico::core

#endif
