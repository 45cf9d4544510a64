#ifndef PIER_CPOSTGRES_SHIM_H
#define PIER_CPOSTGRES_SHIM_H
#include <libpq-fe.h>
#include <poll.h>

/// Returns 1 when the idle connection's socket has something to read (a server notice, a
/// termination message or EOF after a restart), 0 when quiet, -1 on error.
static inline int CPostgres_socket_readable(PGconn *conn) {
    struct pollfd fd = { .fd = PQsocket(conn), .events = POLLIN, .revents = 0 };
    if (fd.fd < 0) return -1;
    int rc = poll(&fd, 1, 0);
    if (rc < 0) return -1;
    return rc > 0 ? 1 : 0;
}
#endif
