#ifndef OBSERVABLE_CMICROHTTPD_SHIM_H
#define OBSERVABLE_CMICROHTTPD_SHIM_H

#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <microhttpd.h>
#include <sys/epoll.h>
#include <arpa/inet.h>
#include <string.h>

/* MHD_start_daemon and MHD_get_daemon_info are variadic, which Swift cannot
   call: these wrappers pass a fixed set of options. */

/* Percent-decoding for paths and query values that leaves %00 encoded:
   decoded, a NUL would cut the C string short and a request could name
   another resource than the one it spelled out. */
static inline size_t osv_unescape(void *cls, struct MHD_Connection *connection, char *s)
{
    (void)cls; (void)connection;
    char *out = s;
    for (char *in = s; *in; in++) {
        if (*in == '%' && in[1] && in[2]) {
            int high = in[1], low = in[2];
            int h = (high >= '0' && high <= '9') ? high - '0' : (high >= 'a' && high <= 'f') ? high - 'a' + 10 : (high >= 'A' && high <= 'F') ? high - 'A' + 10 : -1;
            int l = (low >= '0' && low <= '9') ? low - '0' : (low >= 'a' && low <= 'f') ? low - 'a' + 10 : (low >= 'A' && low <= 'F') ? low - 'A' + 10 : -1;
            if (h >= 0 && l >= 0 && (h | l) != 0) {
                *out++ = (char)(h * 16 + l);
                in += 2;
                continue;
            }
        }
        *out++ = *in;
    }
    *out = 0;
    return (size_t)(out - s);
}

/* Called with a request's target before libmicrohttpd parses its query
   (MHD_OPTION_URI_LOG_CALLBACK); its answer becomes the request's con_cls. */
typedef void *(*osv_target_callback)(void *cls, const char *target, struct MHD_Connection *connection);

struct osv_daemon_options {
    unsigned int thread_pool_size;
    unsigned int connection_limit;
    unsigned int connection_timeout;
    size_t connection_memory_limit;
    unsigned int listen_backlog;
    const struct sockaddr *bind_address; /* NULL: all interfaces on `port` */
    osv_target_callback target_received;
    void *target_received_cls;
};

/* libmicrohttpd's messages, formatted, go to the server's log: defined in
   Swift (HTTPServer) with the daemon as `cls`. */
extern void osv_log_message(void *cls, const char *message);

static void osv_logger(void *cls, const char *format, va_list arguments)
{
    char message[512];
    vsnprintf(message, sizeof message, format, arguments);
    osv_log_message(cls, message);
}

static inline struct MHD_Daemon *
osv_start_daemon(unsigned int flags, uint16_t port,
                 MHD_AcceptPolicyCallback accept_policy, void *accept_cls,
                 MHD_AccessHandlerCallback handler, void *handler_cls,
                 MHD_RequestCompletedCallback completed, void *completed_cls,
                 const struct osv_daemon_options *o)
{
    /* One worker is the daemon's own thread, without a pool: libmicrohttpd
       warns about a pool of one (or none), so the entry then repeats the
       connection limit instead. */
    int pooled = o->thread_pool_size > 1;
    struct MHD_OptionItem items[] = {
        { pooled ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_CONNECTION_LIMIT,
          pooled ? (intptr_t)o->thread_pool_size : (intptr_t)o->connection_limit, NULL },
        { MHD_OPTION_CONNECTION_LIMIT, o->connection_limit, NULL },
        { MHD_OPTION_CONNECTION_TIMEOUT, o->connection_timeout, NULL },
        { MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)o->connection_memory_limit, NULL },
        { MHD_OPTION_LISTEN_BACKLOG_SIZE, o->listen_backlog, NULL },
        { MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, completed_cls },
        { MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL },
        { MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)osv_unescape, NULL },
        { MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)o->target_received, o->target_received_cls },
        { MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)osv_logger, o->target_received_cls },
        { o->bind_address ? MHD_OPTION_SOCK_ADDR : MHD_OPTION_END, 0, (void *)o->bind_address },
        { MHD_OPTION_END, 0, NULL },
    };
    return MHD_start_daemon(flags, port, accept_policy, accept_cls, handler, handler_cls,
                            MHD_OPTION_ARRAY, items, MHD_OPTION_END);
}

/* MHD_set_connection_option is variadic, which Swift cannot call. */
static inline void osv_set_connection_timeout(struct MHD_Connection *connection, unsigned int seconds)
{
    MHD_set_connection_option(connection, MHD_CONNECTION_OPTION_TIMEOUT, seconds);
}

static inline uint16_t osv_daemon_port(struct MHD_Daemon *daemon)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

static inline unsigned int osv_daemon_connections(struct MHD_Daemon *daemon)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info ? info->num_connections : 0;
}

/* The client's IP address as text (`127.0.0.1`, `::1`) in `buffer`; its
   length, 0 when libmicrohttpd does not know it. */
static inline size_t osv_connection_client_address(struct MHD_Connection *connection, char *buffer, size_t size)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!info || !info->client_addr) return 0;
    const struct sockaddr *address = info->client_addr;
    const char *text = NULL;
    if (address->sa_family == AF_INET)
        text = inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)address)->sin_addr, buffer, (socklen_t)size);
    else if (address->sa_family == AF_INET6)
        text = inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)address)->sin6_addr, buffer, (socklen_t)size);
    return text ? strlen(text) : 0;
}

/* The socket of a connection (a stream writes to it while suspended). */
static inline int osv_connection_fd(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}

#endif
