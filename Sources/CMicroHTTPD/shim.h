#ifndef OBSERVABLE_CMICROHTTPD_SHIM_H
#define OBSERVABLE_CMICROHTTPD_SHIM_H

#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <stdint.h>
#include <microhttpd.h>

/* MHD_start_daemon and MHD_get_daemon_info are variadic, which Swift cannot
   call: these wrappers pass a fixed set of options. */

struct osv_daemon_options {
    unsigned int thread_pool_size;
    unsigned int connection_limit;
    unsigned int connection_timeout;
    size_t connection_memory_limit;
    unsigned int listen_backlog;
    const struct sockaddr *bind_address; /* NULL: all interfaces on `port` */
};

static inline struct MHD_Daemon *
osv_start_daemon(unsigned int flags, uint16_t port,
                 MHD_AccessHandlerCallback handler, void *handler_cls,
                 MHD_RequestCompletedCallback completed, void *completed_cls,
                 const struct osv_daemon_options *o)
{
    struct MHD_OptionItem items[] = {
        { MHD_OPTION_THREAD_POOL_SIZE, o->thread_pool_size, NULL },
        { MHD_OPTION_CONNECTION_LIMIT, o->connection_limit, NULL },
        { MHD_OPTION_CONNECTION_TIMEOUT, o->connection_timeout, NULL },
        { MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)o->connection_memory_limit, NULL },
        { MHD_OPTION_LISTEN_BACKLOG_SIZE, o->listen_backlog, NULL },
        { MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, completed_cls },
        { MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL },
        { o->bind_address ? MHD_OPTION_SOCK_ADDR : MHD_OPTION_END, 0, (void *)o->bind_address },
        { MHD_OPTION_END, 0, NULL },
    };
    return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_ARRAY, items, MHD_OPTION_END);
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

#endif
