#include "time/time.h"

namespace cq {

std::string Duration::ToString() const {
  if (infinite) return "unbounded";
  std::string s;
  if (ticks != 0 || steps == 0) s = std::to_string(ticks);
  if (steps != 0) {
    if (!s.empty()) s += "+";
    s += (steps == 1 ? std::string("ε") : std::to_string(steps) + "ε");
  }
  return s;
}

std::string Time::ToString() const {
  if (IsInfinite()) return "∞";
  if (tick == kMinTick) return "-∞";
  if (step == 0) return std::to_string(tick);
  return std::to_string(tick) + "+" + std::to_string(step) + "ε";
}

}  // namespace cq
