#ifndef OBSERVABLE_CMICROHTTPD_SHIM_H
#define OBSERVABLE_CMICROHTTPD_SHIM_H

#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <microhttpd.h>
#include <sys/epoll.h>
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <string.h>

/* MHD_start_daemon and MHD_get_daemon_info are variadic, which Swift cannot
   call: these wrappers pass a fixed set of options. */

/* Percent-decoding for paths and query values that leaves %00 encoded:
   decoded, a NUL would cut the C string short and a request could name
   another resource than the one it spelled out. The authority of an
   absolute-form target (`http://host/path`) is left as sent, so that its
   first `/` is where the path begins.

   libmicrohttpd unescapes a request's query parameters first, each as it
   records it in the connection's memory, and the target's path last. A
   response it has queued by then is its refusal of a parameter that memory
   could not hold (431), which it never sends: it goes on waiting for header
   lines it no longer reads, until the idle timeout. The server is told
   (osv_query_overflowed, with the daemon as `cls`) and answers instead. */
extern void osv_query_overflowed(void *cls, struct MHD_Connection *connection);

static inline size_t osv_unescape(void *cls, struct MHD_Connection *connection, char *s)
{
    if (cls != NULL && connection != NULL
        && MHD_get_connection_info(connection, MHD_CONNECTION_INFO_HTTP_STATUS) != NULL)
        osv_query_overflowed(cls, connection);
    char *start = s;
    if (*s != '/' && *s != 0) {
        char *authority = strstr(s, "://");
        char *path = authority ? strchr(authority + 3, '/') : NULL;
        if (authority && !path) return strlen(s);
        if (path) start = path;
    }
    char *out = start;
    for (char *in = start; *in; in++) {
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
    /* Told of every connection accepted and closed (its cls is target_received_cls). */
    MHD_NotifyConnectionCallback connection_notified;
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
       connection limit instead. The logger comes first, so that every
       message of libmicrohttpd's, even about the options after it, is ours.
       The listening socket keeps libmicrohttpd's default, SO_REUSEADDR: a
       restart binds at once, and a second server on a port already served
       is refused (SO_REUSEPORT would let it share the port, and take part
       of the first one's connections). */
    int pooled = o->thread_pool_size > 1;
    struct MHD_OptionItem items[] = {
        { MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)osv_logger, o->target_received_cls },
        { pooled ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_CONNECTION_LIMIT,
          pooled ? (intptr_t)o->thread_pool_size : (intptr_t)o->connection_limit, NULL },
        { MHD_OPTION_CONNECTION_LIMIT, o->connection_limit, NULL },
        { MHD_OPTION_CONNECTION_TIMEOUT, o->connection_timeout, NULL },
        { MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)o->connection_memory_limit, NULL },
        { MHD_OPTION_LISTEN_BACKLOG_SIZE, o->listen_backlog, NULL },
        { MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, completed_cls },
        { MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)osv_unescape, o->target_received_cls },
        { MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)o->target_received, o->target_received_cls },
        { MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)o->connection_notified, o->target_received_cls },
        { o->bind_address ? MHD_OPTION_SOCK_ADDR : MHD_OPTION_END, 0, (void *)o->bind_address },
        { MHD_OPTION_END, 0, NULL },
    };
    return MHD_start_daemon(flags, port, accept_policy, accept_cls, handler, handler_cls,
                            MHD_OPTION_ARRAY, items, MHD_OPTION_END);
}

/* Whether libmicrohttpd has queued a response on the connection. */
static inline int osv_response_queued(struct MHD_Connection *connection)
{
    return MHD_get_connection_info(connection, MHD_CONNECTION_INFO_HTTP_STATUS) != NULL;
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

/* The pointer a connection was given when it was accepted (socket_context). */
static inline void *osv_connection_context(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

/* The client's address as two words, the key its connections are counted
   under: an IPv4 address (also when mapped into IPv6) whole, an IPv6 address
   by its /64 prefix, the smallest block a client is usually given; zero for
   any other address. */
struct osv_client_key {
    uint64_t high;
    uint64_t low;
};

static inline struct osv_client_key osv_client_key_of(struct MHD_Connection *connection)
{
    struct osv_client_key key = { 0, 0 };
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *address = info ? info->client_addr : NULL;
    if (address == NULL) return key;
    if (address->sa_family == AF_INET) {
        key.low = 0xffff00000000ULL | ntohl(((const struct sockaddr_in *)address)->sin_addr.s_addr);
    } else if (address->sa_family == AF_INET6) {
        const uint8_t *bytes = ((const struct sockaddr_in6 *)address)->sin6_addr.s6_addr;
        static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
        if (memcmp(bytes, mapped, 12) == 0) {
            key.low = 0xffff00000000ULL | ((uint64_t)bytes[12] << 24) | ((uint64_t)bytes[13] << 16) | ((uint64_t)bytes[14] << 8) | bytes[15];
        } else {
            for (int i = 0; i < 8; i++) key.high = (key.high << 8) | bytes[i];
            key.low = 1; /* no IPv4 key has this low word */
        }
    }
    return key;
}

/* Bytes the kernel has received on a socket since it was opened (what the
   application read and what waits), or UINT64_MAX when it cannot tell.
   glibc's struct tcp_info stops before the field (tcpi_bytes_received,
   Linux 4.1), and linux/tcp.h clashes with glibc's header in Swift's
   modules: it is read at its offset in the kernel's struct, which only
   ever grows at its end. */
static inline uint64_t osv_received_bytes(int socket)
{
    enum { bytes_received_offset = 128 };
    unsigned char info[256];
    socklen_t length = sizeof info;
    if (getsockopt(socket, IPPROTO_TCP, TCP_INFO, info, &length) != 0 || length < bytes_received_offset + sizeof(uint64_t))
        return UINT64_MAX;
    uint64_t bytes;
    memcpy(&bytes, info + bytes_received_offset, sizeof bytes);
    return bytes;
}

/* What a request's head says about how its body is framed, and whether its
   lines are sound, gathered field by field from what libmicrohttpd's public
   API hands over: MHD_get_connection_values_n gives every header line it
   kept, in order, repeats included, and osv_check_field is called with each
   (the struct starts zeroed). HTTPDaemon+Framing.swift decides. */
struct osv_framing {
    unsigned int hosts;
    unsigned int content_lengths;
    unsigned int transfer_encodings;
    /* The first Content-Length (libmicrohttpd refuses a malformed one itself). */
    uint64_t content_length;
    /* A repeated Content-Length that is malformed or says another length. */
    int lengths_differ;
    /* The one Transfer-Encoding line says `chunked` and nothing else (in
       any case, without a blank after it). */
    int chunked;
    /* A field name with a byte that is no token character: whitespace
       before the colon, a space or a control character in the name. */
    int bad_name;
    /* A value holding a CR, or a field whose name is Content-Length or
       Transfer-Encoding with more after it: libmicrohttpd joins a folded
       line to the name of the field before it (`Transfer-Encoding:` and
       ` chunked` become `Transfer-Encodingchunked`). */
    int bad_line;
};

/* The bytes a field name may hold (RFC 9110 tchar). */
static const unsigned char osv_token_bytes[256] = {
    ['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1, ['*'] = 1, ['+'] = 1, ['-'] = 1, ['.'] = 1,
    ['^'] = 1, ['_'] = 1, ['`'] = 1, ['|'] = 1, ['~'] = 1,
    ['0' ... '9'] = 1, ['A' ... 'Z'] = 1, ['a' ... 'z'] = 1,
};

/* Whether `a` (of `size` bytes, 4 or more) is `lower` in any case, for
   names of letters and `-` (0x20 set in each byte lowers a letter and
   leaves `-` as it is), a word at a time: the last word overlaps the one
   before when `size` is no multiple of its width. */
static inline int osv_same_name(const char *a, const char *lower, size_t size)
{
    if (size < 8) {
        uint32_t x, y, u, v;
        memcpy(&x, a, 4); memcpy(&y, lower, 4);
        memcpy(&u, a + size - 4, 4); memcpy(&v, lower + size - 4, 4);
        return ((x | 0x20202020u) == y) & ((u | 0x20202020u) == v);
    }
    uint64_t x, y;
    for (size_t i = 0; i + 8 < size; i += 8) {
        memcpy(&x, a + i, 8); memcpy(&y, lower + i, 8);
        if ((x | 0x2020202020202020ull) != y) return 0;
    }
    memcpy(&x, a + size - 8, 8); memcpy(&y, lower + size - 8, 8);
    return (x | 0x2020202020202020ull) == y;
}

/* A Content-Length value: digits only, at most 19 of them; -1 otherwise. */
static inline int64_t osv_length_value(const char *value, size_t size)
{
    if (size == 0 || size > 19) return -1;
    int64_t length = 0;
    for (size_t i = 0; i < size; i++) {
        if (value[i] < '0' || value[i] > '9') return -1;
        length = length * 10 + (value[i] - '0');
    }
    return length;
}

static inline void osv_check_field(struct osv_framing *f, const char *key, size_t key_size, const char *value, size_t value_size)
{
    if (value == NULL) { value = ""; value_size = 0; }
    unsigned char names = key_size != 0;
    for (size_t i = 0; i < key_size; i++) names &= osv_token_bytes[(unsigned char)key[i]];
    if (!names) f->bad_name = 1;
    /* A bare CR does not end a line for libmicrohttpd: it stays in the value. */
    if (value_size != 0 && memchr(value, '\r', value_size) != NULL) f->bad_line = 1;
    if (key_size == 4 && osv_same_name(key, "host", 4)) {
        f->hosts++;
    } else if (key_size == 14 && osv_same_name(key, "content-length", 14)) {
        int64_t length = osv_length_value(value, value_size);
        if (f->content_lengths == 0) {
            f->content_length = length < 0 ? 0 : (uint64_t)length;
        } else if (length < 0 || (uint64_t)length != f->content_length) {
            f->lengths_differ = 1;
        }
        f->content_lengths++;
    } else if (key_size == 17 && osv_same_name(key, "transfer-encoding", 17)) {
        /* Exactly as libmicrohttpd reads a chunked body: `chunked` in any
           case, no blank after it (with one it would wait for a body it
           cannot frame). */
        f->chunked = f->transfer_encodings == 0 && value_size == 7 && osv_same_name(value, "chunked", 7);
        f->transfer_encodings++;
    } else if ((key_size > 14 && osv_same_name(key, "content-length", 14))
               || (key_size > 17 && osv_same_name(key, "transfer-encoding", 17))) {
        /* A framing field with a folded line joined to its name. */
        f->bad_line = 1;
    }
}

/* The reason phrase of an HTTP status ("OK", "Not Found"). */
static inline const char *osv_reason_phrase(unsigned int status)
{
    return MHD_get_reason_phrase_for(status);
}

#endif
