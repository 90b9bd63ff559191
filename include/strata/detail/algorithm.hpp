#pragma once
/// @file detail/algorithm.hpp
/// @brief The few algorithms the umbrella header needs (min, max, a binary heap, heap sort,
/// lower bound), written out so that it does not include <algorithm>.
///
/// In C++20 libstdc++'s <algorithm> brings the constrained range algorithms with it: 17 MB of
/// GCC's memory in every translation unit that includes strata, against 90 MB for the whole
/// umbrella header without it (`docs/benchmarks.md`, compile time). Headers outside the umbrella
/// (the simulators, the readers) use <algorithm> freely.

#include <cstddef>
#include <utility>

namespace strata::detail {

/// The smaller of `a` and `b`; `a` when they are equal (as `std::min`).
template <class T>
[[nodiscard]] constexpr T min(T a, T b) {
  return b < a ? b : a;
}
/// The larger of `a` and `b`; `a` when they are equal (as `std::max`).
template <class T>
[[nodiscard]] constexpr T max(T a, T b) {
  return a < b ? b : a;
}

// A binary heap on a random-access range whose top (`first[0]`) is an element that no other
// ranks after under the strict weak order `before`: the same contract as std::push_heap and
// friends with `before` as the comparison.

/// Moves `first[i]` down the heap `[first, first + n)` until neither child ranks after it.
template <class It, class Before>
constexpr void sift_down(It first, std::ptrdiff_t i, std::ptrdiff_t n, Before& before) {
  for (std::ptrdiff_t c = 2 * i + 1; c < n; i = c, c = 2 * i + 1) {
    if (c + 1 < n && before(first[c], first[c + 1])) ++c;
    if (!before(first[i], first[c])) return;
    using std::swap;
    swap(first[i], first[c]);
  }
}

/// Adds `last[-1]` to the heap `[first, last - 1)`.
template <class It, class Before>
constexpr void push_heap(It first, It last, Before before) {
  for (std::ptrdiff_t i = last - first - 1; i > 0;) {
    const std::ptrdiff_t parent = (i - 1) / 2;
    if (!before(first[parent], first[i])) return;
    using std::swap;
    swap(first[parent], first[i]);
    i = parent;
  }
}

/// Moves the top of the heap `[first, last)` to `last[-1]`; `[first, last - 1)` stays a heap.
template <class It, class Before>
constexpr void pop_heap(It first, It last, Before before) {
  const std::ptrdiff_t n = last - first;
  if (n < 2) return;
  using std::swap;
  swap(first[0], first[n - 1]);
  detail::sift_down(first, 0, n - 1, before);
}

/// Sorts the heap `[first, last)` so that `before` holds between neighbours.
template <class It, class Before>
constexpr void sort_heap(It first, It last, Before before) {
  for (; last - first > 1; --last) detail::pop_heap(first, last, before);
}

/// Sorts `[first, last)` by `before` (heap sort: O(n log n), not stable).
template <class It, class Before>
constexpr void sort(It first, It last, Before before) {
  const std::ptrdiff_t n = last - first;
  for (std::ptrdiff_t i = n / 2 - 1; i >= 0; --i) detail::sift_down(first, i, n, before);
  detail::sort_heap(first, last, before);
}

/// The first element of the sorted range `[first, last)` for which `before(element, value)` is
/// false (as `std::lower_bound`).
template <class It, class T, class Before>
[[nodiscard]] constexpr It lower_bound(It first, It last, const T& value, Before before) {
  for (std::ptrdiff_t n = last - first; n > 0;) {
    const std::ptrdiff_t half = n / 2;
    if (before(first[half], value)) {
      first += half + 1;
      n -= half + 1;
    } else {
      n = half;
    }
  }
  return first;
}

}  // namespace strata::detail
