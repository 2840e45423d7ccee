#include "tests/integration/cluster_history.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

namespace rpma::testing {
namespace {

uint64_t SplitMix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

}  // namespace

std::vector<std::byte> Block(uint64_t slot, uint64_t version, uint64_t seed) {
    std::vector<std::byte> block(kBlock);
    const uint64_t header[] = {slot, version, seed};
    std::memcpy(block.data(), header, sizeof(header));
    uint64_t state = SplitMix(slot ^ SplitMix(version ^ SplitMix(seed)));
    for (size_t k = sizeof(header); k + 8 <= kBlock; k += 8) {
        state = SplitMix(state);
        std::memcpy(block.data() + k, &state, 8);
    }
    return block;
}

std::optional<uint64_t> VersionIn(std::span<const std::byte> block, uint64_t slot, uint64_t seed) {
    if (std::all_of(block.begin(), block.end(), [](std::byte b) { return b == std::byte{0}; }))
        return 0;
    if (block.size() != kBlock)
        return std::nullopt;
    uint64_t header[3];
    std::memcpy(header, block.data(), sizeof(header));
    if (header[0] != slot || header[2] != seed || header[1] == 0)
        return std::nullopt;
    const auto expected = Block(slot, header[1], seed);
    if (!std::equal(block.begin(), block.end(), expected.begin()))
        return std::nullopt;
    return header[1];
}

bool ParseHistory(const std::string &log, std::vector<Op> *history, std::string *error) {
    std::istringstream lines(log);
    std::string line;
    for (size_t n = 1; std::getline(lines, line); ++n) {
        std::istringstream words(line);
        std::string verb, kind, seen;
        words >> verb >> kind;
        Op op{};
        if (verb == "invoke" && kind == "w")
            op.kind = Op::kInvokeWrite;
        else if (verb == "ack" && kind == "w")
            op.kind = Op::kAckWrite;
        else if (verb == "invoke" && kind == "r")
            op.kind = Op::kInvokeRead;
        else if (verb == "read" && kind == "r")
            op.kind = Op::kRead;
        else
            continue;  // a note
        bool parsed = static_cast<bool>(words >> op.slot);
        if (op.kind == Op::kRead) {
            parsed = parsed && static_cast<bool>(words >> seen);
            op.bad = seen == "bad";
            if (!op.bad)
                parsed = parsed && std::istringstream(seen) >> op.version;
        } else if (op.kind != Op::kInvokeRead) {
            parsed = parsed && static_cast<bool>(words >> op.version);
        }
        if (!parsed) {
            *error = "line " + std::to_string(n) + " does not parse: \"" + line + "\"";
            return false;
        }
        history->push_back(op);
    }
    return true;
}

std::string CheckReads(const std::vector<Op> &history) {
    std::map<uint64_t, uint64_t> acked;  // slot: latest version acknowledged so far
    for (size_t i = 0; i < history.size(); ++i) {
        const Op &op = history[i];
        if (op.kind == Op::kAckWrite)
            acked[op.slot] = std::max(acked[op.slot], op.version);
        if (op.kind != Op::kInvokeRead)
            continue;
        // Its answer: the next kRead of that slot.
        const uint64_t floor = acked[op.slot];
        for (size_t j = i + 1; j < history.size(); ++j) {
            const Op &read = history[j];
            if (read.kind != Op::kRead || read.slot != op.slot)
                continue;
            if (read.bad)
                return "op " + std::to_string(j) + ": a read of slot " + std::to_string(op.slot) +
                       " returned bytes no write made";
            if (read.version < floor)
                return "op " + std::to_string(j) + ": a read of slot " + std::to_string(op.slot) +
                       " returned version " + std::to_string(read.version) + ", older than " +
                       std::to_string(floor) + " acknowledged before it was invoked";
            break;
        }
    }
    return "";
}

std::string CheckFinal(const std::vector<Op> &history, size_t slots, uint64_t seed,
                       const std::vector<std::vector<std::byte>> &images) {
    std::map<uint64_t, uint64_t> acked;
    std::map<uint64_t, std::set<uint64_t>> invoked;
    for (const Op &op : history) {
        if (op.kind == Op::kAckWrite)
            acked[op.slot] = std::max(acked[op.slot], op.version);
        if (op.kind == Op::kInvokeWrite)
            invoked[op.slot].insert(op.version);
    }
    if (images.empty())
        return "no in-sync replica to check";
    for (size_t r = 0; r < images.size(); ++r)
        if (images[r].size() < slots * kBlock)
            return "replica " + std::to_string(r) + "'s image is short";
    for (uint64_t slot = 0; slot < slots; ++slot) {
        const std::span<const std::byte> first(images[0].data() + slot * kBlock, kBlock);
        for (size_t r = 1; r < images.size(); ++r)
            if (!std::equal(first.begin(), first.end(), images[r].begin() + slot * kBlock))
                return "slot " + std::to_string(slot) + ": replica " + std::to_string(r) +
                       " holds other bytes than replica 0";
        const auto held = VersionIn(first, slot, seed);
        if (!held)
            return "slot " + std::to_string(slot) + " holds bytes no write made";
        const uint64_t floor = acked[slot];
        const bool possible = *held == floor || (*held > floor && invoked[slot].count(*held));
        if (!possible)
            return "slot " + std::to_string(slot) + " holds version " + std::to_string(*held) +
                   ", but the latest acknowledged is " + std::to_string(floor);
    }
    return "";
}

}  // namespace rpma::testing
