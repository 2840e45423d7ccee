// librpma's blocking calls (rpma_ep_next_conn_req, rpma_conn_next_event)
// block unless the application made their fd O_NONBLOCK; the providers'
// event sources never block, so the API objects wait here first.
#ifndef RPMA_CORE_SRC_FD_WAIT_H
#define RPMA_CORE_SRC_FD_WAIT_H

namespace rpma {

// Returns true when the caller set O_NONBLOCK on fd.
bool IsNonBlocking(int fd);

// Blocks until fd is readable. Returns 0 or an errno value.
int WaitReadable(int fd);

}  // namespace rpma

#endif  // RPMA_CORE_SRC_FD_WAIT_H
