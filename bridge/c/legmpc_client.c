/* legmpc_client.c: the controller's side of docs/PROTOCOL.md (version 3) over libzmq.
 * See legmpc_client.h for the API. Layout of this file: byte order and small helpers, the
 * strict JSON reader (CONFIG, ERROR, BYE payloads only), receiving and checking a message,
 * connect, receive, send. Every buffer is allocated in legmpc_new and legmpc_connect; the
 * per-tick paths only read into and send from them. */
#define _POSIX_C_SOURCE 200809L
#include "legmpc_client.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#define FIXED_SIZE 32
#define DESC_SIZE 16
#define MAX_ARRAYS 16
#define MAX_FRAMES (1 + MAX_ARRAYS)
#define HDR_CAP (FIXED_SIZE + DESC_SIZE * MAX_ARRAYS)
#define MAX_FRAME_BYTES (1u << 20)
#define MAX_MESSAGE_BYTES (4u << 20)
#define MAX_JSON_BYTES (64u << 10)
#define MAX_DIM 100000
#define JSON_DEPTH 64
#define SENT_CAP 64
#define ERR_CAP 16
#define DRAIN_MAX 4096
#define COMMAND_VALUE_LIMIT 1e9
#define DT_F64 1
#define DT_U8 2
#define DT_I64 3

/* ------------------------------------------------------------------ little-endian bytes */
static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t rd32(const unsigned char *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t rd64(const unsigned char *p) { return (uint64_t)rd32(p) | ((uint64_t)rd32(p + 4) << 32); }
static double rdf64(const unsigned char *p) {
    uint64_t u = rd64(p);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}
static void wr16(unsigned char *p, uint16_t v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); }
static void wr32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void wr64(unsigned char *p, uint64_t v) { wr32(p, (uint32_t)v); wr32(p + 4, (uint32_t)(v >> 32)); }
static void wrf64(unsigned char *p, double d) {
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    wr64(p, u);
}
static int host_is_little_endian(void) {
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static void copy_text(char *dst, size_t cap, const char *src) {
    if (cap == 0) return;
    size_t n = strlen(src);
    if (n >= cap) n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* the protocol's clock (version 3): CLOCK_MONOTONIC, shared by every process on the host */
static int64_t wall_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double monotonic_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ------------------------------------------------------------------ strict JSON reader */
/* Reads exactly what CONFIG, ERROR and BYE carry: an object whose known fields have the
 * stated type (an integer is not 1.0 and not true), unknown fields skipped, RFC 8259 syntax
 * only (no NaN, no trailing commas, no BOM), UTF-8 checked, nesting at most JSON_DEPTH. */
typedef struct {
    const unsigned char *p, *end;
    int depth;
    char *err;
    size_t errlen;
    const char *what; /* "CONFIG", ... for messages */
} jr;

static int jfail(jr *j, const char *reason, const char *fmt, ...) {
    if (j->err && j->errlen && !j->err[0]) {
        int n = snprintf(j->err, j->errlen, "%s: ", reason);
        if (n > 0 && (size_t)n < j->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(j->err + n, j->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

static void jws(jr *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

static size_t joffset(const jr *j, const unsigned char *start) { return (size_t)(j->p - start); }

/* Append one character's UTF-8 bytes to out (cap bytes with the NUL), whole or not at all:
 * once one does not fit, the string is truncated there. *w: bytes written, *n: full length. */
static void jput(char *out, size_t cap, size_t *w, size_t *n, int *trunc, const unsigned char *bytes, size_t k) {
    *n += k;
    if (!out || *trunc) return;
    if (*w + k + 1 <= cap) {
        memcpy(out + *w, bytes, k);
        *w += k;
    } else {
        *trunc = 1;
    }
}

static int hex4(jr *j, unsigned *cp) {
    if (j->end - j->p < 4) return jfail(j, "json", "%s: \\u escape needs 4 hex digits", j->what);
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char h = j->p[i];
        v <<= 4;
        if (h >= '0' && h <= '9') v |= (unsigned)(h - '0');
        else if (h >= 'a' && h <= 'f') v |= (unsigned)(h - 'a' + 10);
        else if (h >= 'A' && h <= 'F') v |= (unsigned)(h - 'A' + 10);
        else return jfail(j, "json", "%s: bad \\u escape", j->what);
    }
    j->p += 4;
    *cp = v;
    return 0;
}

/* A string at j->p (the opening quote). Decoded into out (NUL-terminated, truncated at a
 * character boundary; *trunc says so) unless out is NULL; *len: its full decoded length. */
static int jstring(jr *j, char *out, size_t cap, size_t *len, int *trunc) {
    static const char escapes[] = "\"\\/bfnrt", decoded[] = "\"\\/\b\f\n\r\t";
    size_t n = 0, w = 0;
    int tr = 0;
    if (j->p >= j->end || *j->p != '"') return jfail(j, "json", "%s: expected a string", j->what);
    j->p++;
    for (;;) {
        if (j->p >= j->end) return jfail(j, "json", "%s: unterminated string", j->what);
        unsigned char ch = *j->p;
        if (ch == '"') { j->p++; break; }
        if (ch < 0x20) return jfail(j, "json", "%s: control character in a string", j->what);
        if (ch == '\\') {
            j->p++;
            if (j->p >= j->end) return jfail(j, "json", "%s: unterminated string", j->what);
            unsigned char e = *j->p++;
            unsigned char b[4];
            const char *simple = e ? strchr(escapes, e) : NULL;
            if (simple) {
                b[0] = (unsigned char)decoded[simple - escapes];
                jput(out, cap, &w, &n, &tr, b, 1);
                continue;
            }
            if (e != 'u') return jfail(j, "json", "%s: bad escape \\%c", j->what, e);
            unsigned cp, lo;
            if (hex4(j, &cp)) return -1;
            if (cp >= 0xDC00 && cp <= 0xDFFF) return jfail(j, "json", "%s: lone surrogate \\u%04X", j->what, cp);
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u')
                    return jfail(j, "json", "%s: lone surrogate \\u%04X", j->what, cp);
                j->p += 2;
                if (hex4(j, &lo)) return -1;
                if (lo < 0xDC00 || lo > 0xDFFF) return jfail(j, "json", "%s: bad surrogate pair", j->what);
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (cp == 0) return jfail(j, "json", "%s: NUL character in a string", j->what);
            size_t k;
            if (cp < 0x80) { b[0] = (unsigned char)cp; k = 1; }
            else if (cp < 0x800) { b[0] = (unsigned char)(0xC0 | (cp >> 6)); b[1] = (unsigned char)(0x80 | (cp & 0x3F)); k = 2; }
            else if (cp < 0x10000) {
                b[0] = (unsigned char)(0xE0 | (cp >> 12)); b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                b[2] = (unsigned char)(0x80 | (cp & 0x3F)); k = 3;
            } else {
                b[0] = (unsigned char)(0xF0 | (cp >> 18)); b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
                b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F)); b[3] = (unsigned char)(0x80 | (cp & 0x3F)); k = 4;
            }
            jput(out, cap, &w, &n, &tr, b, k);
            continue;
        }
        if (ch < 0x80) { jput(out, cap, &w, &n, &tr, &ch, 1); j->p++; continue; }
        /* a UTF-8 sequence: the right length, no overlong form, no surrogate, <= U+10FFFF */
        size_t k = ch >= 0xF0 ? 4 : ch >= 0xE0 ? 3 : ch >= 0xC2 ? 2 : 0;
        if (k == 0 || ch > 0xF4 || (size_t)(j->end - j->p) < k) return jfail(j, "json", "%s: invalid UTF-8", j->what);
        for (size_t i = 1; i < k; i++)
            if ((j->p[i] & 0xC0) != 0x80) return jfail(j, "json", "%s: invalid UTF-8", j->what);
        if ((ch == 0xE0 && j->p[1] < 0xA0) || (ch == 0xED && j->p[1] > 0x9F) || (ch == 0xF0 && j->p[1] < 0x90) ||
            (ch == 0xF4 && j->p[1] > 0x8F))
            return jfail(j, "json", "%s: invalid UTF-8", j->what);
        jput(out, cap, &w, &n, &tr, j->p, k);
        j->p += k;
    }
    if (out && cap) out[w] = '\0';
    if (len) *len = n;
    if (trunc) *trunc = tr;
    return 0;
}

/* A number at j->p (RFC 8259 grammar); *is_int: no fraction and no exponent. */
static int jnumber(jr *j, double *d, int *is_int, long long *ll) {
    const unsigned char *s = j->p;
    int integral = 1;
    if (j->p < j->end && *j->p == '-') j->p++;
    if (j->p >= j->end || *j->p < '0' || *j->p > '9') return jfail(j, "json", "%s: bad number", j->what);
    if (*j->p == '0') j->p++;
    else while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    if (j->p < j->end && *j->p == '.') {
        integral = 0;
        j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9') return jfail(j, "json", "%s: bad number", j->what);
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        integral = 0;
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-')) j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9') return jfail(j, "json", "%s: bad number", j->what);
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    }
    char buf[400];
    size_t n = (size_t)(j->p - s);
    if (n >= sizeof buf) return jfail(j, "json", "%s: number of %zu characters", j->what, n);
    memcpy(buf, s, n);
    buf[n] = '\0';
    const char *point = localeconv()->decimal_point; /* strtod follows the C library's locale */
    if (point && point[0] && point[0] != '.' && !point[1]) {
        char *dot = strchr(buf, '.');
        if (dot) *dot = point[0];
    }
    errno = 0;
    *d = strtod(buf, NULL);
    if (!isfinite(*d)) return jfail(j, "json", "%s: number %s out of range", j->what, buf);
    *is_int = integral;
    if (integral && ll) {
        errno = 0;
        *ll = strtoll(buf, NULL, 10);
        if (errno == ERANGE) return jfail(j, "json", "%s: integer %s out of range", j->what, buf);
    }
    return 0;
}

static int jliteral(jr *j, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0)
        return jfail(j, "json", "%s: unexpected character '%c'", j->what, *j->p);
    j->p += n;
    return 0;
}

static int jskip(jr *j);

/* Walk an object or array at j->p, calling jskip on every value. */
static int jskip_container(jr *j) {
    unsigned char open = *j->p, close = open == '{' ? '}' : ']';
    if (++j->depth > JSON_DEPTH) return jfail(j, "json", "%s: nested beyond depth %d", j->what, JSON_DEPTH);
    j->p++;
    jws(j);
    if (j->p < j->end && *j->p == close) { j->p++; j->depth--; return 0; }
    for (;;) {
        jws(j);
        if (open == '{') {
            if (jstring(j, NULL, 0, NULL, NULL)) return -1;
            jws(j);
            if (j->p >= j->end || *j->p != ':') return jfail(j, "json", "%s: expected ':'", j->what);
            j->p++;
        }
        if (jskip(j)) return -1;
        jws(j);
        if (j->p < j->end && *j->p == ',') { j->p++; continue; }
        if (j->p < j->end && *j->p == close) { j->p++; j->depth--; return 0; }
        return jfail(j, "json", "%s: expected ',' or '%c'", j->what, close);
    }
}

static int jskip(jr *j) {
    jws(j);
    if (j->p >= j->end) return jfail(j, "json", "%s: unexpected end", j->what);
    double d;
    int is_int;
    switch (*j->p) {
    case '{': case '[': return jskip_container(j);
    case '"': return jstring(j, NULL, 0, NULL, NULL);
    case 't': return jliteral(j, "true");
    case 'f': return jliteral(j, "false");
    case 'n': return jliteral(j, "null");
    default: return jnumber(j, &d, &is_int, NULL);
    }
}

/* The JSON type of the value at p, for error details. */
static const char *jtype(const unsigned char *p, const unsigned char *end) {
    if (p >= end) return "nothing";
    switch (*p) {
    case '{': return "an object";
    case '[': return "an array";
    case '"': return "a string";
    case 't': case 'f': return "true/false";
    case 'n': return "null";
    default:
        if (*p != '-' && (*p < '0' || *p > '9')) return "no JSON value";
        for (; p < end && (*p == '-' || (*p >= '0' && *p <= '9')); p++) {}
        return (p < end && (*p == '.' || *p == 'e' || *p == 'E')) ? "a number with a fraction or exponent" : "a number";
    }
}

enum jkind { J_INT, J_NUM, J_BOOL, J_STR, J_INTS, J_NUMS, J_STRS };
static const char *const jkind_names[] = {"an integer", "a number", "true/false", "a string",
                                          "a list of integers", "a list of numbers", "a list of strings"};

typedef struct {
    const char *name;
    enum jkind kind;
    int required;
    char *str;      /* J_STR: where the string goes */
    size_t cap;     /* its capacity with the NUL */
    int may_trunc;  /* a longer string is truncated (else refused) */
    /* results */
    int seen;
    long long i;
    double d;
    int b;
    size_t count, bytes;          /* lists: elements, and decoded bytes of a list of strings */
    const unsigned char *at;      /* where the value starts, for jfill */
} jfield;

/* One value of field f (kind J_INT, J_NUM, J_BOOL, J_STR), or a list's element (elem = 1). */
static int jscalar(jr *j, jfield *f, enum jkind kind, size_t index, int elem, double *d, long long *ll,
                   size_t *bytes) {
    const unsigned char *at = j->p;
    int is_int = 0;
    if (kind == J_STR) {
        if (at >= j->end || *at != '"') goto wrong;
        size_t n;
        int tr;
        if (jstring(j, elem ? NULL : f->str, elem ? 0 : f->cap, &n, &tr)) return -1;
        if (!elem && tr && !f->may_trunc)
            return jfail(j, "field", "%s field '%s' is longer than %zu bytes", j->what, f->name, f->cap - 1);
        if (bytes) *bytes = n;
        return 0;
    }
    if (kind == J_BOOL) {
        if (at < j->end && *at == 't') { *ll = 1; return jliteral(j, "true"); }
        if (at < j->end && *at == 'f') { *ll = 0; return jliteral(j, "false"); }
        goto wrong;
    }
    if (at >= j->end || !(*at == '-' || (*at >= '0' && *at <= '9'))) goto wrong;
    if (jnumber(j, d, &is_int, kind == J_INT ? ll : NULL)) return -1;
    if (kind == J_INT && !is_int) goto wrong;
    return 0;
wrong:;
    jr syntax = *j;  /* a value that is not JSON at all is a json error, not a field's type */
    syntax.p = at;
    if (jskip(&syntax)) return -1;
    if (elem)
        return jfail(j, "field", "%s field '%s' must be %s, element %zu is %s", j->what, f->name,
                     jkind_names[f->kind], index, jtype(at, j->end));
    return jfail(j, "field", "%s field '%s' must be %s, got %s", j->what, f->name, jkind_names[kind],
                 jtype(at, j->end));
}

/* A list at j->p whose elements are of f's element kind: counted (and, with a destination,
 * stored: ints, doubles, or strings into names/ptrs). */
static int jlist(jr *j, jfield *f, int *ints, double *nums, char **names, const char **ptrs) {
    enum jkind elem = f->kind == J_INTS ? J_INT : f->kind == J_NUMS ? J_NUM : J_STR;
    if (j->p >= j->end || *j->p != '[')
        return jfail(j, "field", "%s field '%s' must be %s, got %s", j->what, f->name, jkind_names[f->kind],
                     jtype(j->p, j->end));
    j->p++;
    size_t count = 0, bytes = 0;
    jws(j);
    if (j->p < j->end && *j->p == ']') { j->p++; goto done; }
    for (;;) {
        jws(j);
        double d = 0;
        long long ll = 0;
        size_t n = 0;
        if (elem == J_STR && names) {
            const unsigned char *start = j->p;
            if (jscalar(j, f, J_STR, count, 1, &d, &ll, &n)) return -1;
            jr again = *j;  /* decode once more, now into the names buffer */
            again.p = start;
            if (jstring(&again, *names, n + 1, NULL, NULL)) return -1;
            ptrs[count] = *names;
            *names += n + 1;
        } else if (jscalar(j, f, elem, count, 1, &d, &ll, &n)) {
            return -1;
        }
        if (elem == J_INT) {
            if (ints) {
                if (ll < -2147483647LL || ll > 2147483647LL)
                    return jfail(j, "field", "%s field '%s' element %zu out of range", j->what, f->name, count);
                ints[count] = (int)ll;
            }
        } else if (elem == J_NUM && nums) {
            nums[count] = d;
        }
        bytes += n + 1;
        count++;
        jws(j);
        if (j->p < j->end && *j->p == ',') { j->p++; continue; }
        if (j->p < j->end && *j->p == ']') { j->p++; break; }
        return jfail(j, "json", "%s: expected ',' or ']' in field '%s'", j->what, f->name);
    }
done:
    f->count = count;
    f->bytes = bytes;
    return 0;
}

/* Read the object in [json, json + len) against the fields (pass 1: scalars stored, lists
 * counted and their place kept for jfill). */
static int jobject(jr *j, jfield *fields, size_t nfields) {
    const unsigned char *start = j->p;
    jws(j);
    if (j->p >= j->end || *j->p != '{')
        return jfail(j, "json", "the %s payload must be a JSON object, got %s", j->what, jtype(j->p, j->end));
    j->p++;
    j->depth = 1;
    jws(j);
    int empty = j->p < j->end && *j->p == '}';
    if (empty) j->p++;
    while (!empty) {
        jws(j);
        char key[64];
        size_t klen;
        int ktr;
        if (jstring(j, key, sizeof key, &klen, &ktr)) return -1;
        jws(j);
        if (j->p >= j->end || *j->p != ':') return jfail(j, "json", "%s: expected ':' at byte %zu", j->what, joffset(j, start));
        j->p++;
        jws(j);
        jfield *f = NULL;
        for (size_t i = 0; i < nfields && !ktr; i++)
            if (strlen(fields[i].name) == klen && memcmp(fields[i].name, key, klen) == 0) f = &fields[i];
        if (!f) {
            if (jskip(j)) return -1;
        } else {
            if (f->seen) return jfail(j, "field", "%s field '%s' appears twice", j->what, f->name);
            f->seen = 1;
            f->at = j->p;
            if (f->kind >= J_INTS) {
                if (jlist(j, f, NULL, NULL, NULL, NULL)) return -1;
            } else if (jscalar(j, f, f->kind, 0, 0, &f->d, &f->i, NULL)) {
                return -1;
            }
            if (f->kind == J_BOOL) f->b = (int)f->i;
        }
        jws(j);
        if (j->p < j->end && *j->p == ',') { j->p++; continue; }
        if (j->p < j->end && *j->p == '}') { j->p++; break; }
        return jfail(j, "json", "%s: expected ',' or '}' at byte %zu", j->what, joffset(j, start));
    }
    jws(j);
    if (j->p != j->end) return jfail(j, "json", "%s: extra data after the object at byte %zu", j->what, joffset(j, start));
    for (size_t i = 0; i < nfields; i++)
        if (fields[i].required && !fields[i].seen)
            return jfail(j, "field", "%s needs field '%s' (%s)", j->what, fields[i].name, jkind_names[fields[i].kind]);
    return 0;
}

/* Pass 2: store a list found by jobject. */
static int jfill(jr *j, jfield *f, int *ints, double *nums, char **names, const char **ptrs) {
    if (!f->seen) return 0;
    j->p = f->at;
    return jlist(j, f, ints, nums, names, ptrs);
}

/* ------------------------------------------------------------------ CONFIG */
enum { F_PROTOCOL, F_ROBOT, F_NQ, F_NV, F_NU, F_NC, F_QNAMES, F_UNAMES, F_CONTACTS, F_QINDEX, F_VINDEX, F_UMAX,
       F_Q0, F_MODE, F_RATE, F_PLANT_RATE, F_DEADLINE, F_HOLD, F_SAFE_KP, F_DAMPING, F_FLOATING, F_FORCE_COLS,
       F_QUAT, F_VFRAME, F_COUNT };

void legmpc_config_release(legmpc_config *cfg) {
    if (!cfg) return;
    free(cfg->storage_);
    memset(cfg, 0, sizeof *cfg);
}

int legmpc_config_parse(const char *json, size_t len, legmpc_config *cfg, char *err, size_t errlen) {
    if (err && errlen) err[0] = '\0';
    if (!cfg || (!json && len)) {
        if (err && errlen) copy_text(err, errlen, "field: legmpc_config_parse needs a payload and a config");
        return -1;
    }
    memset(cfg, 0, sizeof *cfg);
    jr j = {(const unsigned char *)json, (const unsigned char *)json + len, 0, err, errlen, "CONFIG"};
    if (len > MAX_JSON_BYTES) return jfail(&j, "too_large", "CONFIG payload of %zu bytes > %u", len, MAX_JSON_BYTES);
    char mode[16] = "";
    jfield f[F_COUNT] = {
        [F_PROTOCOL] = {"protocol", J_INT, 1}, [F_ROBOT] = {"robot", J_STR, 1, cfg->robot, sizeof cfg->robot},
        [F_NQ] = {"nq", J_INT, 1}, [F_NV] = {"nv", J_INT, 1}, [F_NU] = {"nu", J_INT, 1}, [F_NC] = {"nc", J_INT, 1},
        [F_QNAMES] = {"q_names", J_STRS, 1}, [F_UNAMES] = {"u_names", J_STRS, 1},
        [F_CONTACTS] = {"contacts", J_STRS, 1}, [F_QINDEX] = {"q_index", J_INTS, 1},
        [F_VINDEX] = {"v_index", J_INTS, 1}, [F_UMAX] = {"u_max", J_NUMS, 1}, [F_Q0] = {"q0", J_NUMS, 1},
        [F_MODE] = {"mode", J_STR, 1, mode, sizeof mode}, [F_RATE] = {"control_rate_hz", J_NUM, 1},
        [F_PLANT_RATE] = {"plant_rate_hz", J_NUM, 1}, [F_DEADLINE] = {"deadline_s", J_NUM, 1},
        [F_HOLD] = {"hold_ticks", J_INT, 1}, [F_SAFE_KP] = {"safe_kp", J_NUM, 1},
        [F_DAMPING] = {"damping_kd", J_NUM, 1}, [F_FLOATING] = {"floating_base", J_BOOL, 1},
        [F_FORCE_COLS] = {"force_columns", J_STRS, 1},
        [F_QUAT] = {"quaternion_order", J_STR, 0, cfg->quaternion_order, sizeof cfg->quaternion_order},
        [F_VFRAME] = {"base_velocity_frame", J_STR, 0, cfg->base_velocity_frame, sizeof cfg->base_velocity_frame},
    };
    if (jobject(&j, f, F_COUNT)) goto fail;
    if (f[F_PROTOCOL].i != LEGMPC_PROTOCOL_VERSION) {
        jfail(&j, "version", "the plant speaks protocol %lld, this client %d", f[F_PROTOCOL].i, LEGMPC_PROTOCOL_VERSION);
        goto fail;
    }
    cfg->protocol = (int)f[F_PROTOCOL].i;
    static const int dims[] = {F_NQ, F_NV, F_NU, F_NC};
    for (size_t i = 0; i < 4; i++) {
        long long v = f[dims[i]].i;
        if (v < (dims[i] <= F_NV ? 1 : 0) || v > MAX_DIM) {
            jfail(&j, "field", "CONFIG field '%s' is %lld, outside [%d, %d]", f[dims[i]].name, v, dims[i] <= F_NV, MAX_DIM);
            goto fail;
        }
    }
    cfg->nq = (int)f[F_NQ].i, cfg->nv = (int)f[F_NV].i, cfg->nu = (int)f[F_NU].i, cfg->nc = (int)f[F_NC].i;
    struct { int field; size_t want; } lengths[] = {
        {F_QNAMES, (size_t)cfg->nq}, {F_UNAMES, (size_t)cfg->nu}, {F_CONTACTS, (size_t)cfg->nc},
        {F_QINDEX, (size_t)cfg->nu}, {F_VINDEX, (size_t)cfg->nu}, {F_UMAX, (size_t)cfg->nu}, {F_Q0, (size_t)cfg->nq}};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++)
        if (f[lengths[i].field].count != lengths[i].want) {
            jfail(&j, "field", "CONFIG field '%s' has %zu elements, expected %zu", f[lengths[i].field].name,
                  f[lengths[i].field].count, lengths[i].want);
            goto fail;
        }
    cfg->nf = (int)f[F_FORCE_COLS].count;
    if (strcmp(mode, "lockstep") != 0 && strcmp(mode, "realtime") != 0) {
        jfail(&j, "field", "CONFIG field 'mode' is '%s', expected lockstep or realtime", mode);
        goto fail;
    }
    copy_text(cfg->mode, sizeof cfg->mode, mode);
    cfg->control_rate_hz = f[F_RATE].d, cfg->plant_rate_hz = f[F_PLANT_RATE].d, cfg->deadline_s = f[F_DEADLINE].d;
    cfg->safe_kp = f[F_SAFE_KP].d, cfg->damping_kd = f[F_DAMPING].d;
    if (!(cfg->control_rate_hz > 0) || !(cfg->plant_rate_hz > 0) || !(cfg->deadline_s > 0) || cfg->safe_kp < 0 ||
        cfg->damping_kd < 0 || f[F_HOLD].i < 0 || f[F_HOLD].i > 2147483647LL) {
        jfail(&j, "field", "CONFIG rates and deadline must be > 0, safe_kp, damping_kd and hold_ticks >= 0");
        goto fail;
    }
    cfg->hold_ticks = (int)f[F_HOLD].i;
    cfg->floating_base = f[F_FLOATING].b;
    if (cfg->floating_base && (strcmp(cfg->quaternion_order, "xyzw") != 0 || strcmp(cfg->base_velocity_frame, "base") != 0)) {
        jfail(&j, "field", "a floating base needs quaternion_order 'xyzw' and base_velocity_frame 'base', got '%s' and '%s'",
              cfg->quaternion_order, cfg->base_velocity_frame);
        goto fail;
    }
    /* one block: doubles, name pointers, ints, name bytes */
    size_t nq = (size_t)cfg->nq, nu = (size_t)cfg->nu, nc = (size_t)cfg->nc;
    size_t nptr = nq + nu + nc + 3, nbytes = f[F_QNAMES].bytes + f[F_UNAMES].bytes + f[F_CONTACTS].bytes + f[F_FORCE_COLS].bytes;
    size_t size = (nu + nq) * sizeof(double) + nptr * sizeof(char *) + 2 * nu * sizeof(int) + nbytes + 1;
    unsigned char *block = calloc(1, size);
    if (!block) {
        jfail(&j, "internal", "out of memory for CONFIG (%zu bytes)", size);
        goto fail;
    }
    cfg->storage_ = block;
    cfg->u_max = (double *)block;
    cfg->q0 = cfg->u_max + nu;
    const char **ptrs = (const char **)(cfg->q0 + nq);
    cfg->q_names = ptrs, cfg->u_names = ptrs + nq, cfg->contacts = ptrs + nq + nu;
    const char **cols = ptrs + nq + nu + nc;
    cfg->q_index = (int *)(ptrs + nptr);
    cfg->v_index = cfg->q_index + nu;
    char *names = (char *)(cfg->v_index + nu);
    if (jfill(&j, &f[F_UMAX], NULL, cfg->u_max, NULL, NULL) || jfill(&j, &f[F_Q0], NULL, cfg->q0, NULL, NULL) ||
        jfill(&j, &f[F_QINDEX], cfg->q_index, NULL, NULL, NULL) || jfill(&j, &f[F_VINDEX], cfg->v_index, NULL, NULL, NULL) ||
        jfill(&j, &f[F_QNAMES], NULL, NULL, &names, cfg->q_names) ||
        jfill(&j, &f[F_UNAMES], NULL, NULL, &names, cfg->u_names) ||
        jfill(&j, &f[F_CONTACTS], NULL, NULL, &names, cfg->contacts) ||
        (cfg->nf <= 3 && jfill(&j, &f[F_FORCE_COLS], NULL, NULL, &names, cols)))
        goto fail;
    static const char *const columns[] = {"normal", "x", "y"};
    int cols_ok = cfg->nf == 2 || cfg->nf == 3;
    for (int i = 0; cols_ok && i < cfg->nf; i++) cols_ok = strcmp(cols[i], columns[i]) == 0;
    if (!cols_ok) {
        jfail(&j, "field", "CONFIG field 'force_columns' must be [\"normal\", \"x\"] or [\"normal\", \"x\", \"y\"]");
        goto fail;
    }
    for (size_t k = 0; k < nu; k++)
        if (cfg->q_index[k] < 0 || cfg->q_index[k] >= cfg->nq || cfg->v_index[k] < 0 || cfg->v_index[k] >= cfg->nv) {
            jfail(&j, "field", "CONFIG q_index/v_index of actuator %zu (%d, %d) outside q (%d) or v (%d)", k,
                  cfg->q_index[k], cfg->v_index[k], cfg->nq, cfg->nv);
            goto fail;
        }
    return 0;
fail:
    legmpc_config_release(cfg);
    return -1;
}

/* ------------------------------------------------------------------ the client */
struct sent { int type; uint32_t seq; };

struct legmpc_client {
    void *ctx, *sock;
    int connected, ended;
    char errmsg[512];
    char endpoint[256];
    legmpc_config cfg;
    /* the message being received: header, frame lengths, where the arrays went */
    unsigned char hdr[HDR_CAP];
    size_t nframes, flen[MAX_FRAMES], total;
    unsigned char *json;           /* MAX_JSON_BYTES + 1 */
    unsigned char *stage;          /* a STATE's five frames */
    size_t st_off[5], st_size[5];
    unsigned char scratch[64];
    /* the newest STATE read and not yet delivered */
    int pend;
    uint32_t pend_tick, pend_skipped;
    double pend_t;
    int64_t pend_wall;
    double *pq, *pv, *pforce;
    uint8_t *pcontact, pstatus;
    /* ERRORs to deliver, and the messages we sent that may still be answered */
    legmpc_error errq[ERR_CAP];
    int err_head, err_n;
    legmpc_error last_error;
    struct sent sentq[SENT_CAP];
    int sent_n;
    char bye[256];
    /* sending */
    unsigned char cmd_hdr[FIXED_SIZE + 8 * DESC_SIZE];
    unsigned char *tx;             /* 5 nu doubles, valid_until, t_offset, the 8-number report */
    int64_t read_ns, read_cpu_ns;  /* when the last STATE was delivered (the report's start) */
    legmpc_stats stats;
};

static int fail(legmpc_client *c, int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->errmsg, sizeof c->errmsg, fmt, ap);
    va_end(ap);
    return code;
}

const char *legmpc_code_name(int code) {
    switch (code) {
    case LEGMPC_OK: return "LEGMPC_OK";
    case LEGMPC_EV_STATE: return "LEGMPC_EV_STATE";
    case LEGMPC_EV_ERROR: return "LEGMPC_EV_ERROR";
    case LEGMPC_EV_BYE: return "LEGMPC_EV_BYE";
    case LEGMPC_E_ARGUMENT: return "LEGMPC_E_ARGUMENT";
    case LEGMPC_E_MEMORY: return "LEGMPC_E_MEMORY";
    case LEGMPC_E_ZMQ: return "LEGMPC_E_ZMQ";
    case LEGMPC_E_KEYS: return "LEGMPC_E_KEYS";
    case LEGMPC_E_TIMEOUT: return "LEGMPC_E_TIMEOUT";
    case LEGMPC_E_REFUSED: return "LEGMPC_E_REFUSED";
    case LEGMPC_E_PROTOCOL: return "LEGMPC_E_PROTOCOL";
    case LEGMPC_E_CONFIG: return "LEGMPC_E_CONFIG";
    case LEGMPC_E_ENDED: return "LEGMPC_E_ENDED";
    default: return "LEGMPC_E_UNKNOWN";
    }
}

legmpc_client *legmpc_new(void) {
    legmpc_client *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->json = malloc(MAX_JSON_BYTES + 1);
    if (!c->json) { free(c); return NULL; }
    return c;
}

static void teardown(legmpc_client *c) {
    if (c->sock) zmq_close(c->sock);
    if (c->ctx) zmq_ctx_term(c->ctx);
    c->sock = c->ctx = NULL;
    free(c->stage);
    free(c->pq);
    free(c->tx);
    c->stage = c->tx = NULL;
    c->pq = c->pv = c->pforce = NULL;
    c->pcontact = NULL;
    legmpc_config_release(&c->cfg);
    c->connected = 0;
}

void legmpc_close(legmpc_client *c) {
    if (!c) return;
    teardown(c);
    free(c->json);
    free(c);
}

const legmpc_config *legmpc_config_get(const legmpc_client *c) { return c && c->connected ? &c->cfg : NULL; }
const legmpc_error *legmpc_plant_error(const legmpc_client *c) { return c ? &c->last_error : NULL; }
const char *legmpc_bye_reason(const legmpc_client *c) { return c ? c->bye : ""; }
const char *legmpc_errmsg(const legmpc_client *c) { return c ? c->errmsg : "legmpc: no client (out of memory?)"; }
void legmpc_get_stats(const legmpc_client *c, legmpc_stats *out) {
    if (c && out) *out = c->stats;
}

/* ------------------------------------------------------------------ messages we sent */
static void sent_push(legmpc_client *c, int type, uint32_t seq) {
    if (c->sent_n == SENT_CAP) {  /* the oldest is long answered or accepted */
        memmove(c->sentq, c->sentq + 1, (SENT_CAP - 1) * sizeof c->sentq[0]);
        c->sent_n--;
    }
    c->sentq[c->sent_n++] = (struct sent){type, seq};
}

static void sent_drop(legmpc_client *c, int count) {  /* the oldest `count` */
    memmove(c->sentq, c->sentq + count, (size_t)(c->sent_n - count) * sizeof c->sentq[0]);
    c->sent_n -= count;
}

/* The plant accepted our COMMAND(k) (STATE(k+1) says ok): it has read everything we sent up to
 * that COMMAND, and any of those it refused was answered before this STATE. */
static void sent_accepted(legmpc_client *c, uint32_t k) {
    for (int i = 0; i < c->sent_n; i++)
        if (c->sentq[i].type == LEGMPC_MSG_COMMAND && c->sentq[i].seq == k) { sent_drop(c, i + 1); return; }
}

/* The plant reads our messages in the order we sent them and answers each it refuses with one
 * ERROR at once (docs/PROTOCOL.md, Errors: the n-th ERROR answers the n-th refused message).
 * We keep HELLO and the COMMANDs (a PLAN is only sent when the plant has no reason to refuse
 * it); an accepted COMMAND(k) leaves the list when STATE(k+1) says ok, which the plant sends
 * before it reads anything we sent later. So an ERROR answers the oldest message left that
 * can get its reason (sequence, value: only a COMMAND; robot, json, field, sensors: only HELLO). */
static struct sent sent_match(legmpc_client *c, const char *reason) {
    int mask = ~0;
    if (!strcmp(reason, "sequence") || !strcmp(reason, "value") || !strcmp(reason, "unexpected"))
        mask = 1 << LEGMPC_MSG_COMMAND;
    else if (!strcmp(reason, "robot") || !strcmp(reason, "json") || !strcmp(reason, "field") || !strcmp(reason, "sensors"))
        mask = 1 << LEGMPC_MSG_HELLO;
    for (int i = 0; i < c->sent_n; i++)
        if (mask & (1 << c->sentq[i].type)) {
            struct sent s = c->sentq[i];
            memmove(c->sentq + i, c->sentq + i + 1, (size_t)(c->sent_n - i - 1) * sizeof c->sentq[0]);
            c->sent_n--;
            return s;
        }
    return (struct sent){0, 0};
}

static void err_push(legmpc_client *c, const legmpc_error *e) {
    if (c->err_n == ERR_CAP) {  /* keep the newest ERR_CAP */
        c->err_head = (c->err_head + 1) % ERR_CAP;
        c->err_n--;
    }
    c->errq[(c->err_head + c->err_n) % ERR_CAP] = *e;
    c->err_n++;
    if (e->local) c->stats.local_errors++;
    else c->stats.errors++;
}

/* ------------------------------------------------------------------ receiving */
/* Read one whole message (every frame, whatever it holds) without blocking. Returns 1 when
 * one was read, 0 when none was queued, -1 when libzmq failed. Frames go to c->hdr, then: a
 * STATE's arrays to c->stage, a JSON payload to c->json, anything else to scratch; c->flen
 * holds each frame's real length (a longer frame was cut: the check below refuses it). */
static int rx_read(legmpc_client *c) {
    int n = zmq_recv(c->sock, c->hdr, HDR_CAP, ZMQ_DONTWAIT);
    if (n < 0) {
        if (zmq_errno() == EAGAIN || zmq_errno() == EINTR) return 0;
        return fail(c, -1, "receiving from %s: %s", c->endpoint, zmq_strerror(zmq_errno()));
    }
    c->nframes = 1, c->flen[0] = (size_t)n, c->total = (size_t)n;
    int type = n >= FIXED_SIZE && !memcmp(c->hdr, "LMPC", 4) ? rd16(c->hdr + 6) : 0;
    for (;;) {
        int more = 0;
        size_t sz = sizeof more;
        if (zmq_getsockopt(c->sock, ZMQ_RCVMORE, &more, &sz) != 0 || !more) break;
        size_t i = c->nframes;
        void *dst = c->scratch;
        size_t cap = sizeof c->scratch;
        if (type == LEGMPC_MSG_STATE && c->stage && i <= 5) dst = c->stage + c->st_off[i - 1], cap = c->st_size[i - 1];
        else if ((type == LEGMPC_MSG_CONFIG || type == LEGMPC_MSG_ERROR || type == LEGMPC_MSG_BYE) && i == 1)
            dst = c->json, cap = MAX_JSON_BYTES + 1;
        n = zmq_recv(c->sock, dst, cap, 0);  /* the rest of a message is there already */
        if (n < 0) return fail(c, -1, "receiving from %s: %s", c->endpoint, zmq_strerror(zmq_errno()));
        if (i < MAX_FRAMES) c->flen[i] = (size_t)n;
        c->nframes++;
        c->total += (size_t)n;
    }
    return 1;
}

struct schema { const char *name; int dtype, ndim; uint32_t d0, d1; int free0; };

/* Check the message read by rx_read as the plant checks ours (docs/PROTOCOL.md, "Errors",
 * in that order). Returns NULL when it is fine, else the reason, with the detail in detail. */
static const char *rx_check(legmpc_client *c, char *detail, size_t dl) {
    const unsigned char *h = c->hdr;
    if (c->total > MAX_MESSAGE_BYTES) return snprintf(detail, dl, "message of %zu bytes", c->total), "too_large";
    if (c->nframes > MAX_FRAMES) return snprintf(detail, dl, "%zu frames", c->nframes), "frames";
    if (c->flen[0] < FIXED_SIZE) return snprintf(detail, dl, "header of %zu bytes", c->flen[0]), "truncated";
    if (memcmp(h, "LMPC", 4) != 0) return snprintf(detail, dl, "magic is not LMPC"), "magic";
    unsigned version = rd16(h + 4), type = rd16(h + 6);
    if (version != LEGMPC_PROTOCOL_VERSION)
        return snprintf(detail, dl, "the plant speaks protocol version %u, this client version %d: update one of them",
                        version, LEGMPC_PROTOCOL_VERSION), "version";
    if (type < 1 || type > 7) return snprintf(detail, dl, "message type %u", type), "type";
    int is_json = type == LEGMPC_MSG_CONFIG || type == LEGMPC_MSG_ERROR || type == LEGMPC_MSG_BYE;
    if (!is_json && !(type == LEGMPC_MSG_STATE && c->stage))
        return snprintf(detail, dl, "message type %u from the plant%s", type,
                        type == LEGMPC_MSG_STATE ? " before CONFIG" : ""), "unexpected";
    const legmpc_config *g = &c->cfg;
    struct schema sc[5] = {{"json", DT_U8, 1, 0, 0, 1}};
    uint32_t count = 1;
    if (!is_json) {
        count = 5;
        sc[0] = (struct schema){"q", DT_F64, 1, (uint32_t)g->nq, 0, 0};
        sc[1] = (struct schema){"v", DT_F64, 1, (uint32_t)g->nv, 0, 0};
        sc[2] = (struct schema){"contact", DT_U8, 1, (uint32_t)g->nc, 0, 0};
        sc[3] = (struct schema){"force", DT_F64, 2, (uint32_t)g->nc, (uint32_t)g->nf, 0};
        sc[4] = (struct schema){"status", DT_U8, 1, 1, 0, 0};
    }
    uint32_t n = rd32(h + 28);
    if (n != count) return snprintf(detail, dl, "%u arrays, the schema has %u", n, count), "count";
    if (c->flen[0] != FIXED_SIZE + DESC_SIZE * count)
        return snprintf(detail, dl, "header of %zu bytes for %u arrays", c->flen[0], count), "truncated";
    if (c->nframes != 1 + count) return snprintf(detail, dl, "%zu array frames, expected %u", c->nframes - 1, count), "frames";
    if (!isfinite(rdf64(h + 12))) return snprintf(detail, dl, "sim time is not finite"), "non_finite";
    for (uint32_t i = 0; i < count; i++) {
        const unsigned char *d = h + FIXED_SIZE + DESC_SIZE * i;
        unsigned fid = rd16(d), dtype = d[2], ndim = d[3];
        uint32_t d0 = rd32(d + 4), d1 = rd32(d + 8), reserved = rd32(d + 12);
        const char *name = sc[i].name;
        if (fid != i || ndim < 1 || ndim > 2 || (ndim == 1 && d1 != 0) || reserved != 0)
            return snprintf(detail, dl, "%s: field id %u, ndim %u, dim1 %u, reserved %u", name, fid, ndim, d1, reserved),
                   "descriptor";
        if (dtype != (unsigned)sc[i].dtype) return snprintf(detail, dl, "%s: dtype %u, expected %d", name, dtype, sc[i].dtype), "dtype";
        if ((int)ndim != sc[i].ndim || (!sc[i].free0 && d0 != sc[i].d0) || (ndim == 2 && d1 != sc[i].d1))
            return snprintf(detail, dl, "%s: shape (%u, %u), expected (%u, %u)", name, d0, d1, sc[i].d0, sc[i].d1), "shape";
        size_t len = c->flen[1 + i];
        if (len > MAX_FRAME_BYTES) return snprintf(detail, dl, "%s: %zu bytes", name, len), "too_large";
        uint64_t want = (uint64_t)d0 * (ndim == 2 ? d1 : 1) * (dtype == DT_U8 ? 1 : 8);
        if (len != want) return snprintf(detail, dl, "%s: %zu bytes, the descriptor says %llu", name, len,
                                         (unsigned long long)want), "size";
        if (dtype == DT_F64)
            for (size_t k = 0; k < len; k += 8)
                if (!isfinite(rdf64(c->stage + c->st_off[i] + k))) return snprintf(detail, dl, "%s contains NaN or inf", name), "non_finite";
    }
    if (is_json && c->flen[1] > MAX_JSON_BYTES) return snprintf(detail, dl, "JSON payload of %zu bytes", c->flen[1]), "too_large";
    return NULL;
}

static void local_error(legmpc_client *c, const char *reason, const char *detail) {
    legmpc_error e = {.local = 1};
    copy_text(e.reason, sizeof e.reason, reason);
    snprintf(e.detail, sizeof e.detail, "a message from the plant refused here: %s", detail);
    err_push(c, &e);
}

/* The ERROR or BYE payload in c->json: reason (and detail). */
static int read_reason(legmpc_client *c, int type, char *reason, size_t rcap, char *detail, size_t dcap, char *err, size_t el) {
    err[0] = '\0';
    jr j = {c->json, c->json + c->flen[1], 0, err, el, type == LEGMPC_MSG_ERROR ? "ERROR" : "BYE"};
    jfield f[2] = {{.name = "reason", .kind = J_STR, .required = 1, .str = reason, .cap = rcap, .may_trunc = 1},
                   {.name = "detail", .kind = J_STR, .required = 0, .str = detail, .cap = dcap, .may_trunc = 1}};
    if (detail) detail[0] = '\0';
    return jobject(&j, f, detail ? 2 : 1);
}

/* Handle the message rx_read read, after the connect: a STATE becomes the pending one, an
 * ERROR is queued, BYE ends the run; a malformed one is queued as a local error. */
static void rx_handle(legmpc_client *c) {
    char detail[256], err[300];
    const char *bad = rx_check(c, detail, sizeof detail);
    if (bad) { local_error(c, bad, detail); return; }
    unsigned type = rd16(c->hdr + 6);
    uint32_t seq = rd32(c->hdr + 8);
    if (type == LEGMPC_MSG_STATE) {
        const legmpc_config *g = &c->cfg;
        c->stats.states++;
        if (c->pend) { c->pend_skipped++; c->stats.skipped++; }
        c->pend = 1;
        c->pend_tick = seq, c->pend_t = rdf64(c->hdr + 12), c->pend_wall = (int64_t)rd64(c->hdr + 20);
        for (int i = 0; i < g->nq; i++) c->pq[i] = rdf64(c->stage + c->st_off[0] + 8 * (size_t)i);
        for (int i = 0; i < g->nv; i++) c->pv[i] = rdf64(c->stage + c->st_off[1] + 8 * (size_t)i);
        memcpy(c->pcontact, c->stage + c->st_off[2], (size_t)g->nc);
        for (int i = 0; i < g->nc * g->nf; i++) c->pforce[i] = rdf64(c->stage + c->st_off[3] + 8 * (size_t)i);
        c->pstatus = c->stage[c->st_off[4]];
        if (c->pstatus == LEGMPC_STATUS_OK && seq > 0) sent_accepted(c, seq - 1);
    } else if (type == LEGMPC_MSG_ERROR) {
        legmpc_error e = {.tick = seq};
        if (read_reason(c, LEGMPC_MSG_ERROR, e.reason, sizeof e.reason, e.detail, sizeof e.detail, err, sizeof err)) {
            const char *colon = strchr(err, ':');
            char reason[32];
            copy_text(reason, sizeof reason, err);
            if (colon && (size_t)(colon - err) < sizeof reason) reason[colon - err] = '\0';
            local_error(c, reason, err);
            return;
        }
        struct sent s = sent_match(c, e.reason);
        e.answers_type = s.type, e.answers_seq = s.seq;
        err_push(c, &e);
    } else if (type == LEGMPC_MSG_BYE) {
        if (read_reason(c, LEGMPC_MSG_BYE, c->bye, sizeof c->bye, NULL, 0, err, sizeof err))
            snprintf(c->bye, sizeof c->bye, "BYE with an unreadable payload (%.200s)", err);
        c->ended = 1;
    } else {  /* CONFIG again: we sent one HELLO, so not ours to act on */
        local_error(c, "unexpected", "CONFIG after the connection was set up (ignored)");
    }
}

/* Read every message queued now; stop at BYE. 0, or LEGMPC_E_ZMQ. */
static int drain(legmpc_client *c) {
    for (int k = 0; k < DRAIN_MAX && !c->ended; k++) {
        int r = rx_read(c);
        if (r < 0) return LEGMPC_E_ZMQ;
        if (r == 0) return 0;
        rx_handle(c);
    }
    return 0;
}

/* Wait up to timeout_ms (-1: forever) for a message. 1: one is queued, 0: timeout, < 0: failure. */
static int wait_readable(legmpc_client *c, int timeout_ms) {
    double until = monotonic_ms() + timeout_ms;
    for (;;) {
        zmq_pollitem_t item = {c->sock, 0, ZMQ_POLLIN, 0};
        long wait = timeout_ms < 0 ? -1 : (long)(until - monotonic_ms() + 0.999);
        if (wait < 0 && timeout_ms >= 0) wait = 0;
        int r = zmq_poll(&item, 1, wait);
        if (r > 0) return 1;
        if (r == 0) return 0;
        if (zmq_errno() != EINTR) return fail(c, LEGMPC_E_ZMQ, "polling %s: %s", c->endpoint, zmq_strerror(zmq_errno()));
        if (timeout_ms >= 0 && monotonic_ms() >= until) return 0;
    }
}

int legmpc_recv(legmpc_client *c, legmpc_state *s, int timeout_ms) {
    if (!c) return LEGMPC_E_ARGUMENT;
    if (!s) return fail(c, LEGMPC_E_ARGUMENT, "legmpc_recv: no state to receive into");
    if (!c->connected) return fail(c, LEGMPC_E_ARGUMENT, "legmpc_recv before legmpc_connect succeeded");
    double until = monotonic_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    if (drain(c)) return LEGMPC_E_ZMQ;
    for (;;) {
        if (c->err_n) {
            c->last_error = c->errq[c->err_head];
            c->err_head = (c->err_head + 1) % ERR_CAP;
            c->err_n--;
            return LEGMPC_EV_ERROR;
        }
        if (c->ended) return LEGMPC_EV_BYE;
        if (c->pend) {
            const legmpc_config *g = &c->cfg;
            s->tick = c->pend_tick, s->t = c->pend_t, s->wall_ns = c->pend_wall, s->status = c->pstatus;
            s->skipped = c->pend_skipped;
            c->read_ns = wall_ns(), c->read_cpu_ns = thread_cpu_ns();
            if (s->q) memcpy(s->q, c->pq, (size_t)g->nq * sizeof(double));
            if (s->v) memcpy(s->v, c->pv, (size_t)g->nv * sizeof(double));
            if (s->contact) memcpy(s->contact, c->pcontact, (size_t)g->nc);
            if (s->force) memcpy(s->force, c->pforce, (size_t)(g->nc * g->nf) * sizeof(double));
            c->pend = 0, c->pend_skipped = 0;
            return LEGMPC_EV_STATE;
        }
        int left = timeout_ms < 0 ? -1 : (int)(until - monotonic_ms());
        if (timeout_ms >= 0 && left < 0) left = 0;
        int r = wait_readable(c, left);
        if (r < 0) return r;
        if (r == 0)
            return fail(c, LEGMPC_E_TIMEOUT, "nothing from the plant at %s within %d ms", c->endpoint, timeout_ms);
        if (drain(c)) return LEGMPC_E_ZMQ;
    }
}

int legmpc_state_alloc(legmpc_client *c, legmpc_state *s) {
    if (!c) return LEGMPC_E_ARGUMENT;
    if (!s || !c->connected) return fail(c, LEGMPC_E_ARGUMENT, "legmpc_state_alloc needs a state and a connected client");
    const legmpc_config *g = &c->cfg;
    memset(s, 0, sizeof *s);
    s->q = calloc((size_t)g->nq, sizeof(double));
    s->v = calloc((size_t)g->nv, sizeof(double));
    s->contact = calloc((size_t)g->nc + 1, 1);
    s->force = calloc((size_t)(g->nc * g->nf) + 1, sizeof(double));
    if (!s->q || !s->v || !s->contact || !s->force) {
        legmpc_state_free(s);
        return fail(c, LEGMPC_E_MEMORY, "out of memory for a state");
    }
    return LEGMPC_OK;
}

void legmpc_state_free(legmpc_state *s) {
    if (!s) return;
    free(s->q);
    free(s->v);
    free(s->contact);
    free(s->force);
    memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------------ connecting */
/* The Z85 value of `key = "..."` in a pyzmq certificate file (40 characters + NUL into out). */
static int read_cert_key(legmpc_client *c, const char *dir, const char *file, const char *key, char out[41]) {
    char path[1024], line[512];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *fp = fopen(path, "r");
    if (!fp) return fail(c, LEGMPC_E_KEYS, "cannot read %s: %s", path, strerror(errno));
    size_t klen = strlen(key);
    int found = 0;
    while (!found && fgets(line, sizeof line, fp)) {
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (strncmp(p, key, klen) != 0) continue;
        p += klen;
        while (*p == ' ' || *p == '\t' || *p == '=') p++;
        char *q = *p == '"' ? strchr(p + 1, '"') : NULL;
        if (q && q - p - 1 == 40) {
            memcpy(out, p + 1, 40);
            out[40] = '\0';
            found = 1;
        }
    }
    fclose(fp);
    return found ? 0 : fail(c, LEGMPC_E_KEYS, "%s has no %s of 40 Z85 characters", path, key);
}

static int setup_curve(legmpc_client *c, const legmpc_options *o) {
    char server[41], pub[41], sec[41];
    int given = (o->server_key != NULL) + (o->public_key != NULL) + (o->secret_key != NULL);
    if (!o->curve_dir && !given) return 0;
    if (o->curve_dir && given) return fail(c, LEGMPC_E_ARGUMENT, "give either curve_dir or the three keys, not both");
    if (!zmq_has("curve")) return fail(c, LEGMPC_E_KEYS, "this libzmq has no CURVE support");
    if (o->curve_dir) {
        int r = read_cert_key(c, o->curve_dir, "server.key", "public-key", server);
        if (!r) r = read_cert_key(c, o->curve_dir, "client.key_secret", "public-key", pub);
        if (!r) r = read_cert_key(c, o->curve_dir, "client.key_secret", "secret-key", sec);
        if (r) return r;
    } else {
        if (given != 3) return fail(c, LEGMPC_E_ARGUMENT, "CurveZMQ needs server_key, public_key and secret_key");
        const char *keys[3] = {o->server_key, o->public_key, o->secret_key};
        char *outs[3] = {server, pub, sec};
        for (int i = 0; i < 3; i++) {
            if (strlen(keys[i]) != 40) return fail(c, LEGMPC_E_KEYS, "a Z85 key has 40 characters, got %zu", strlen(keys[i]));
            memcpy(outs[i], keys[i], 41);
        }
    }
    if (zmq_setsockopt(c->sock, ZMQ_CURVE_SERVERKEY, server, 40) || zmq_setsockopt(c->sock, ZMQ_CURVE_PUBLICKEY, pub, 40) ||
        zmq_setsockopt(c->sock, ZMQ_CURVE_SECRETKEY, sec, 40))
        return fail(c, LEGMPC_E_KEYS, "libzmq refused the CurveZMQ keys: %s", zmq_strerror(zmq_errno()));
    return 0;
}

/* Our routing id: 'c' + 15 random bytes, so a dropped link reconnects into the session. */
static void routing_id(unsigned char id[16]) {
    id[0] = 'c';
    FILE *fp = fopen("/dev/urandom", "rb");
    size_t got = fp ? fread(id + 1, 1, 15, fp) : 0;
    if (fp) fclose(fp);
    if (got != 15) {
        uint64_t x = (uint64_t)wall_ns() ^ ((uint64_t)(uintptr_t)id << 17) ^ (uint64_t)clock();
        for (int i = 1; i < 16; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            id[i] = (unsigned char)x;
        }
    }
}

static void put_header(unsigned char *h, int type, uint32_t seq, double t, uint32_t count) {
    memcpy(h, "LMPC", 4);
    wr16(h + 4, LEGMPC_PROTOCOL_VERSION);
    wr16(h + 6, (uint16_t)type);
    wr32(h + 8, seq);
    wrf64(h + 12, t);
    wr64(h + 20, (uint64_t)wall_ns());
    wr32(h + 28, count);
}

static void put_desc(unsigned char *d, int fid, int dtype, int ndim, uint32_t d0, uint32_t d1) {
    wr16(d, (uint16_t)fid);
    d[2] = (unsigned char)dtype;
    d[3] = (unsigned char)ndim;
    wr32(d + 4, d0);
    wr32(d + 8, d1);
    wr32(d + 12, 0);
}

/* JSON string body of s (quotes and backslashes escaped, control characters as \u00XX). */
static size_t json_escape(char *out, size_t cap, const char *s) {
    size_t n = 0;
    for (; *s && n + 7 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') out[n++] = '\\', out[n++] = (char)ch;
        else if (ch < 0x20) n += (size_t)snprintf(out + n, cap - n, "\\u%04x", ch);
        else out[n++] = (char)ch;
    }
    out[n] = '\0';
    return n;
}

static int send_hello(legmpc_client *c, const legmpc_options *o) {
    char name[300], robot[300], text[700];
    json_escape(name, sizeof name, o->name ? o->name : "legmpc-c");
    json_escape(robot, sizeof robot, o->robot ? o->robot : "");
    int n = snprintf(text, sizeof text, "{\"protocol\": %d, \"name\": \"%s\"%s%s%s}", LEGMPC_PROTOCOL_VERSION, name,
                     o->robot ? ", \"robot\": \"" : "", o->robot ? robot : "", o->robot ? "\"" : "");
    unsigned char h[FIXED_SIZE + DESC_SIZE];
    put_header(h, LEGMPC_MSG_HELLO, 0, 0.0, 1);
    put_desc(h + FIXED_SIZE, 0, DT_U8, 1, (uint32_t)n, 0);
    if (zmq_send(c->sock, h, sizeof h, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 || zmq_send(c->sock, text, (size_t)n, ZMQ_DONTWAIT) < 0)
        return fail(c, LEGMPC_E_ZMQ, "sending HELLO to %s: %s", c->endpoint, zmq_strerror(zmq_errno()));
    sent_push(c, LEGMPC_MSG_HELLO, 0);
    return 0;
}

/* Buffers for the robot of CONFIG: a STATE's frames, the pending STATE, a COMMAND's. */
static int allocate(legmpc_client *c) {
    const legmpc_config *g = &c->cfg;
    size_t sizes[5] = {(size_t)g->nq * 8, (size_t)g->nv * 8, (size_t)g->nc, (size_t)(g->nc * g->nf) * 8, 1};
    size_t off = 0;
    for (int i = 0; i < 5; i++) c->st_off[i] = off, c->st_size[i] = sizes[i], off += (sizes[i] + 7) & ~(size_t)7;
    size_t doubles = (size_t)(g->nq + g->nv + g->nc * g->nf);
    c->stage = malloc(off + 8);
    c->pq = malloc(doubles * sizeof(double) + (size_t)g->nc + 8);
    c->tx = malloc((size_t)g->nu * 40 + 8 + 8 + 64);
    if (!c->stage || !c->pq || !c->tx) return fail(c, LEGMPC_E_MEMORY, "out of memory for the robot's buffers");
    c->pv = c->pq + g->nq;
    c->pforce = c->pv + g->nv;
    c->pcontact = (uint8_t *)(c->pforce + g->nc * g->nf);
    /* one setpoint (K = 1): tau_ff, q_des, v_des as (1, nu); kp, kd; valid_until; t_offset [0];
     * the report (docs/PROTOCOL.md) */
    put_header(c->cmd_hdr, LEGMPC_MSG_COMMAND, 0, 0.0, 8);
    for (int i = 0; i < 3; i++) put_desc(c->cmd_hdr + FIXED_SIZE + DESC_SIZE * i, i, DT_F64, 2, 1, (uint32_t)g->nu);
    for (int i = 3; i < 5; i++) put_desc(c->cmd_hdr + FIXED_SIZE + DESC_SIZE * i, i, DT_F64, 1, (uint32_t)g->nu, 0);
    put_desc(c->cmd_hdr + FIXED_SIZE + DESC_SIZE * 5, 5, DT_I64, 1, 1, 0);
    put_desc(c->cmd_hdr + FIXED_SIZE + DESC_SIZE * 6, 6, DT_F64, 1, 1, 0);
    put_desc(c->cmd_hdr + FIXED_SIZE + DESC_SIZE * 7, 7, DT_I64, 1, 8, 0);
    return 0;
}

/* The reply to HELLO (rx_read's message): 0 when it was CONFIG and the client is set up. */
static int connect_reply(legmpc_client *c, const legmpc_options *o) {
    char detail[256], err[300];
    const char *bad = rx_check(c, detail, sizeof detail);
    if (bad) return fail(c, LEGMPC_E_PROTOCOL, "the plant's reply to HELLO cannot be read (%s: %s)", bad, detail);
    unsigned type = rd16(c->hdr + 6);
    if (type == LEGMPC_MSG_ERROR) {
        memset(&c->last_error, 0, sizeof c->last_error);
        c->last_error.tick = rd32(c->hdr + 8);
        if (read_reason(c, type, c->last_error.reason, sizeof c->last_error.reason, c->last_error.detail,
                        sizeof c->last_error.detail, err, sizeof err))
            return fail(c, LEGMPC_E_PROTOCOL, "the plant's ERROR is unreadable (%s)", err);
        struct sent s = sent_match(c, c->last_error.reason);
        c->last_error.answers_type = s.type, c->last_error.answers_seq = s.seq;
        c->stats.errors++;
        return fail(c, LEGMPC_E_REFUSED, "the plant refused HELLO: %s: %s", c->last_error.reason, c->last_error.detail);
    }
    if (type == LEGMPC_MSG_BYE) {
        read_reason(c, type, c->bye, sizeof c->bye, NULL, 0, err, sizeof err);
        c->ended = 1;
        return fail(c, LEGMPC_E_ENDED, "the plant said BYE before CONFIG: %s", c->bye);
    }
    if (legmpc_config_parse((const char *)c->json, c->flen[1], &c->cfg, err, sizeof err))
        return fail(c, LEGMPC_E_CONFIG, "CONFIG from %s: %s", c->endpoint, err);
    if (o->robot && strcmp(o->robot, c->cfg.robot) != 0)
        return fail(c, LEGMPC_E_CONFIG, "CONFIG is for robot '%s', not '%s'", c->cfg.robot, o->robot);
    int r = allocate(c);
    if (r) return r;
    c->sent_n = 0;  /* HELLO was accepted, and it is all we sent */
    c->connected = 1;
    return 0;
}

int legmpc_connect(legmpc_client *c, const char *endpoint, const legmpc_options *opts) {
    static const legmpc_options defaults = {0};
    if (!c) return LEGMPC_E_ARGUMENT;
    const legmpc_options *o = opts ? opts : &defaults;
    if (c->ctx || c->connected) return fail(c, LEGMPC_E_ARGUMENT, "legmpc_connect: this client is connected already");
    if (!endpoint || strlen(endpoint) >= sizeof c->endpoint) return fail(c, LEGMPC_E_ARGUMENT, "legmpc_connect: bad endpoint");
    if ((o->name && strlen(o->name) > 40) || (o->robot && strlen(o->robot) > 40) || o->connect_timeout_ms < 0)
        return fail(c, LEGMPC_E_ARGUMENT, "legmpc_connect: name and robot take at most 40 bytes, the timeout >= 0");
    copy_text(c->endpoint, sizeof c->endpoint, endpoint);
    c->ended = 0, c->bye[0] = '\0', c->sent_n = 0, c->err_n = 0, c->pend = 0;
    memset(&c->last_error, 0, sizeof c->last_error);
    c->ctx = zmq_ctx_new();
    c->sock = c->ctx ? zmq_socket(c->ctx, ZMQ_DEALER) : NULL;
    if (!c->sock) {
        int r = fail(c, LEGMPC_E_ZMQ, "cannot make a ZeroMQ socket: %s", zmq_strerror(zmq_errno()));
        teardown(c);
        return r;
    }
    unsigned char id[16];
    routing_id(id);
    int linger = 0;
    int64_t maxmsg = MAX_MESSAGE_BYTES;
    int r = 0;
    if (zmq_setsockopt(c->sock, ZMQ_LINGER, &linger, sizeof linger) || zmq_setsockopt(c->sock, ZMQ_ROUTING_ID, id, sizeof id) ||
        zmq_setsockopt(c->sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg))
        r = fail(c, LEGMPC_E_ZMQ, "setting socket options: %s", zmq_strerror(zmq_errno()));
    if (!r) r = setup_curve(c, o);
    if (!r && zmq_connect(c->sock, endpoint) != 0)
        r = fail(c, LEGMPC_E_ZMQ, "cannot connect to '%s': %s", endpoint, zmq_strerror(zmq_errno()));
    if (!r) r = send_hello(c, o);
    int timeout = o->connect_timeout_ms ? o->connect_timeout_ms : 60000;
    double until = monotonic_ms() + timeout;
    while (!r) {
        int w = wait_readable(c, (int)(until - monotonic_ms()) > 0 ? (int)(until - monotonic_ms()) : 0);
        if (w < 0) { r = w; break; }
        if (w == 0) {
            r = fail(c, LEGMPC_E_TIMEOUT, "no CONFIG from %s within %d ms (is serve-plant running there, with the "
                                          "same CurveZMQ keys?)", endpoint, timeout);
            break;
        }
        int got = rx_read(c);
        if (got < 0) { r = LEGMPC_E_ZMQ; break; }
        if (got == 1) {
            r = connect_reply(c, o);
            if (!r) return LEGMPC_OK;
        }
    }
    teardown(c);
    return r;
}

/* ------------------------------------------------------------------ sending */
int legmpc_send_command(legmpc_client *c, uint32_t tick, double t, const legmpc_command *cmd) {
    if (!c) return LEGMPC_E_ARGUMENT;
    if (!cmd || !c->connected) return fail(c, LEGMPC_E_ARGUMENT, "legmpc_send_command needs a command and a connected client");
    if (c->ended) return fail(c, LEGMPC_E_ENDED, "the run ended (BYE: %s)", c->bye);
    size_t nu = (size_t)c->cfg.nu;
    const double *arrays[5] = {cmd->tau_ff, cmd->q_des, cmd->v_des, cmd->kp, cmd->kd};
    for (size_t a = 0; a < 5; a++)
        for (size_t i = 0; i < nu; i++) wrf64(c->tx + 8 * (a * nu + i), arrays[a] ? arrays[a][i] : 0.0);
    wr64(c->tx + 40 * nu, (uint64_t)cmd->valid_until);
    wrf64(c->tx + 40 * nu + 8, 0.0);  /* t_offset: the one setpoint applies from the STATE's time */
    /* the report: STATE delivered, this thread's CPU and the wall time since, no flags, no stalls */
    int64_t now = wall_ns(), report[8] = {c->read_ns, thread_cpu_ns() - c->read_cpu_ns, now - c->read_ns, 0, 0, 0, 0, 0};
    if (!c->read_ns) report[1] = report[2] = 0;
    for (int i = 0; i < 8; i++) wr64(c->tx + 40 * nu + 16 + 8 * i, (uint64_t)report[i]);
    put_header(c->cmd_hdr, LEGMPC_MSG_COMMAND, tick, t, 8);
    if (zmq_send(c->sock, c->cmd_hdr, sizeof c->cmd_hdr, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
        return fail(c, LEGMPC_E_ZMQ, "sending COMMAND(%u): %s", tick, zmq_strerror(zmq_errno()));
    static const size_t offs[8] = {0, 1, 2, 3, 4, 5, 0, 0};
    for (size_t a = 0; a < 8; a++) {  /* the first frame went: the rest of the message goes too */
        size_t off = a < 6 ? 8 * offs[a] * nu : (a == 6 ? 40 * nu + 8 : 40 * nu + 16);
        size_t len = a < 5 ? 8 * nu : (a == 7 ? 64 : 8);
        if (zmq_send(c->sock, c->tx + off, len, a < 7 ? ZMQ_SNDMORE : 0) < 0)
            return fail(c, LEGMPC_E_ZMQ, "sending COMMAND(%u): %s", tick, zmq_strerror(zmq_errno()));
    }
    sent_push(c, LEGMPC_MSG_COMMAND, tick);
    c->stats.commands++;
    return LEGMPC_OK;
}

const char *legmpc_check_command(const legmpc_client *c, const legmpc_command *cmd) {
    if (!c || !cmd || !c->connected) return "argument";
    const double *arrays[5] = {cmd->tau_ff, cmd->q_des, cmd->v_des, cmd->kp, cmd->kd};
    const char *verdict = NULL;
    for (int a = 0; a < 5; a++)
        for (int i = 0; arrays[a] && i < c->cfg.nu; i++) {
            double x = arrays[a][i];
            if (!isfinite(x)) return "non_finite";  /* the plant's decoder refuses it before any range */
            if (fabs(x) > COMMAND_VALUE_LIMIT || (a >= 3 && x < 0)) verdict = "value";
        }
    return verdict;
}

int legmpc_send_plan(legmpc_client *c, uint32_t n, const double *t, const double *x, const double *u) {
    if (!c) return LEGMPC_E_ARGUMENT;
    if (!c->connected || (n && (!t || !x || !u))) return fail(c, LEGMPC_E_ARGUMENT, "legmpc_send_plan needs t, x, u and a connection");
    if (c->ended) return fail(c, LEGMPC_E_ENDED, "the run ended (BYE: %s)", c->bye);
    if (!host_is_little_endian()) return fail(c, LEGMPC_E_ARGUMENT, "legmpc_send_plan needs a little-endian host");
    uint32_t nx = (uint32_t)(c->cfg.nq + c->cfg.nv), nu = (uint32_t)c->cfg.nu;
    /* a PLAN the plant would refuse is not sent: so it never answers one, and every ERROR
     * answers a HELLO or a COMMAND (sent_match) */
    uint64_t bytes = (uint64_t)n * 8 * (1 + nx + nu);
    if ((uint64_t)n * 8 * (nx > nu ? nx : nu) > MAX_FRAME_BYTES || bytes + FIXED_SIZE + 3 * DESC_SIZE > MAX_MESSAGE_BYTES)
        return fail(c, LEGMPC_E_ARGUMENT, "PLAN not sent: too_large (%u stages: a frame over 1 MiB or 4 MiB in all)", n);
    const double *arrays[3] = {t, x, u};
    const uint64_t counts[3] = {n, (uint64_t)n * nx, (uint64_t)n * nu};
    for (int a = 0; a < 3; a++)
        for (uint64_t i = 0; i < counts[a]; i++)
            if (!isfinite(arrays[a][i])) return fail(c, LEGMPC_E_ARGUMENT, "PLAN not sent: non_finite (%c[%llu])", "txu"[a],
                                                     (unsigned long long)i);
    unsigned char h[FIXED_SIZE + 3 * DESC_SIZE];
    put_header(h, LEGMPC_MSG_PLAN, 0, 0.0, 3);
    put_desc(h + FIXED_SIZE, 0, DT_F64, 1, n, 0);
    put_desc(h + FIXED_SIZE + DESC_SIZE, 1, DT_F64, 2, n, nx);
    put_desc(h + FIXED_SIZE + 2 * DESC_SIZE, 2, DT_F64, 2, n, nu);
    if (zmq_send(c->sock, h, sizeof h, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
        zmq_send(c->sock, t, (size_t)n * 8, ZMQ_SNDMORE) < 0 || zmq_send(c->sock, x, (size_t)n * nx * 8, ZMQ_SNDMORE) < 0 ||
        zmq_send(c->sock, u, (size_t)n * nu * 8, 0) < 0)
        return fail(c, LEGMPC_E_ZMQ, "sending PLAN: %s", zmq_strerror(zmq_errno()));
    return LEGMPC_OK;
}
