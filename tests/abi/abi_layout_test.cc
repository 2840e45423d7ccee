// Our librpma.h against Debian's, name by name (abi_table.h), and the name
// list itself against what Debian ships, so that a name missing from
// abi_names.inc cannot hide a difference.
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/abi/abi_table.h"

namespace rpma_abi_test {
namespace {

constexpr char kDebianHeader[] = "/usr/include/librpma.h";
constexpr char kDebianLibrary[] = "/usr/lib/x86_64-linux-gnu/librpma.so.0";
constexpr size_t kFunctionCount = 84;

std::set<std::string> NamesOfKind(const std::vector<AbiEntry> &table, Kind kind) {
    std::set<std::string> names;
    for (const AbiEntry &entry : table)
        if (entry.kind == kind)
            names.insert(entry.name);
    return names;
}

// Runs a shell command and returns its standard output; a failure to run it
// or a non-zero exit fails the calling test.
std::string RunCommand(const std::string &command) {
    FILE *pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) {
        ADD_FAILURE() << "cannot run: " << command;
        return "";
    }
    std::string output;
    char buffer[4096];
    size_t got;
    while ((got = fread(buffer, 1, sizeof(buffer), pipe)) > 0)
        output.append(buffer, got);
    int status = pclose(pipe);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        ADD_FAILURE() << "command failed (status " << status << "): " << command;
    return output;
}

// `nm -D --defined-only` prints "<address> T rpma_read@@LIBRPMA_1.0".
std::set<std::string> DebianExportedFunctions() {
    std::istringstream lines(RunCommand(std::string("nm -D --defined-only ") + kDebianLibrary));
    std::set<std::string> names;
    std::string address, type, symbol;
    while (lines >> address >> type >> symbol) {
        symbol = symbol.substr(0, symbol.find('@'));
        if (symbol.rfind("rpma_", 0) == 0)
            names.insert(symbol);
    }
    return names;
}

std::string ReadFile(const std::string &path) {
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << "cannot read " << path;
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// C source without its comments (newlines kept, string literals untouched), so
// that names mentioned in documentation are not taken for declarations.
std::string StripComments(const std::string &source) {
    std::string out;
    for (size_t i = 0; i < source.size(); ++i) {
        if (source.compare(i, 2, "/*") == 0) {
            size_t end = source.find("*/", i + 2);
            end = end == std::string::npos ? source.size() : end + 2;
            for (; i < end; ++i)
                if (source[i] == '\n')
                    out += '\n';
            --i;
        } else if (source.compare(i, 2, "//") == 0) {
            i = source.find('\n', i);
            if (i == std::string::npos)
                break;
            out += '\n';
        } else if (source[i] == '"') {
            size_t end = i + 1;
            while (end < source.size() && source[end] != '"')
                end += source[end] == '\\' ? 2 : 1;
            out.append(source, i, end + 1 - i);
            i = end;
        } else {
            out += source[i];
        }
    }
    return out;
}

// Every `#define RPMA_*` and every enumerator of every enum in a header.
std::set<std::string> HeaderConstants(const std::string &path) {
    const std::string code = StripComments(ReadFile(path));
    std::set<std::string> names;

    static const std::regex kDefine(R"(^\s*#\s*define\s+(RPMA_\w+))");
    std::istringstream lines(code);
    std::string line;
    std::smatch match;
    while (std::getline(lines, line))
        if (std::regex_search(line, match, kDefine))
            names.insert(match[1]);

    static const std::regex kEnumHead(R"(^enum\s+\w+\s*\{$)");
    static const std::regex kEnumerator(R"(^\s*([A-Za-z_]\w*))");
    for (size_t open = code.find('{'); open != std::string::npos; open = code.find('{', open + 1)) {
        size_t head = code.rfind("enum", open);
        if (head == std::string::npos ||
            !std::regex_match(code.substr(head, open + 1 - head), kEnumHead))
            continue;
        std::istringstream body(code.substr(open + 1, code.find('}', open) - open - 1));
        std::string item;
        while (std::getline(body, item, ','))
            if (std::regex_search(item, match, kEnumerator))
                names.insert(match[1]);
    }
    return names;
}

TEST(AbiLayoutTest, OurHeaderMatchesDebianEntryByEntry) {
    const std::vector<AbiEntry> debian = DebianAbiTable();
    const std::vector<AbiEntry> ours = OurAbiTable();
    ASSERT_EQ(ours.size(), debian.size());
    for (size_t i = 0; i < debian.size(); ++i) {
        ASSERT_EQ(ours[i].name, debian[i].name);
        EXPECT_EQ(ours[i].facts, debian[i].facts)
            << debian[i].name << " differs from Debian's librpma.h";
    }
}

TEST(AbiNamesTest, ListsEachNameOnce) {
    std::set<std::string> seen;
    for (const AbiEntry &entry : DebianAbiTable())
        EXPECT_TRUE(seen.insert(entry.name).second) << entry.name << " is listed twice";
}

TEST(AbiNamesTest, ListsAllEightyFourFunctions) {
    EXPECT_EQ(NamesOfKind(DebianAbiTable(), Kind::kFunction).size(), kFunctionCount);
}

TEST(AbiNamesTest, FunctionsAreExactlyDebianLibraryExports) {
    const std::set<std::string> listed = NamesOfKind(DebianAbiTable(), Kind::kFunction);
    const std::set<std::string> exported = DebianExportedFunctions();
    ASSERT_EQ(exported.size(), kFunctionCount) << "unexpected symbol count in " << kDebianLibrary;
    for (const std::string &name : exported)
        EXPECT_TRUE(listed.count(name))
            << name << " is exported by " << kDebianLibrary << " but missing from abi_names.inc";
    for (const std::string &name : listed)
        EXPECT_TRUE(exported.count(name))
            << name << " is in abi_names.inc but not exported by " << kDebianLibrary;
}

TEST(AbiNamesTest, ConstantsAreExactlyDebianHeaderMacrosAndEnumerators) {
    const std::set<std::string> listed = NamesOfKind(DebianAbiTable(), Kind::kConstant);
    const std::set<std::string> declared = HeaderConstants(kDebianHeader);
    // 24 macros and 20 enumerators in librpma 1.2; fewer means the parser broke.
    ASSERT_GE(declared.size(), 44u) << "parsing " << kDebianHeader << " found too few constants";
    for (const std::string &name : declared)
        EXPECT_TRUE(listed.count(name))
            << name << " is defined in " << kDebianHeader << " but missing from abi_names.inc";
    for (const std::string &name : listed)
        EXPECT_TRUE(declared.count(name))
            << name << " is in abi_names.inc but not defined in " << kDebianHeader;
}

}  // namespace
}  // namespace rpma_abi_test
