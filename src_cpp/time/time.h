#pragma once
// Logical time (SEMANTICS.md §2): a tick of the engine's time unit plus an ε-step inside the tick,
// ordered lexicographically. Inputs sit at step 0; [Now] and the delay <Now> add one step.
// Operators never do bare int64 arithmetic on logical time: they go through Time and Duration so
// that steps, infinity and overflow are handled in one place.
#include <compare>
#include <cstdint>
#include <limits>
#include <string>

namespace cq {

struct Duration {
  int64_t ticks = 0;
  int64_t steps = 0;
  bool infinite = false;

  static constexpr Duration Ticks(int64_t t) { return {t, 0, false}; }
  static constexpr Duration Epsilon() { return {0, 1, false}; }
  static constexpr Duration Infinite() { return {0, 0, true}; }
  constexpr bool IsZero() const { return !infinite && ticks == 0 && steps == 0; }
  friend constexpr bool operator==(const Duration&, const Duration&) = default;
  std::string ToString() const;
};

struct Time {
  int64_t tick = 0;
  int64_t step = 0;

  static constexpr int64_t kInfTick = std::numeric_limits<int64_t>::max();
  static constexpr int64_t kMinTick = std::numeric_limits<int64_t>::min();
  static constexpr Time Infinity() { return {kInfTick, 0}; }
  static constexpr Time MinusInfinity() { return {kMinTick, 0}; }
  constexpr bool IsInfinite() const { return tick == kInfTick; }

  // t + d, saturating at Infinity: a lifetime that would end past the representable range never
  // ends, which is what the user means by a very long window.
  constexpr Time operator+(const Duration& d) const {
    if (d.infinite || IsInfinite()) return Infinity();
    int64_t t;
    if (__builtin_add_overflow(tick, d.ticks, &t) || t == kInfTick) return Infinity();
    // A tick shift starts a new instant family: the step carries over so that <d> keeps the order
    // of ε-steps inside the tick, as paper 000 requires for delays inside loops.
    return {t, step + d.steps};
  }

  friend constexpr auto operator<=>(const Time&, const Time&) = default;
  // Spelled out: GCC does not always inline the comparisons it derives from <=>, and these sit on
  // every hot path of the engine.
  friend constexpr bool operator==(const Time& a, const Time& b) { return a.tick == b.tick && a.step == b.step; }
  friend constexpr bool operator!=(const Time& a, const Time& b) { return !(a == b); }
  friend constexpr bool operator<(const Time& a, const Time& b) {
    return a.tick < b.tick || (a.tick == b.tick && a.step < b.step);
  }
  friend constexpr bool operator>(const Time& a, const Time& b) { return b < a; }
  friend constexpr bool operator<=(const Time& a, const Time& b) { return !(b < a); }
  friend constexpr bool operator>=(const Time& a, const Time& b) { return !(a < b); }
  std::string ToString() const;
};

// ⌈t / s⌉·s on (tick, ε-step) time: the first slide boundary at or after t, boundaries being the
// multiples of s at step 0 ([Range T Slide S], SEMANTICS.md §4.1) — so a tuple at (15, 1ε) is after
// the boundary 15, and with s = 3 its boundary is 18. Infinity when it lies beyond the
// representable range (a window that would end there never ends).
constexpr Time CeilToBoundary(Time t, int64_t s) {
  if (t.IsInfinite()) return Time::Infinity();
  int64_t x = t.tick;
  if (t.step > 0 && __builtin_add_overflow(x, 1, &x)) return Time::Infinity();
  int64_t q = x / s;
  if (q * s < x) ++q;  // division truncates toward zero
  int64_t r;
  if (__builtin_mul_overflow(q, s, &r) || r == Time::kInfTick) return Time::Infinity();
  return {r, 0};
}

}  // namespace cq
