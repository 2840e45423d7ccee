#include "tests/powercut/record.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "daemon/crc32c.h"

namespace powercut {
namespace {

constexpr uint32_t kMagic = 0x31524350;  // "PCR1"
constexpr size_t kCrcOffset = 4;
constexpr size_t kCovered = 8;  // the CRC covers [kCovered, kRecordSize)

uint32_t Crc(std::span<const std::byte, kRecordSize> record) {
    return rpmad::Crc32c(std::string_view(reinterpret_cast<const char *>(record.data()) + kCovered,
                                          kRecordSize - kCovered));
}

}  // namespace

void EncodeRecord(uint64_t seq, uint32_t cycle, std::span<std::byte, kRecordSize> out) {
    std::fill(out.begin(), out.end(), std::byte{0});
    std::memcpy(out.data(), &kMagic, sizeof(kMagic));
    std::memcpy(out.data() + 8, &seq, sizeof(seq));
    std::memcpy(out.data() + 16, &cycle, sizeof(cycle));
    // splitmix64 over (seq, cycle): every record's payload differs.
    uint64_t state = seq * 0x9E3779B97F4A7C15ull ^ (uint64_t{cycle} << 32);
    for (size_t i = 24; i < kRecordSize; i += sizeof(uint64_t)) {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        std::memcpy(out.data() + i, &z, sizeof(z));
    }
    uint32_t crc = Crc(out);
    std::memcpy(out.data() + kCrcOffset, &crc, sizeof(crc));
}

SlotState CheckRecord(std::span<const std::byte, kRecordSize> slot, uint64_t seq, uint32_t cycle) {
    if (std::all_of(slot.begin(), slot.end(), [](std::byte b) { return b == std::byte{0}; }))
        return SlotState::kEmpty;
    std::byte expected[kRecordSize];
    EncodeRecord(seq, cycle, expected);
    // The CRC first: a torn record fails it even where its payload would
    // happen to match.
    uint32_t stored;
    std::memcpy(&stored, slot.data() + kCrcOffset, sizeof(stored));
    if (stored != Crc(slot) || std::memcmp(slot.data(), expected, kRecordSize) != 0)
        return SlotState::kDamaged;
    return SlotState::kIntact;
}

const char *SlotStateName(SlotState state) {
    switch (state) {
        case SlotState::kIntact:
            return "intact";
        case SlotState::kEmpty:
            return "empty";
        case SlotState::kDamaged:
            return "damaged";
    }
    return "?";
}

}  // namespace powercut
