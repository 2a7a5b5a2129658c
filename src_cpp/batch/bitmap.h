#pragma once
// Bit-packed bitmaps in Arrow's layout (LSB first): validity of every column and the values of
// bool columns. Loops run a 64-bit word at a time wherever they can.
#include <cstdint>

namespace cq::bitmap {

inline bool Get(const uint8_t* bits, int64_t i) { return (bits[i >> 3] >> (i & 7)) & 1; }
inline void Set(uint8_t* bits, int64_t i) { bits[i >> 3] |= static_cast<uint8_t>(1u << (i & 7)); }
inline void Clear(uint8_t* bits, int64_t i) { bits[i >> 3] &= static_cast<uint8_t>(~(1u << (i & 7))); }
inline void SetTo(uint8_t* bits, int64_t i, bool v) { v ? Set(bits, i) : Clear(bits, i); }
inline int64_t Bytes(int64_t n) { return (n + 7) / 8; }
inline int64_t Words(int64_t n) { return (n + 63) / 64; }

int64_t CountSet(const uint8_t* bits, int64_t n);
// Copies n bits starting at bit `offset` of src to the start of dst.
void CopyBits(const uint8_t* src, int64_t offset, int64_t n, uint8_t* dst);

}  // namespace cq::bitmap
