#pragma once
// Expiration-time holders (paper 003 §4.1): the slot through which an operator that cannot fix a
// result's end time (row windows, aggregates) fixes it later. Batches carry holder *ids*, never a
// heap object per tuple: the holders live in an engine-owned table indexed by id and are recycled,
// which is what keeps 10,000,000-row windows from drowning in holder garbage (LIFETIMES.md).
//
// This file defines the id type that the batch format carries; the table, the observers and the
// undetermined/determined sets come with the lifetime operators.
#include <cstdint>
#include <limits>

namespace cq {

using HolderId = uint32_t;
inline constexpr HolderId kNoHolder = std::numeric_limits<HolderId>::max();

}  // namespace cq
