#ifndef PIER_CPOSTGRES_SHIM_H
#define PIER_CPOSTGRES_SHIM_H
#include <libpq-fe.h>
#include <poll.h>
#include <sys/epoll.h>
#include <errno.h>

/// Arms `fd` once in epoll set `ep` for reading (or writing): one event, then disarmed until
/// armed again. Returns 0, or -1 with errno.
static inline int CPostgres_epoll_arm(int ep, int fd, int writable) {
    struct epoll_event event = { .events = (writable ? EPOLLOUT : EPOLLIN) | EPOLLONESHOT, .data = { .fd = fd } };
    if (epoll_ctl(ep, EPOLL_CTL_MOD, fd, &event) == 0) return 0;
    if (errno != ENOENT) return -1;
    return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &event);
}

/// Waits up to `timeout_ms` for events on `ep` and writes up to `max` ready descriptors to
/// `fds`; returns how many (0 when the time passed), or -1 with errno.
static inline int CPostgres_epoll_wait(int ep, int *fds, int max, int timeout_ms) {
    struct epoll_event events[64];
    if (max > 64) max = 64;
    int count = epoll_wait(ep, events, max, timeout_ms);
    for (int i = 0; i < count; i++) fds[i] = events[i].data.fd;
    return count;
}

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
