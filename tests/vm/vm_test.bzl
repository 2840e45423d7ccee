"""vm_test: runs programs on real verbs (Soft-RoCE) inside qemu VMs.

See tests/vm/README.md. A test is a list of cases; each case is a binary
target plus arguments, run inside the VM by tests/vm/init.sh:

    vm_test(
        name = "my_vm_test",
        cases = [
            {"name": "smoke", "binary": ":rxe_smoke", "args": ["rxe0"]},
            {"name": "pair", "binary": ":rxe_cm_pair", "node": 1,
             "args": ["server", "$VM_SERVER_IP", "$VMTEST_PORT"]},
            {"name": "pair", "binary": ":rxe_cm_pair", "node": 2,
             "args": ["client", "$VM_SERVER_IP", "$VMTEST_PORT"]},
        ],
        nodes = 2,
    )
"""

def _shell_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"

def _escape_dollars(s):
    # "$(rootpath ...)" stays a Bazel expansion; any other "$" is for the
    # shell inside the VM, and Bazel wants it written "$$".
    return s.replace("$(", "<<vm-loc>>").replace("$", "$$").replace("<<vm-loc>>", "$(")

def vm_test(
        name,
        cases,
        nodes = 1,
        vm_timeout = 240,
        data = [],
        host_files = [],
        timeout = "moderate",
        tags = [],
        **kwargs):
    """Declares an sh_test that boots 1 or 2 VMs and runs `cases` in them.

    Args:
      name: the test's name.
      cases: list of dicts:
        name: (string) the name on the result line; [A-Za-z0-9_.-]
        binary: (label) the program; copied into the VM with its libraries
        args: (list of strings) its arguments. They reach a shell in the
          VM, so $VM_SERVER_IP, $VMTEST_PORT, ... (see init.sh) work, and
          so does $(rootpath <label in data>)
        command: (string) instead of args: the whole shell command line,
          in which $(rootpath <binary or label in data>) names the files
          (e.g. several clients at once, see vm_all); `binary` is then only
          what the VM needs
        env: (dict) environment variables for the case, exported before
          it runs; values may use the VM's variables ("$VM_IP")
        node: 1, 2 or "*" (every VM); default 1
        timeout: seconds for this case inside the VM; default 60
        sync: "server" or "client" for an rdma_cm pair whose client does
          not retry: the client starts only once the server's rdma_cm ID
          listens on $VMTEST_PORT (see vmsync.sh). A server's command must
          be one simple command (vmsync runs it); a client's may be any
          command line
      nodes: 1 (rxe over a dummy netdev) or 2 (two VMs, rxe over virtio-net)
      vm_timeout: hard limit in seconds on the VMs' run time; keep it below
        the Bazel `timeout` so the harness, not Bazel, reports a hang
      data: more labels whose files the VM needs (at /t/<rootpath>)
      host_files: absolute paths of host files to copy in (e.g. perftest's
        /usr/bin/ib_write_lat), with their libraries
      timeout: the Bazel test timeout
      tags: more tags
      **kwargs: passed to sh_test
    """
    binaries = []
    for c in cases:
        if c["binary"] not in binaries:
            binaries.append(c["binary"])
    args = ["--nodes", str(nodes), "--vm-timeout", str(vm_timeout)]
    for c in cases:
        if "command" in c:
            if "args" in c:
                fail("case %s: give either args or command" % c["name"])
            cmd = c["command"]
        else:
            cmd = " ".join(["$(rootpath %s)" % c["binary"]] + c.get("args", []))
        sync = c.get("sync", "")
        if sync == "server":
            cmd = "vmsync server $VMTEST_PORT " + cmd
        elif sync == "client":
            # vmsync without a command only waits for the server
            cmd = "vmsync client $VM_SERVER_IP $VMTEST_PORT && { %s; }" % cmd
        elif sync:
            fail("case %s: sync must be \"server\" or \"client\"" % c["name"])
        env = c.get("env", {})
        if env:
            cmd = "export %s; %s" % (" ".join(["%s=%s" % (k, env[k]) for k in sorted(env)]), cmd)
        args += [
            "--case",
            c["name"],
            str(c.get("node", 1)),
            str(c.get("timeout", 60)),
            _shell_quote(_escape_dollars(cmd)),
        ]
    for b in binaries:
        args += ["--file", "$(rootpath %s)" % b]
    for d in data:
        args += ["--files", _shell_quote("$(rootpaths %s)" % d)]
    for f in host_files:
        args += ["--file", f]
    native.sh_test(
        name = name,
        srcs = ["//tests/vm:run_vm.sh"],
        data = ["//tests/vm:harness"] + binaries + data,
        args = args,
        size = "large",
        timeout = timeout,
        # qemu TCG keeps a core busy per VM: never run next to other tests.
        # Bazel 4.2.3 runs exclusive tests unsandboxed ("local"); qemu also
        # works inside linux-sandbox (checked), so no "no-sandbox" is needed.
        # "vm": `bazel test --test_tag_filters=vm //...` runs the tier alone.
        tags = ["exclusive", "vm"] + tags,
        **kwargs
    )

def vm_all(commands):
    """A shell command line (for a case's `command`) that runs `commands`
    at the same time and succeeds only if every one of them exits 0.

    Args:
      commands: list of simple shell commands (no `;`, `&&`, `&`)
    Returns:
      the command line
    """
    if len(commands) == 1:
        return commands[0]
    start = ["%s & p%d=$!" % (c, i) for i, c in enumerate(commands)]
    waits = " ".join(["$p%d" % i for i in range(len(commands))])
    return "; ".join(start + ["rc=0", "for p in %s; do wait $p || rc=1; done" % waits, "[ $rc = 0 ]"])
