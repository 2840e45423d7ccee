"""returned_errors.py reads through, or refuses, each way C++ can hand an
RPMA_E_* code (or something else) back from an API function.

Each case is a small source in rpma_core's style and the answer the check
must give; a reading that misses one would let a manual page omit an error
the function returns while error_codes_test passes.
"""

import sys

import returned_errors

failures = []


def expect(what, got, want):
    if got != want:
        failures.append(what)
        print("FAIL: %s: got %r, want %r" % (what, got, want))


def analysis(source):
    return returned_errors.Analysis({"rpma_core/src/x.cc": source})


def codes_and_problems(source, name="rpma_x"):
    a = analysis(source)
    return a.codes(name), [p for _, p in a.unattributed_returns(name)], a.stray_codes()


API_TAIL = """
int rpma_x(struct rpma_conn *conn) {
    if (conn == nullptr)
        return RPMA_E_INVAL;
%s
    return 0;
}
"""


def api(body, before=""):
    return before + API_TAIL % body


def main():
    # What the reading has always seen: direct codes, mapped errno, helpers
    # in a namespace, a variable set from a helper; comparisons do not count.
    codes, problems, stray = codes_and_problems(api(
        "    int err = conn->id->Disconnect();\n"
        "    if (err != 0)\n"
        "        return err == ENOMEM ? RPMA_E_NOMEM : RPMA_E_PROVIDER;\n"
        "    int ret = rpma::Helper(conn);\n"
        "    if (ret == RPMA_E_NO_EVENT)\n"
        "        return ret;",
        "namespace rpma {\n\nint Helper(rpma_conn *c) {\n    return c ? 0 : RPMA_E_AGAIN;\n}\n\n"
        "}  // namespace rpma\n"))
    expect("plain reading: codes", codes,
           {"RPMA_E_INVAL", "RPMA_E_NOMEM", "RPMA_E_PROVIDER", "RPMA_E_AGAIN"})
    expect("plain reading: nothing unattributed", (problems, stray), ([], []))

    # Only codes that reach a return statement are returned: not a dropped
    # helper's, not one compared with, not one set in a variable that is not
    # returned; codes() over-approximates and still has the helper's.
    a = analysis(api(
        "    (void)Helper(conn);\n"
        "    int err = Probe(conn);\n"
        "    if (err == RPMA_E_NO_EVENT)\n"
        "        return RPMA_E_PROVIDER;\n"
        "    int unused = RPMA_E_NOMEM;\n"
        "    (void)unused;",
        "int Helper(rpma_conn *c) {\n    return c ? 0 : RPMA_E_AGAIN;\n}\n\n"
        "int Probe(rpma_conn *c) {\n    return c ? 0 : RPMA_E_NO_EVENT;\n}\n"))
    expect("dropped helper: returned_codes", a.returned_codes("rpma_x"),
           {"RPMA_E_INVAL", "RPMA_E_PROVIDER"})
    expect("dropped helper: codes", a.codes("rpma_x"),
           {"RPMA_E_INVAL", "RPMA_E_PROVIDER", "RPMA_E_AGAIN", "RPMA_E_NO_EVENT", "RPMA_E_NOMEM"})

    # Calls written ::F() and x.F() / x->F() reach the helper's codes.
    codes, problems, _ = codes_and_problems(api(
        "    if (int ret = ::Helper(conn))\n        return ret;",
        "namespace {\n\nint Helper(rpma_conn *c) {\n    return c ? 0 : RPMA_E_AGAIN;\n}\n\n"
        "}  // namespace\n"))
    expect("::Helper(): codes", codes, {"RPMA_E_INVAL", "RPMA_E_AGAIN"})
    expect("::Helper(): nothing unattributed", problems, [])
    codes, problems, _ = codes_and_problems(api(
        "    Checker checker;\n    int ret = checker.Check(conn);\n    if (ret != 0)\n"
        "        return ret;",
        "struct Checker {\n    int Check(const rpma_conn *c) const;\n};\n\n"
        "int Checker::Check(const rpma_conn *c) const {\n"
        "    return c ? 0 : RPMA_E_AGAIN;\n}\n"))
    expect("member call of an out-of-line method: codes", codes, {"RPMA_E_INVAL", "RPMA_E_AGAIN"})
    expect("member call of an out-of-line method: nothing unattributed", problems, [])

    # Codes the reading cannot attribute to a function are reported; the
    # header's definitions of the codes are not.
    _, _, stray = codes_and_problems(api("", "#define RPMA_E_AGAIN (-100007) /* again */\n"))
    expect("definition of a code: not stray", stray, [])
    for what, before in [
            ("macro", "#define CHECK(c) if (!(c)) return RPMA_E_AGAIN\n"),
            ("file-scope constant", "constexpr int kBusy = RPMA_E_AGAIN;\n"),
            ("method defined in its class",
             "struct Checker {\n    int Check() const { return RPMA_E_AGAIN; }\n};\n"),
    ]:
        _, _, stray = codes_and_problems(api("", before))
        expect("%s: reported as stray" % what, [code for _, _, code in stray], ["RPMA_E_AGAIN"])

    # Returned values that are not codes are reported.
    for what, body in [
            ("a provider's errno",
             "    int err = conn->id->Disconnect();\n    if (err != 0)\n        return err;"),
            ("a provider's result", "    return conn->id->Disconnect();"),
            ("a literal other than 0", "    if (conn->id == nullptr)\n        return -1;"),
            ("a variable it never sets", "    int flags;\n    return flags;"),
            ("a variable set through its address", "    int ret = 0;\n    Fill(&ret);\n"
             "    return ret;"),
            ("a variable a call may set through a reference",
             "    int ret = 0;\n    conn->id->Fill(ret);\n    return ret;"),
            ("a compound assignment", "    int ret = 0;\n    ret |= RPMA_E_AGAIN;\n"
             "    return ret;"),
            ("a method defined in its class", "    return Checker().Check();"),
    ]:
        _, problems, _ = codes_and_problems(api(body))
        expect("%s: reported as unattributed" % what, len(problems), 1)

    # A problem in a helper whose value the API function returns is found
    # there, named by the helper.
    a = analysis(api("    return Helper(conn);",
                     "int Helper(rpma_conn *c) {\n    return c->id->Disconnect();\n}\n"))
    expect("helper's errno: reported in the helper",
           [where for where, _ in a.unattributed_returns("rpma_x")], ["Helper"])

    if failures:
        print("%d failures" % len(failures))
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
