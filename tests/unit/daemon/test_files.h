// Files for rpmad's unit tests: a fresh directory per test in TEST_TMPDIR,
// and whole files read and written.
#ifndef TESTS_UNIT_DAEMON_TEST_FILES_H
#define TESTS_UNIT_DAEMON_TEST_FILES_H

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace rpmad::testing {

// An empty directory named after the running test.
inline std::string FreshTestDirectory() {
    const char *tmp = std::getenv("TEST_TMPDIR");
    const ::testing::TestInfo *test = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string dir = std::string(tmp != nullptr ? tmp : "/tmp") + "/" + test->test_suite_name() +
                      "." + test->name();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

inline std::string ReadFileOrEmpty(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void WriteFile(const std::string &path, const std::string &contents) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << contents;
}

// A fixture with a fresh directory per test and files written into it.
class FileTest : public ::testing::Test {
  protected:
    void SetUp() override { dir_ = FreshTestDirectory(); }

    // Writes `text` to `name` in the test's directory; returns its path.
    std::string Write(const std::string &name, const std::string &text) {
        const std::string path = (dir_ / name).string();
        WriteFile(path, text);
        return path;
    }

    std::filesystem::path dir_;
};

}  // namespace rpmad::testing

#endif  // TESTS_UNIT_DAEMON_TEST_FILES_H
