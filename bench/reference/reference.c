/* The reference: a minimal server in plain C on libmicrohttpd and sqlite3
 * that does the same work as observable-server for the benchmarked requests
 * (same schema and pragmas, same JSON, one transaction per write with its
 * change-log rows, reads served from memory). It is the practical ceiling
 * that observable-server is measured against.
 *
 *   reference PORT DATABASE SCHEMA_SQL [normal|full] [THREADS]
 *
 * SCHEMA_SQL is run first; `-` runs nothing, for a database whose tables are
 * made already (bench/run.py makes them with `observable-server migrate`).
 */
#include <microhttpd.h>
#include <sqlite3.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>
#include <stdint.h>
#include <sys/random.h>

#define MAX_BODY (1 << 20)

struct donut { char id[40]; char name[256]; char dough[64]; char glaze[64]; char topping[64]; };
struct order { char id[40]; char donut_id[40]; long quantity; };

static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;  /* memory state */
static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;  /* the writer connection */
static sqlite3 *db;
static char truck_name[256] = "Food Truck";
static struct donut donuts[16];
static int donut_count;
static struct order *orders;
static size_t order_count, order_capacity;
static long long seq;
static long long next_position = 100;

struct request { char *body; size_t size; int too_large; };

static void die(const char *what) { fprintf(stderr, "%s: %s\n", what, sqlite3_errmsg(db)); exit(1); }

static void exec_sql(const char *sql) {
    char *error = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &error) != SQLITE_OK) { fprintf(stderr, "%s\n", error); exit(1); }
}

static sqlite3_stmt *prepare(const char *sql) {
    sqlite3_stmt *s;
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL) != SQLITE_OK) die(sql);
    return s;
}

static sqlite3_stmt *insert_order, *insert_change, *update_donut, *begin_tx, *commit_tx, *rollback_tx;

static void step(sqlite3_stmt *s) {
    int rc = sqlite3_step(s);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) die("step");
    sqlite3_reset(s);
}

static void uuid(char out[37]) {
    unsigned char b[16];
    if (getrandom(b, sizeof b, 0) != sizeof b) exit(1);
    b[6] = (b[6] & 0x0f) | 0x40; b[8] = (b[8] & 0x3f) | 0x80;
    sprintf(out, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static uint64_t fnv(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 0x100000001b3ULL; }
    return h;
}

/* A string value of "key" in a flat JSON object (no escapes), or NULL. */
static int json_string(const char *body, const char *key, char *out, size_t cap) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\"", key);
    const char *p = strstr(body, pattern);
    if (!p) return 0;
    p = strchr(p + strlen(pattern), ':');
    if (!p) return 0;
    p = strchr(p, '"');
    if (!p) return 0;
    const char *end = strchr(p + 1, '"');
    if (!end || (size_t)(end - p - 1) >= cap) return 0;
    memcpy(out, p + 1, end - p - 1);
    out[end - p - 1] = 0;
    return 1;
}

static int json_long(const char *body, const char *key, long *out) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\"", key);
    const char *p = strstr(body, pattern);
    if (!p) return 0;
    p = strchr(p + strlen(pattern), ':');
    if (!p) return 0;
    char *end;
    *out = strtol(p + 1, &end, 10);
    return end != p + 1;
}

static size_t donut_json(char *out, const struct donut *d) {
    char glaze[80], topping[80];
    if (d->glaze[0]) snprintf(glaze, sizeof glaze, "\"%s\"", d->glaze); else strcpy(glaze, "null");
    if (d->topping[0]) snprintf(topping, sizeof topping, "\"%s\"", d->topping); else strcpy(topping, "null");
    return sprintf(out, "{\"id\":\"%s\",\"name\":\"%s\",\"dough\":\"%s\",\"glaze\":%s,\"topping\":%s}",
                   d->id, d->name, d->dough, glaze, topping);
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, char *body, size_t n, const char *location, int with_cursor, long long cursor) {
    struct MHD_Response *r = MHD_create_response_from_buffer(n, body, MHD_RESPMEM_MUST_FREE);
    char etag[24], cur[24];
    MHD_add_response_header(r, "Content-Type", status >= 400 ? "application/problem+json" : "application/json");
    snprintf(etag, sizeof etag, "\"%016llx\"", (unsigned long long)fnv(body, n));
    MHD_add_response_header(r, "ETag", etag);
    if (with_cursor) {
        MHD_add_response_header(r, "Cache-Control", "no-cache");
        snprintf(cur, sizeof cur, "%lld", cursor);
        MHD_add_response_header(r, "Observation-Cursor", cur);
    }
    if (location) MHD_add_response_header(r, "Location", location);
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result problem(struct MHD_Connection *c, unsigned status, const char *detail) {
    char *body = malloc(512);
    int n = snprintf(body, 512, "{\"type\":\"about:blank\",\"title\":\"Error\",\"status\":%u,\"detail\":\"%s\"}", status, detail);
    return reply(c, status, body, n, NULL, 0, 0);
}

static enum MHD_Result get_order_count(struct MHD_Connection *c) {
    pthread_mutex_lock(&state_lock);
    size_t count = order_count; long long cursor = seq;
    pthread_mutex_unlock(&state_lock);
    char *body = malloc(64);
    int n = sprintf(body, "{\"orderCount\":%zu}", count);
    return reply(c, 200, body, n, NULL, 1, cursor);
}

static enum MHD_Result get_truck(struct MHD_Connection *c) {
    pthread_mutex_lock(&state_lock);
    size_t cap = 1024 + donut_count * 512 + order_count * 128;
    char *body = malloc(cap), *p = body;
    p += sprintf(p, "{\"name\":\"%s\",\"donuts\":[", truck_name);
    for (int i = 0; i < donut_count; i++) { if (i) *p++ = ','; p += donut_json(p, &donuts[i]); }
    p += sprintf(p, "],\"orders\":[");
    for (size_t i = 0; i < order_count; i++) {
        if (i) *p++ = ',';
        p += sprintf(p, "{\"id\":\"%s\",\"donutId\":\"%s\",\"quantity\":%ld}", orders[i].id, orders[i].donut_id, orders[i].quantity);
    }
    p += sprintf(p, "],\"orderCount\":%zu}", order_count);
    long long cursor = seq;
    pthread_mutex_unlock(&state_lock);
    return reply(c, 200, body, p - body, NULL, 1, cursor);
}

static int find_donut(const char *id) {
    for (int i = 0; i < donut_count; i++) if (strcmp(donuts[i].id, id) == 0) return i;
    return -1;
}

static enum MHD_Result post_order(struct MHD_Connection *c, const char *body) {
    char donut_id[64];
    long quantity;
    if (!json_string(body, "donutId", donut_id, sizeof donut_id) || !json_long(body, "quantity", &quantity))
        return problem(c, 400, "donutId and quantity are required");
    if (quantity < 1 || quantity > 1000) return problem(c, 422, "quantity must be between 1 and 1000");
    pthread_mutex_lock(&write_lock);
    pthread_mutex_lock(&state_lock);
    int known = find_donut(donut_id) >= 0;
    size_t count = order_count;
    pthread_mutex_unlock(&state_lock);
    if (!known) { pthread_mutex_unlock(&write_lock); return problem(c, 422, "no such donut"); }
    struct order o;
    uuid(o.id);
    strcpy(o.donut_id, donut_id);
    o.quantity = quantity;
    char element[256], path[128], keys[512], old_count[24], new_count[24];
    snprintf(element, sizeof element, "{\"id\":\"%s\",\"donutId\":\"%s\",\"quantity\":%ld}", o.id, o.donut_id, o.quantity);
    snprintf(path, sizeof path, "/truck/orders/%s", o.id);
    snprintf(keys, sizeof keys, "%s/donutId\n%s/quantity", path, path);
    snprintf(old_count, sizeof old_count, "%zu", count);
    snprintf(new_count, sizeof new_count, "%zu", count + 1);
    long long first = seq + 1;
    step(begin_tx);
    sqlite3_bind_text(insert_order, 1, o.id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(insert_order, 2, next_position++);
    sqlite3_bind_text(insert_order, 3, o.donut_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(insert_order, 4, o.quantity);
    step(insert_order);
    sqlite3_bind_int64(insert_change, 1, first);
    sqlite3_bind_int64(insert_change, 2, first);
    sqlite3_bind_text(insert_change, 3, "/truck/orders", -1, SQLITE_STATIC);
    sqlite3_bind_text(insert_change, 4, "insert", -1, SQLITE_STATIC);
    sqlite3_bind_null(insert_change, 5);
    sqlite3_bind_text(insert_change, 6, element, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(insert_change, 7, "/truck/orders", -1, SQLITE_STATIC);
    sqlite3_bind_text(insert_change, 8, keys, -1, SQLITE_TRANSIENT);
    step(insert_change);
    sqlite3_bind_int64(insert_change, 1, first + 1);
    sqlite3_bind_int64(insert_change, 2, first);
    sqlite3_bind_text(insert_change, 3, "/truck/orderCount", -1, SQLITE_STATIC);
    sqlite3_bind_text(insert_change, 4, "set", -1, SQLITE_STATIC);
    sqlite3_bind_text(insert_change, 5, old_count, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(insert_change, 6, new_count, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(insert_change, 7, "/truck/orderCount", -1, SQLITE_STATIC);
    sqlite3_bind_text(insert_change, 8, "", -1, SQLITE_STATIC);
    step(insert_change);
    step(commit_tx);
    pthread_mutex_lock(&state_lock);
    if (order_count == order_capacity) {
        order_capacity = order_capacity ? order_capacity * 2 : 1024;
        orders = realloc(orders, order_capacity * sizeof *orders);
    }
    orders[order_count++] = o;
    seq = first + 1;
    pthread_mutex_unlock(&state_lock);
    pthread_mutex_unlock(&write_lock);
    char *out = strdup(element);
    return reply(c, 201, out, strlen(out), path, 0, 0);
}

static enum MHD_Result patch_donut(struct MHD_Connection *c, const char *id, const char *body) {
    char name[256];
    if (!json_string(body, "name", name, sizeof name) || !name[0]) return problem(c, 422, "name is required");
    pthread_mutex_lock(&write_lock);
    pthread_mutex_lock(&state_lock);
    int i = find_donut(id);
    struct donut d;
    if (i >= 0) d = donuts[i];
    pthread_mutex_unlock(&state_lock);
    if (i < 0) { pthread_mutex_unlock(&write_lock); return problem(c, 404, "no such donut"); }
    if (strcmp(d.name, name) != 0) {
        char path[128], old_value[300], new_value[300];
        snprintf(path, sizeof path, "/truck/donuts/%s/name", id);
        snprintf(old_value, sizeof old_value, "\"%s\"", d.name);
        snprintf(new_value, sizeof new_value, "\"%s\"", name);
        long long s = seq + 1;
        step(begin_tx);
        sqlite3_bind_text(update_donut, 1, name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(update_donut, 2, id, -1, SQLITE_TRANSIENT);
        step(update_donut);
        sqlite3_bind_int64(insert_change, 1, s);
        sqlite3_bind_int64(insert_change, 2, s);
        sqlite3_bind_text(insert_change, 3, path, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(insert_change, 4, "set", -1, SQLITE_STATIC);
        sqlite3_bind_text(insert_change, 5, old_value, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(insert_change, 6, new_value, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(insert_change, 7, path, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(insert_change, 8, "", -1, SQLITE_STATIC);
        step(insert_change);
        step(commit_tx);
        strcpy(d.name, name);
        pthread_mutex_lock(&state_lock);
        donuts[i] = d;
        seq = s;
        pthread_mutex_unlock(&state_lock);
    }
    pthread_mutex_unlock(&write_lock);
    char *out = malloc(1024);
    size_t n = donut_json(out, &d);
    return reply(c, 200, out, n, NULL, 0, 0);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *data, size_t *size, void **con_cls) {
    (void)cls; (void)version;
    struct request *r = *con_cls;
    if (!r) {
        r = calloc(1, sizeof *r);
        *con_cls = r;
        return MHD_YES;
    }
    if (*size) {
        if (r->size + *size > MAX_BODY) r->too_large = 1;
        else {
            r->body = realloc(r->body, r->size + *size + 1);
            memcpy(r->body + r->size, data, *size);
            r->size += *size;
            r->body[r->size] = 0;
        }
        *size = 0;
        return MHD_YES;
    }
    if (r->too_large) return problem(c, 413, "body too large");
    const char *body = r->body ? r->body : "";
    if (strcmp(method, "GET") == 0) {
        if (strcmp(url, "/truck/orderCount") == 0) return get_order_count(c);
        if (strcmp(url, "/truck") == 0) return get_truck(c);
        if (strcmp(url, "/healthz") == 0) { char *b = strdup("{\"status\":\"ok\"}"); return reply(c, 200, b, strlen(b), NULL, 0, 0); }
    } else if (strcmp(method, "POST") == 0 && strcmp(url, "/truck/orders") == 0) {
        return post_order(c, body);
    } else if (strcmp(method, "PATCH") == 0 && strncmp(url, "/truck/donuts/", 14) == 0) {
        return patch_donut(c, url + 14, body);
    }
    return problem(c, 404, "not found");
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)cls; (void)c; (void)toe;
    struct request *r = *con_cls;
    if (r) { free(r->body); free(r); *con_cls = NULL; }
}

static void load(void) {
    sqlite3_stmt *s = prepare("SELECT id, name, dough, COALESCE(glaze, ''), COALESCE(topping, '') FROM donuts ORDER BY position");
    while (sqlite3_step(s) == SQLITE_ROW && donut_count < 16) {
        struct donut *d = &donuts[donut_count++];
        snprintf(d->id, sizeof d->id, "%s", sqlite3_column_text(s, 0));
        snprintf(d->name, sizeof d->name, "%s", sqlite3_column_text(s, 1));
        snprintf(d->dough, sizeof d->dough, "%s", sqlite3_column_text(s, 2));
        snprintf(d->glaze, sizeof d->glaze, "%s", sqlite3_column_text(s, 3));
        snprintf(d->topping, sizeof d->topping, "%s", sqlite3_column_text(s, 4));
    }
    sqlite3_finalize(s);
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: reference PORT DATABASE SCHEMA_SQL|- [normal|full] [THREADS]\n"); return 2; }
    int port = atoi(argv[1]);
    const char *sync = argc > 4 ? argv[4] : "normal";
    int threads = argc > 5 ? atoi(argv[5]) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (sqlite3_open_v2(argv[2], &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) die("open");
    sqlite3_busy_timeout(db, 5000);
    exec_sql("PRAGMA journal_mode = WAL");
    exec_sql(strcmp(sync, "full") == 0 ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
    exec_sql("PRAGMA foreign_keys = ON");
    if (strcmp(argv[3], "-") != 0) {
        FILE *f = fopen(argv[3], "rb");
        if (!f) { perror(argv[3]); return 1; }
        char *sql = calloc(1, 1 << 20);
        if (fread(sql, 1, (1 << 20) - 1, f) == 0) return 1;
        fclose(f);
        exec_sql(sql);
        free(sql);
    }
    load();
    begin_tx = prepare("BEGIN IMMEDIATE");
    commit_tx = prepare("COMMIT");
    rollback_tx = prepare("ROLLBACK");
    insert_order = prepare("INSERT INTO orders (id, position, donut_id, quantity) VALUES (?, ?, ?, ?)");
    insert_change = prepare("INSERT INTO changes (seq, txn, path, op, old, new, keys, implied_reads) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    update_donut = prepare("UPDATE donuts SET name = ? WHERE id = ?");
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME, port, NULL, NULL, handle, NULL,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)threads, MHD_OPTION_CONNECTION_LIMIT, 20000u,
        MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(16 * 1024),
        MHD_OPTION_LISTEN_BACKLOG_SIZE, 4096u, MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u, MHD_OPTION_END);
    if (!d) { fprintf(stderr, "cannot listen on %d\n", port); return 1; }
    fprintf(stderr, "reference listening on %d\n", port);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    int sig;
    sigwait(&set, &sig);
    MHD_stop_daemon(d);
    sqlite3_close(db);
    return 0;
}
