// Our librpma.h must compile on its own as strict C11 (-Wall -Wextra
// -pedantic -Werror). It is included by its workspace path: the api_header
// target would put it behind -isystem, which silences its warnings.
#include "rpma_core/include/librpma.h"

size_t rpma_header_c_sizeof_private_data(void) {
    return sizeof(struct rpma_conn_private_data);
}
