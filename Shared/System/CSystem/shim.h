#ifndef PIER_CSYSTEM_SHIM_H
#define PIER_CSYSTEM_SHIM_H

// What Swift's Glibc module leaves out: epoll and eventfd (glibc's own headers, nothing linked).
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <errno.h>
#include <stddef.h>

/// Arms `fd` once in epoll set `ep` for reading (or writing): one event, then disarmed until
/// armed again. Returns 0, or -1 with errno.
static inline int CSystem_epoll_arm(int ep, int fd, int writable) {
    struct epoll_event event = { .events = (writable ? EPOLLOUT : EPOLLIN) | EPOLLONESHOT, .data = { .fd = fd } };
    if (epoll_ctl(ep, EPOLL_CTL_MOD, fd, &event) == 0) return 0;
    if (errno != ENOENT) return -1;
    return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &event);
}

/// Adds `fd` for reading, level-triggered, for good (a wake-up descriptor). Returns 0 or -1.
static inline int CSystem_epoll_add_readable(int ep, int fd) {
    struct epoll_event event = { .events = EPOLLIN, .data = { .fd = fd } };
    return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &event);
}

/// Waits up to `timeout_ms` for events on `ep` and writes up to `max` ready descriptors to
/// `fds`; returns how many (0 when the time passed), or -1 with errno.
static inline int CSystem_epoll_wait(int ep, int *fds, int max, int timeout_ms) {
    struct epoll_event events[64];
    if (max > 64) max = 64;
    int count = epoll_wait(ep, events, max, timeout_ms);
    for (int i = 0; i < count; i++) fds[i] = events[i].data.fd;
    return count;
}

/// Watches `fd` once for its peer going away (hang-up, reset, or the peer's close): nothing that
/// is read or written wakes the set; one event, then disarmed. Returns 0 or -1 with errno.
static inline int CSystem_epoll_watch_hangup(int ep, int fd) {
    struct epoll_event event = { .events = EPOLLRDHUP | EPOLLONESHOT, .data = { .fd = fd } };
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &event) == 0) return 0;
    if (errno != EEXIST) return -1;
    return epoll_ctl(ep, EPOLL_CTL_MOD, fd, &event);
}

/// Removes `fd` from epoll set `ep`. Returns 0 or -1 with errno.
static inline int CSystem_epoll_remove(int ep, int fd) { return epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL); }

/// A non-blocking, close-on-exec eventfd, or -1.
static inline int CSystem_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

#endif
