// rpma_ext_tcp_*: the tcp provider's knobs for a program (rpma_ext.h).
#include "rpma_core/src/provider/tcp/tcp_ops.h"
#include "rpma_ext.h"

int rpma_ext_tcp_set_options(const struct rpma_ext_tcp_options *opts) {
    return rpma::provider::tcp::SetOptions(opts) == 0 ? 0 : RPMA_E_INVAL;
}

int rpma_ext_tcp_get_options(struct rpma_ext_tcp_options *opts) {
    return rpma::provider::tcp::GetOptions(opts) == 0 ? 0 : RPMA_E_INVAL;
}
