#include "util/files.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>

namespace rpma::util {
namespace {

std::string TempPath(const std::string &name) {
    return std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
}

TEST(ReadWholeFile, ReadsEveryByteOfALargeFile) {
    const std::string path = TempPath("large");
    std::string written(200 * 1024, '\0');
    for (size_t i = 0; i < written.size(); ++i)
        written[i] = static_cast<char>(i * 7);
    std::ofstream(path, std::ios::binary) << written;
    int error = 0;
    EXPECT_EQ(ReadWholeFile(path, &error), written);
}

TEST(ReadWholeFile, GivesTheErrnoOfWhatFailed) {
    int error = 0;
    EXPECT_EQ(ReadWholeFile(TempPath("missing"), &error), std::nullopt);
    EXPECT_EQ(error, ENOENT);
    EXPECT_EQ(ReadWholeFile(std::getenv("TEST_TMPDIR"), &error), std::nullopt);
    EXPECT_EQ(error, EISDIR);
}

TEST(TrimmedFirstLine, IsTheFirstLineWithoutBlanks) {
    EXPECT_EQ(TrimmedFirstLine(" \tsecret \r\nsecond\n"), "secret");
    EXPECT_EQ(TrimmedFirstLine("secret"), "secret");
    EXPECT_EQ(TrimmedFirstLine("  \nsecret\n"), "");
    EXPECT_EQ(TrimmedFirstLine(""), "");
}

}  // namespace
}  // namespace rpma::util
