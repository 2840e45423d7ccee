// BufferTable: which registered buffer a write or read may use directly.
#include "buffer_table.h"

#include <gtest/gtest.h>

#include <array>

namespace rpma::client {
namespace {

TEST(BufferTable, FindsTheBufferThatHoldsARangeWhole) {
    std::array<std::byte, 4096> a{}, b{};
    BufferTable table;
    const size_t first = table.NewId(), second = table.NewId();
    EXPECT_EQ(first, 1u);  // 0 is the staging ring's
    EXPECT_NE(first, second);
    table.Add(a, first);
    table.Add(b, second);
    ASSERT_NE(table.Find(a.data() + 100, 200), nullptr);
    EXPECT_EQ(table.Find(a.data() + 100, 200)->id, first);
    EXPECT_EQ(table.Find(b.data(), b.size())->id, second);
    // Past its end, or before its start: not held whole.
    EXPECT_EQ(table.Find(a.data() + 4000, 200), nullptr);
    EXPECT_EQ(table.Find(a.data() - 1, 10), nullptr);
}

TEST(BufferTable, OverlapsAnyRegisteredByte) {
    std::array<std::byte, 8192> memory{};
    BufferTable table;
    table.Add(std::span(memory).subspan(4096, 1024), table.NewId());
    EXPECT_TRUE(table.Overlaps(std::span(memory).subspan(5119, 1)));
    EXPECT_TRUE(table.Overlaps(std::span(memory).subspan(0, 4097)));
    EXPECT_FALSE(table.Overlaps(std::span(memory).subspan(0, 4096)));
    EXPECT_FALSE(table.Overlaps(std::span(memory).subspan(5120, 100)));
}

TEST(BufferTable, UnregistersOnlyTheExactBufferAndKeepsLastSeq) {
    std::array<std::byte, 4096> a{}, b{};
    BufferTable table;
    table.Add(a, table.NewId());
    table.Add(b, table.NewId());
    table.Find(b.data(), 16)->last_seq = 42;
    EXPECT_EQ(table.Exact(std::span(a).subspan(0, 100)), nullptr);
    const BufferTable::Buffer *exact = table.Exact(b);
    ASSERT_NE(exact, nullptr);
    EXPECT_EQ(exact->last_seq, 42u);
    table.Remove(table.Exact(a));
    EXPECT_EQ(table.Find(a.data(), 1), nullptr);
    EXPECT_EQ(table.Find(b.data(), 1)->last_seq, 42u);
    size_t left = 0;
    for (const BufferTable::Buffer &buffer : table)
        left += buffer.bytes.data() == b.data();
    EXPECT_EQ(left, 1u);
}

}  // namespace
}  // namespace rpma::client
