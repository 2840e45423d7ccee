// The records the power-cut harness writes into a region: fixed-size slots,
// record `seq` at offset seq * kRecordSize, each carrying its sequence
// number, the cycle that wrote it and a CRC-32C, so that after a cut a slot
// is recognised as intact, empty, damaged (torn or stale) or another record.
#ifndef TESTS_POWERCUT_RECORD_H
#define TESTS_POWERCUT_RECORD_H

#include <cstddef>
#include <cstdint>
#include <span>

namespace powercut {

inline constexpr size_t kRecordSize = 256;

// Writes record `seq` of `cycle` into `out` (kRecordSize bytes): a magic,
// the CRC-32C of everything after it, seq, cycle and a payload derived from
// both (so a record copied to another slot does not pass).
void EncodeRecord(uint64_t seq, uint32_t cycle, std::span<std::byte, kRecordSize> out);

enum class SlotState {
    kIntact,   // exactly record seq of cycle
    kEmpty,    // all zero: never written, or the write was lost
    kDamaged,  // neither: torn, overwritten or corrupt
};

SlotState CheckRecord(std::span<const std::byte, kRecordSize> slot, uint64_t seq, uint32_t cycle);

const char *SlotStateName(SlotState state);

}  // namespace powercut

#endif  // TESTS_POWERCUT_RECORD_H
