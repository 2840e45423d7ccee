"""rpma's version: the one place it is written.

rpmad --version, rpmactl --version, GetStats.version, the Debian packages
and the pkg-config files (librpma.pc, rpma-client.pc) all take it from here
(//:version makes it the C macro RPMA_VERSION); //tests/integration:
version_test checks that they agree, and with the manual pages' headers and
packaging/changelog's top entry, which are written by hand.

It is also librpma.pc's version, which programs built against Debian's
librpma check (`librpma >= 1.2`): librpma.so.0 here is librpma 1.x's ABI,
so this stays 1.x (at least 1.2) for as long as that holds.
"""

VERSION = "1.3.0"
