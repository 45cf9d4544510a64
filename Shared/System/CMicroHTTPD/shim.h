#ifndef PIER_CMICROHTTPD_SHIM_H
#define PIER_CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <stdarg.h>
#include <strings.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <microhttpd.h>

/// MHD_start_daemon is variadic; this wrapper passes the callbacks Pier uses by name and the
/// integer options as an option array (terminated by MHD_OPTION_END).
static inline struct MHD_Daemon *CMicroHTTPD_start(unsigned int flags, uint16_t port,
        MHD_AccessHandlerCallback handler, void *context,
        MHD_RequestCompletedCallback completed,
        void *(*uri_log)(void *context, const char *uri, struct MHD_Connection *connection),
        MHD_NotifyConnectionCallback connection_notify,
        const struct MHD_OptionItem *options) {
    return MHD_start_daemon(flags, port, NULL, NULL, handler, context,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, context,
                            MHD_OPTION_URI_LOG_CALLBACK, uri_log, context,
                            MHD_OPTION_NOTIFY_CONNECTION, connection_notify, context,
                            MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

/// MHD_get_connection_info is variadic: the connection's socket, or -1.
static inline int CMicroHTTPD_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}

/// MHD_get_connection_info is variadic: what the connection-started notification stored in the
/// connection's socket context, or NULL.
static inline void *CMicroHTTPD_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

/// MHD_get_connection_info is variadic: the client address, formatted into `buffer`.
/// Returns 0 on success.
static inline int CMicroHTTPD_client_address(struct MHD_Connection *connection, char *buffer,
                                             socklen_t length) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) return -1;
    const struct sockaddr *address = info->client_addr;
    if (address->sa_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)address;
        return inet_ntop(AF_INET, &v4->sin_addr, buffer, length) ? 0 : -1;
    }
    if (address->sa_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)address;
        return inet_ntop(AF_INET6, &v6->sin6_addr, buffer, length) ? 0 : -1;
    }
    return -1;
}

struct CMicroHTTPD_head { size_t bytes; int announces_body; };

static enum MHD_Result CMicroHTTPD_head_visit(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                              const char *value, size_t value_size) {
    (void)kind;
    struct CMicroHTTPD_head *head = (struct CMicroHTTPD_head *)cls;
    head->bytes += key_size + value_size + 4;
    if (key_size == 17 && strncasecmp(key, "Transfer-Encoding", 17) == 0) head->announces_body = 1;
    if (key_size == 14 && strncasecmp(key, "Content-Length", 14) == 0 && !(value_size == 1 && value[0] == '0'))
        head->announces_body = 1;
    return MHD_YES;
}

/// The header lines' bytes (names, values, 4 bytes of framing each) and whether they announce
/// a body (a Content-Length other than 0, or a Transfer-Encoding), read without copying them.
static inline struct CMicroHTTPD_head CMicroHTTPD_head_summary(struct MHD_Connection *connection) {
    struct CMicroHTTPD_head head = { 0, 0 };
    MHD_get_connection_values_n(connection, MHD_HEADER_KIND, CMicroHTTPD_head_visit, &head);
    return head;
}

/// MHD_get_daemon_info is variadic: the port the daemon is bound to (useful with port 0).
static inline uint16_t CMicroHTTPD_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

/// MHD_SIZE_UNKNOWN is a macro of a type Swift cannot import.
static inline uint64_t CMicroHTTPD_size_unknown(void) { return MHD_SIZE_UNKNOWN; }
#endif
