// FreePort: a TCP port for a test's or a benchmark's listener, one that
// nothing on this host is bound to now.
//
// Drawn at random from the half below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), never from it: bind(0) picks from that
// range, where every connection this host makes (other tests' running at
// the same time included) takes its local port, so the port handed out
// could be some connection's by the time the daemon binds it. At random, so
// tests running at once rarely draw the same one; never one this process
// handed out before.
#ifndef TESTS_SUPPORT_FREE_PORT_H
#define TESTS_SUPPORT_FREE_PORT_H

#include <cstdint>

namespace rpma::testing {

// 0 when no free port turned up.
uint16_t FreePort();

}  // namespace rpma::testing

#endif  // TESTS_SUPPORT_FREE_PORT_H
