/*
 * Native decoder of Avro binary records into Arrow-layout buffers.
 *
 * The Python side (avro_native.py) compiles a writer schema plus the wanted Arrow type into a
 * "program": a table of builders (one per Arrow array to fill) and a graph of nodes (one per Avro
 * type to read). A node with no builder (-1) only skips its bytes; nodes may form cycles only
 * through such skip nodes (recursive types projected away).
 *
 *   compile(program: bytes, blob: bytes) -> capsule
 *   decode(capsule, data: bytes-like, count: int, boundaries: bytes-like = None)
 *       -> (list of (length, null_count, validity, offsets, values) per builder, bytes consumed)
 *
 * `data` may hold several blocks' records back to back; `boundaries` then lists, per block, two
 * little-endian int64 words: the records decoded and the bytes consumed at the block's end (both
 * counted from the start of `data`). A block whose records do not end exactly at its boundary
 * fails with the message "block boundary" (the caller decodes the blocks one by one to say why).
 *
 * Program layout (little-endian int64 words):
 *   [VERSION, n_builders, n_nodes, root_node]
 *   per builder: [kind, nullable, width, n_children, children...]
 *   per node:    [op, builder, min_size_positive, n_params, params...]
 * The blob holds the UTF-8 symbols of enums, addressed by byte offsets in node params.
 *
 * Every read is bounds-checked; corrupt or truncated data raises DecodeError (a ValueError) with
 * args (record_index, message). The GIL is released while decoding.
 *
 * Speed: compile derives, per node, how it runs (derive_node: e.g. a skipped string, a copied
 * double); leaves are decoded inline in their record's loop, the read position is passed by
 * value (not reloaded from memory after each store), one-byte varints and ASCII strings take
 * branch-light paths, and the program keeps its builders' buffers from one decode to the next
 * (the results are copied out into bytes), so that they rarely grow or touch fresh memory.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "this decoder assumes a little-endian machine (Avro and Arrow are little-endian)"
#endif

#define PROGRAM_VERSION 1
#define MAX_DEPTH 400
#define MAX_OFFSET INT32_MAX
#define CAPSULE_NAME "beam_tensorize.avrodecode.program"

enum { B_NULL = 0, B_BOOL = 1, B_FIXED = 2, B_VAR = 3, B_STRUCT = 4, B_LIST = 5 };

enum {
    OP_NULL = 0,
    OP_BOOL = 1,
    OP_INT = 2,    /* params: [out_width] (4: range-checked int32, 8: int64) */
    OP_FLOAT = 3,  /* params: [out_width] (4: float32, 8: widened to float64) */
    OP_DOUBLE = 4,
    OP_BYTES = 5,
    OP_STRING = 6,
    OP_FIXED = 7,  /* params: [size] */
    OP_ENUM = 8,   /* params: [n_symbols, offset_0, ..., offset_n] into the blob */
    OP_RECORD = 9, /* params: [n_fields, node...] */
    OP_ARRAY = 10, /* params: [item node] */
    OP_MAP = 11,   /* params: [entries builder, key builder, value node] */
    OP_UNION = 12, /* params: [mode, n_branches, (node or -1 for null, member index)...] */
    OP_COUNT = 13
};

#if defined(__GNUC__) || defined(__clang__)
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define HOT_INLINE inline __attribute__((always_inline))
#define NOINLINE __attribute__((noinline))
#else
#define LIKELY(x) (x)
#define UNLIKELY(x) (x)
#define HOT_INLINE inline
#define NOINLINE
#endif

/* How a node runs, derived from its op and whether it has a builder (see derive_node). */
enum {
    F_NOP = 0,      /* null, skipped */
    F_NULL,         /* null into a builder */
    F_SKIP_BOOL,
    F_BOOL,
    F_SKIP_LONG,    /* int/long, skipped */
    F_INT32,        /* range-checked int32 */
    F_INT64,
    F_SKIP_SIZED,   /* float, double or fixed, skipped: `size` bytes */
    F_COPY_SIZED,   /* float32, double or fixed: `size` bytes copied */
    F_FLOAT_WIDEN,  /* float widened to float64 */
    F_SKIP_BYTES,   /* bytes or string, skipped */
    F_BYTES,
    F_STRING,
    F_ENUM,
    F_RECORD,
    F_ARRAY,
    F_MAP,
    F_UNION
};

typedef struct {
    int kind;
    int nullable;
    int64_t width;
    int n_children;
    int *children;
} BuilderSpec;

typedef struct {
    int op;
    int builder;
    int min_positive;
    int zero_width; /* its values take no bytes at all: null, fixed(0), records of only those */
    int n_params;
    const int64_t *params;
    /* Derived at compile time, for the decoding loop. */
    int fast;
    int list_child;          /* arrays and maps with a builder: the builder of its items/entries */
    int64_t size;            /* F_SKIP_SIZED / F_COPY_SIZED: bytes per value */
    const char *what;        /* sized values: the message when truncated; bytes and strings: their
                                name in the "truncated" / "negative length" messages */
} Node;

typedef struct {
    int n_builders;
    int n_nodes;
    int root;
    BuilderSpec *builders;
    Node *nodes;
    int64_t *words;
    char *blob;
    Py_ssize_t blob_len;
    /* The builders of the last decode, kept with their buffers' memory for the next one (the
     * results are copied out); `busy` while a decode uses them (another one at the same time,
     * in another thread, allocates its own). */
    struct Builder *cache;
    int busy;
} Program;

typedef struct {
    uint8_t *data;
    size_t len;
    size_t cap;
} Buf;

typedef struct Builder {
    int64_t length;
    int64_t null_count;
    int64_t bits;  /* bits used in values (B_BOOL) */
    int nullable;  /* copy of the spec's, for mark_valid */
    Buf validity;
    Buf offsets;
    Buf values;
} Builder;

typedef struct {
    const Program *prog;
    const Node *nodes;
    Builder *b;
    const uint8_t *pos;
    const uint8_t *end;
    int depth;
    int oom;
    char err[256];
} Ctx;

/* ------------------------------------------------------------------------------------------ */
/* Buffers. Growth is geometric and leaves the new bytes uninitialized: only bitmaps need zeros,
 * and bit_append clears each bitmap byte as it first uses it. */

static NOINLINE int buf_grow(Ctx *c, Buf *buf, size_t extra) {
    if (extra > ((size_t)1 << 40)) {
        c->oom = 1;
        return -1;
    }
    size_t cap = buf->cap ? buf->cap : 256;
    while (cap - buf->len < extra) cap *= 2;
    uint8_t *p = (uint8_t *)realloc(buf->data, cap);
    if (p == NULL) {
        c->oom = 1;
        return -1;
    }
    buf->data = p;
    buf->cap = cap;
    return 0;
}

static HOT_INLINE int buf_reserve(Ctx *c, Buf *buf, size_t extra) {
    if (LIKELY(buf->cap - buf->len >= extra)) return 0;
    return buf_grow(c, buf, extra);
}

static HOT_INLINE int buf_append(Ctx *c, Buf *buf, const void *src, size_t n) {
    if (UNLIKELY(buf->cap - buf->len < n) && buf_grow(c, buf, n) < 0) return -1;
    if (n) memcpy(buf->data + buf->len, src, n);
    buf->len += n;
    return 0;
}

/* Appends `n` bytes read at `src`, in a buffer ending at `end`: short ones (the usual strings)
 * as one 16-byte copy, when both the source and the buffer's spare room hold 16 bytes (the bytes
 * past `n` land in the spare room and are overwritten by the next append). */
static HOT_INLINE int buf_append_short(Ctx *c, Buf *buf, const uint8_t *src, size_t n, const uint8_t *end) {
    if (LIKELY(n <= 16 && end - src >= 16)) {
        if (UNLIKELY(buf->cap - buf->len < 16) && buf_grow(c, buf, 16) < 0) return -1;
        memcpy(buf->data + buf->len, src, 16);
        buf->len += n;
        return 0;
    }
    return buf_append(c, buf, src, n);
}

/* Zero-extends a buffer to at least `n` bytes. */
static int buf_zero_to(Ctx *c, Buf *buf, size_t n) {
    if (n <= buf->len) return 0;
    if (buf_reserve(c, buf, n - buf->len) < 0) return -1;
    memset(buf->data + buf->len, 0, n - buf->len);
    buf->len = n;
    return 0;
}

/* Sets bit `index` of a bitmap to `value` (bytes are cleared as the bitmap grows over them). */
static HOT_INLINE int bit_append(Ctx *c, Buf *buf, int64_t index, int value) {
    size_t byte = (size_t)(index >> 3);
    if (UNLIKELY(byte >= buf->len) && buf_zero_to(c, buf, byte + 1) < 0) return -1;
    if (value) buf->data[byte] |= (uint8_t)(1u << (index & 7));
    return 0;
}

static NOINLINE int fail(Ctx *c, const char *message) {
    if (!c->err[0]) snprintf(c->err, sizeof(c->err), "%s", message);
    return -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Builders */

/* Marks the next slot of a builder valid (the value itself is appended by the caller). */
static HOT_INLINE int mark_valid(Ctx *c, Builder *b) {
    if (b->nullable && bit_append(c, &b->validity, b->length, 1) < 0) return -1;
    b->length++;
    return 0;
}

static HOT_INLINE int push_offset(Ctx *c, Buf *offsets, int64_t end) {
    if (UNLIKELY(end > MAX_OFFSET)) return fail(c, "more than 2**31-1 values in one block: offsets overflow");
    int32_t v = (int32_t)end;
    return buf_append(c, offsets, &v, 4);
}

/* Appends a null slot (an empty value if the builder is not nullable: children of a null struct). */
static int append_null(Ctx *c, int id) {
    Builder *b = &c->b[id];
    const BuilderSpec *s = &c->prog->builders[id];
    if (s->kind == B_NULL) {
        b->length++;
        b->null_count++;
        return 0;
    }
    if (s->nullable) {
        if (bit_append(c, &b->validity, b->length, 0) < 0) return -1;
        b->null_count++;
    }
    switch (s->kind) {
        case B_BOOL:
            if (bit_append(c, &b->values, b->bits, 0) < 0) return -1;
            b->bits++;
            break;
        case B_FIXED:
            if (buf_reserve(c, &b->values, (size_t)s->width) < 0) return -1;
            memset(b->values.data + b->values.len, 0, (size_t)s->width);
            b->values.len += (size_t)s->width;
            break;
        case B_VAR:
            if (push_offset(c, &b->offsets, (int64_t)b->values.len) < 0) return -1;
            break;
        case B_LIST:
            if (push_offset(c, &b->offsets, c->b[s->children[0]].length) < 0) return -1;
            break;
        case B_STRUCT:
            for (int i = 0; i < s->n_children; i++)
                if (append_null(c, s->children[i]) < 0) return -1;
            break;
    }
    b->length++;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Reading. The read position is passed by value and returned (NULL after an error, whose message
 * is in c->err): kept in a register, it is not reloaded after every store into the builders. */

typedef const uint8_t *Pos;

static NOINLINE Pos fail_at(Ctx *c, const char *message) {
    fail(c, message);
    return NULL;
}

static NOINLINE Pos read_long_slow(Ctx *c, Pos p, int64_t *out) {
    uint64_t result = 0;
    int shift = 0;
    for (;;) {
        if (p >= c->end) return fail_at(c, "truncated data: a variable-length integer runs past the end");
        uint8_t byte = *p++;
        result |= (uint64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80)) break;
        shift += 7;
        if (shift >= 70) return fail_at(c, "variable-length integer is longer than 10 bytes");
    }
    *out = (int64_t)((result >> 1) ^ (~(result & 1) + 1));
    return p;
}

/* A zigzag varint; one- and two-byte values (the common ones) without a loop. */
static HOT_INLINE Pos read_long(Ctx *c, Pos p, Pos end, int64_t *out) {
    if (LIKELY(end - p >= 2)) {
        uint64_t r = p[0];
        if (LIKELY(!(r & 0x80))) {
            *out = (int64_t)((r >> 1) ^ (~(r & 1) + 1));
            return p + 1;
        }
        uint64_t b1 = p[1];
        if (!(b1 & 0x80)) {
            r = (r & 0x7F) | (b1 << 7);
            *out = (int64_t)((r >> 1) ^ (~(r & 1) + 1));
            return p + 2;
        }
    }
    return read_long_slow(c, p, out);
}

static NOINLINE Pos length_error(Ctx *c, Pos p, int64_t n, const char *what) {
    if (n < 0)
        snprintf(c->err, sizeof(c->err), "negative %s length %lld", what, (long long)n);
    else
        snprintf(c->err, sizeof(c->err), "truncated data: %s of %lld bytes, only %lld left", what,
                 (long long)n, (long long)(c->end - p));
    return NULL;
}

/* A length of bytes that must follow: negative or past the end is an error. */
static HOT_INLINE Pos read_length(Ctx *c, Pos p, Pos end, int64_t *out, const char *what) {
    p = read_long(c, p, end, out);
    if (p == NULL) return NULL;
    /* one unsigned comparison catches both a negative length and one past the end */
    if (UNLIKELY((uint64_t)*out > (uint64_t)(end - p))) return length_error(c, p, *out, what);
    return p;
}

/* Strict UTF-8 validation, as Python's decoder: no overlongs, surrogates or values > U+10FFFF. */
static NOINLINE int utf8_valid_slow(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ULL)) {
                i += 8;
                continue;
            }
        }
        uint8_t b = s[i];
        if (b < 0x80) {
            i++;
        } else if (b >= 0xC2 && b <= 0xDF) {
            if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80) return 0;
            i += 2;
        } else if (b >= 0xE0 && b <= 0xEF) {
            if (i + 2 >= n) return 0;
            uint8_t b1 = s[i + 1];
            if ((b1 & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80) return 0;
            if (b == 0xE0 && b1 < 0xA0) return 0;  /* overlong */
            if (b == 0xED && b1 >= 0xA0) return 0; /* surrogate */
            i += 3;
        } else if (b >= 0xF0 && b <= 0xF4) {
            if (i + 3 >= n) return 0;
            uint8_t b1 = s[i + 1];
            if ((b1 & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80) return 0;
            if (b == 0xF0 && b1 < 0x90) return 0; /* overlong */
            if (b == 0xF4 && b1 >= 0x90) return 0; /* > U+10FFFF */
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

/* ASCII (the usual case) is checked inline; anything else by utf8_valid_slow. */
static HOT_INLINE int utf8_valid(const uint8_t *s, size_t n) {
    size_t i = 0;
    uint64_t acc = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        acc |= w;
    }
    for (; i < n; i++) acc |= s[i];
    if (LIKELY(!(acc & 0x8080808080808080ULL))) return 1;
    return utf8_valid_slow(s, n);
}

static NOINLINE Pos fail_int_range(Ctx *c, int64_t v) {
    snprintf(c->err, sizeof(c->err), "int value %lld out of the 32-bit range", (long long)v);
    return NULL;
}

static NOINLINE Pos fail_index(Ctx *c, const char *format, int64_t index, int64_t n) {
    snprintf(c->err, sizeof(c->err), format, (long long)index, (long long)n);
    return NULL;
}

static Pos decode_container(Ctx *c, const Node *nd, Pos p);

/* Decodes one value of node `nd` at `p` (`B`: c->b, `end`: c->end). Leaves run inline; records,
 * arrays, maps and unions in decode_container. Every value nests one level deeper than its
 * parent, and no deeper than MAX_DEPTH: the caller has checked that c->depth < MAX_DEPTH (once
 * for all the values of a level, as they share it). */
static HOT_INLINE Pos decode_any(Ctx *c, Builder *B, const Node *nd, Pos p, Pos end) {
    switch (nd->fast) {
        case F_NOP:
            return p;
        case F_NULL:
            return append_null(c, nd->builder) < 0 ? NULL : p;
        case F_SKIP_BOOL:
            if (UNLIKELY(p >= end)) return fail_at(c, "truncated data: boolean runs past the end");
            return p + 1;
        case F_BOOL: {
            if (UNLIKELY(p >= end)) return fail_at(c, "truncated data: boolean runs past the end");
            Builder *b = &B[nd->builder];
            if (bit_append(c, &b->values, b->bits, *p != 0) < 0) return NULL;
            b->bits++;
            return mark_valid(c, b) < 0 ? NULL : p + 1;
        }
        case F_SKIP_LONG: {
            int64_t v;
            return read_long(c, p, end, &v);
        }
        case F_INT32: {
            int64_t v;
            p = read_long(c, p, end, &v);
            if (p == NULL) return NULL;
            if (UNLIKELY(v < INT32_MIN || v > INT32_MAX)) return fail_int_range(c, v);
            Builder *b = &B[nd->builder];
            int32_t w = (int32_t)v;
            if (buf_append(c, &b->values, &w, 4) < 0 || mark_valid(c, b) < 0) return NULL;
            return p;
        }
        case F_INT64: {
            int64_t v;
            p = read_long(c, p, end, &v);
            if (p == NULL) return NULL;
            Builder *b = &B[nd->builder];
            if (buf_append(c, &b->values, &v, 8) < 0 || mark_valid(c, b) < 0) return NULL;
            return p;
        }
        case F_SKIP_SIZED:
            if (UNLIKELY(nd->size > end - p)) return fail_at(c, nd->what);
            return p + nd->size;
        case F_COPY_SIZED: {
            int64_t size = nd->size;
            if (UNLIKELY(size > end - p)) return fail_at(c, nd->what);
            Builder *b = &B[nd->builder];
            if (size == 8) {
                if (buf_append(c, &b->values, p, 8) < 0) return NULL;
            } else if (buf_append(c, &b->values, p, (size_t)size) < 0) {
                return NULL;
            }
            return mark_valid(c, b) < 0 ? NULL : p + size;
        }
        case F_FLOAT_WIDEN: {
            if (UNLIKELY(end - p < 4)) return fail_at(c, nd->what);
            Builder *b = &B[nd->builder];
            float f;
            memcpy(&f, p, 4);
            double d = (double)f;
            if (buf_append(c, &b->values, &d, 8) < 0 || mark_valid(c, b) < 0) return NULL;
            return p + 4;
        }
        case F_SKIP_BYTES: {
            int64_t len;
            p = read_length(c, p, end, &len, nd->what);
            return p == NULL ? NULL : p + len;
        }
        case F_BYTES:
        case F_STRING: {
            int64_t len;
            p = read_length(c, p, end, &len, nd->what);
            if (p == NULL) return NULL;
            if (nd->fast == F_STRING && UNLIKELY(!utf8_valid(p, (size_t)len)))
                return fail_at(c, "string is not valid UTF-8");
            Builder *b = &B[nd->builder];
            if (buf_append_short(c, &b->values, p, (size_t)len, end) < 0 ||
                push_offset(c, &b->offsets, (int64_t)b->values.len) < 0 || mark_valid(c, b) < 0)
                return NULL;
            return p + len;
        }
        case F_ENUM: {
            int64_t index;
            p = read_long(c, p, end, &index);
            if (p == NULL) return NULL;
            int64_t n = nd->params[0];
            if (UNLIKELY(index < 0 || index >= n))
                return fail_index(c, "enum index %lld out of range (%lld symbols)", index, n);
            if (nd->builder >= 0) {
                Builder *b = &B[nd->builder];
                int64_t start = nd->params[1 + index], stop = nd->params[2 + index];
                if (buf_append(c, &b->values, c->prog->blob + start, (size_t)(stop - start)) < 0 ||
                    push_offset(c, &b->offsets, (int64_t)b->values.len) < 0 || mark_valid(c, b) < 0)
                    return NULL;
            }
            return p;
        }
        default:
            return decode_container(c, nd, p);
    }
}

static HOT_INLINE Pos decode_value(Ctx *c, Builder *B, const Node *nd, Pos p, Pos end) {
    if (UNLIKELY(c->depth >= MAX_DEPTH)) return fail_at(c, "values nested too deeply");
    return decode_any(c, B, nd, p, end);
}

/* The fields of a record (one level deeper than the record: the caller counts its level). */
static HOT_INLINE Pos decode_fields(Ctx *c, const Node *nd, Pos p) {
    Builder *B = c->b;
    const Node *nodes = c->nodes;
    Pos end = c->end;
    const int64_t *fields = nd->params + 1;
    int64_t n = nd->params[0];
    if (UNLIKELY(n > 0 && c->depth >= MAX_DEPTH)) return fail_at(c, "values nested too deeply");
    for (int64_t i = 0; i < n; i++) {
        p = decode_any(c, B, &nodes[fields[i]], p, end);
        if (p == NULL) return NULL;
    }
    if (nd->builder >= 0 && mark_valid(c, &B[nd->builder]) < 0) return NULL;
    return p;
}

static Pos decode_union(Ctx *c, const Node *nd, Pos p) {
    int64_t index;
    p = read_long(c, p, c->end, &index);
    if (p == NULL) return NULL;
    int64_t mode = nd->params[0], n = nd->params[1];
    if (index < 0 || index >= n)
        return fail_index(c, "union branch index %lld out of range (%lld branches)", index, n);
    int branch = (int)nd->params[2 + 2 * index];
    int member = (int)nd->params[3 + 2 * index];
    if (nd->builder < 0) return branch < 0 ? p : decode_value(c, c->b, &c->nodes[branch], p, c->end);
    if (branch < 0) return append_null(c, nd->builder) < 0 ? NULL : p;
    p = decode_value(c, c->b, &c->nodes[branch], p, c->end);
    if (mode == 0 || p == NULL) return p; /* mode 0: the branch writes into this builder */
    /* A struct of member<i> fields: the branch fills one member, the others get nulls. */
    const BuilderSpec *s = &c->prog->builders[nd->builder];
    for (int i = 0; i < s->n_children; i++)
        if (i != member && append_null(c, s->children[i]) < 0) return NULL;
    return mark_valid(c, &c->b[nd->builder]) < 0 ? NULL : p;
}

/* Marks the next `k` slots of a builder valid, as `k` calls of mark_valid do. */
static int mark_valid_n(Ctx *c, Builder *b, int64_t k) {
    if (b->nullable) {
        int64_t i = b->length, stop = b->length + k;
        if (buf_zero_to(c, &b->validity, (size_t)((stop + 7) >> 3)) < 0) return -1;
        uint8_t *bits = b->validity.data;
        for (; i < stop && (i & 7); i++) bits[i >> 3] |= (uint8_t)(1u << (i & 7));
        if (stop - i >= 8) {
            memset(bits + (i >> 3), 0xFF, (size_t)((stop - i) >> 3));
            i += (stop - i) & ~(int64_t)7;
        }
        for (; i < stop; i++) bits[i >> 3] |= (uint8_t)(1u << (i & 7));
    }
    b->length += k;
    return 0;
}

/* Appends `k` more values of a zero-width node, exactly as decoding them one by one would (they
 * read no bytes, so all are alike): an array may announce 2**31-1 of them in a few bytes. */
static int append_empty(Ctx *c, const Node *nd, int64_t k) {
    switch (nd->fast) {
        case F_NOP:
        case F_SKIP_SIZED:
            return 0;
        case F_NULL: {
            Builder *b = &c->b[nd->builder];
            if (c->prog->builders[nd->builder].kind == B_NULL) {
                b->length += k;
                b->null_count += k;
                return 0;
            }
            for (int64_t i = 0; i < k; i++)
                if (append_null(c, nd->builder) < 0) return -1;
            return 0;
        }
        case F_COPY_SIZED: /* fixed(0) */
            return mark_valid_n(c, &c->b[nd->builder], k);
        case F_RECORD:
            for (int64_t i = 0; i < nd->params[0]; i++)
                if (append_empty(c, &c->nodes[nd->params[1 + i]], k) < 0) return -1;
            return nd->builder >= 0 ? mark_valid_n(c, &c->b[nd->builder], k) : 0;
        default:
            return fail(c, "internal error: a value that takes bytes counted as zero-width");
    }
}

static Pos decode_array(Ctx *c, const Node *nd, Pos p, int is_map) {
    int id = nd->builder;
    const Node *item = &c->nodes[is_map ? nd->params[2] : nd->params[0]];
    int entries = is_map ? (int)nd->params[0] : -1;
    int keys = is_map ? (int)nd->params[1] : -1;
    int item_positive = is_map ? 1 : item->min_positive;
    Pos end = c->end;
    int64_t total = 0;
    for (;;) {
        int64_t n;
        p = read_long(c, p, end, &n);
        if (p == NULL) return NULL;
        if (n == 0) break;
        if (n < 0) {
            int64_t size;
            if (n == INT64_MIN) return fail_at(c, "invalid block item count");
            n = -n;
            p = read_length(c, p, end, &size, "array/map block");
            if (p == NULL) return NULL;
            if (id < 0) { /* skipping: jump over the block */
                p += size;
                continue;
            }
        }
        if (item_positive && n > end - p) return fail_at(c, "truncated data: more items announced than bytes left");
        if (n > MAX_OFFSET - total) return fail_at(c, "more than 2**31-1 items in one array or map");
        total += n;
        if (!is_map) {
            if (UNLIKELY(c->depth >= MAX_DEPTH)) return fail_at(c, "values nested too deeply");
            /* Items that take no bytes: the first decoded, the others appended alike at once. */
            int64_t run = item->zero_width ? 1 : n;
            if (item->fast == F_RECORD) { /* the usual array of records, inline */
                c->depth++;
                for (int64_t i = 0; i < run; i++) {
                    p = decode_fields(c, item, p);
                    if (p == NULL) break;
                }
                c->depth--;
                if (p == NULL) return NULL;
            } else {
                Builder *B = c->b;
                for (int64_t i = 0; i < run; i++) {
                    p = decode_any(c, B, item, p, end);
                    if (p == NULL) return NULL;
                }
            }
            if (run < n && append_empty(c, item, n - run) < 0) return NULL;
            continue;
        }
        for (int64_t i = 0; i < n; i++) {
            int64_t len;
            p = read_length(c, p, end, &len, "map key");
            if (p == NULL) return NULL;
            if (id >= 0) {
                Builder *kb = &c->b[keys];
                if (!utf8_valid(p, (size_t)len)) return fail_at(c, "map key is not valid UTF-8");
                if (buf_append(c, &kb->values, p, (size_t)len) < 0) return NULL;
                if (push_offset(c, &kb->offsets, (int64_t)kb->values.len) < 0) return NULL;
                kb->length++;
            }
            p += len;
            p = decode_value(c, c->b, item, p, end);
            if (p == NULL) return NULL;
            if (id >= 0) c->b[entries].length++;
        }
    }
    if (id < 0) return p;
    Builder *b = &c->b[id];
    if (push_offset(c, &b->offsets, c->b[nd->list_child].length) < 0 || mark_valid(c, b) < 0) return NULL;
    return p;
}

/* Records, arrays, maps and unions: one level deeper (decode_value checked the depth). */
static NOINLINE Pos decode_container(Ctx *c, const Node *nd, Pos p) {
    c->depth++;
    switch (nd->fast) {
        case F_RECORD:
            p = decode_fields(c, nd, p);
            break;
        case F_ARRAY:
            p = decode_array(c, nd, p, 0);
            break;
        case F_MAP:
            p = decode_array(c, nd, p, 1);
            break;
        case F_UNION:
            p = decode_union(c, nd, p);
            break;
        default:
            p = fail_at(c, "invalid program");
    }
    c->depth--;
    return p;
}

/* ------------------------------------------------------------------------------------------ */
/* Program compilation */

static PyObject *DecodeError;

static void program_free(Program *p) {
    if (p == NULL) return;
    if (p->builders) {
        for (int i = 0; i < p->n_builders; i++) free(p->builders[i].children);
        free(p->builders);
    }
    free(p->nodes);
    free(p->words);
    free(p->blob);
    if (p->cache) {
        for (int i = 0; i < p->n_builders; i++) {
            free(p->cache[i].validity.data);
            free(p->cache[i].offsets.data);
            free(p->cache[i].values.data);
        }
        free(p->cache);
    }
    free(p);
}

static void capsule_free(PyObject *capsule) {
    program_free((Program *)PyCapsule_GetPointer(capsule, CAPSULE_NAME));
}

static int check_param_ids(Program *p, const Node *nd) {
    const int64_t *q = nd->params;
    int64_t np = nd->n_params;
#define NODE_OK(v) ((v) >= 0 && (v) < p->n_nodes)
#define BUILDER_OK(v) ((v) >= 0 && (v) < p->n_builders)
    switch (nd->op) {
        case OP_NULL: case OP_BOOL: case OP_DOUBLE: case OP_BYTES: case OP_STRING:
            return np == 0;
        case OP_INT: case OP_FLOAT:
            return np == 1 && (q[0] == 4 || q[0] == 8);
        case OP_FIXED:
            return np == 1 && q[0] >= 0;
        case OP_ENUM:
            if (np < 1 || q[0] < 0 || np != q[0] + 2) return 0;
            for (int64_t i = 0; i <= q[0]; i++) {
                if (q[1 + i] < 0 || q[1 + i] > p->blob_len) return 0;
                if (i && q[1 + i] < q[i]) return 0;
            }
            return 1;
        case OP_RECORD:
            if (np < 1 || np != q[0] + 1) return 0;
            for (int64_t i = 0; i < q[0]; i++)
                if (!NODE_OK(q[1 + i])) return 0;
            return 1;
        case OP_ARRAY:
            return np == 1 && NODE_OK(q[0]) &&
                   (nd->builder < 0 || p->builders[nd->builder].n_children == 1);
        case OP_MAP:
            return np == 3 && BUILDER_OK(q[0]) && BUILDER_OK(q[1]) && NODE_OK(q[2]) &&
                   (nd->builder < 0 || p->builders[nd->builder].n_children == 1);
        case OP_UNION:
            if (np < 2 || np != 2 + 2 * q[1] || (q[0] != 0 && q[0] != 1)) return 0;
            for (int64_t i = 0; i < q[1]; i++) {
                int64_t branch = q[2 + 2 * i];
                if (branch != -1 && !NODE_OK(branch)) return 0;
                if (q[0] == 1 && nd->builder >= 0 && branch != -1 &&
                    (q[3 + 2 * i] < 0 || q[3 + 2 * i] >= p->builders[nd->builder].n_children))
                    return 0;
            }
            return 1;
    }
    return 0;
#undef NODE_OK
#undef BUILDER_OK
}

static const char FLOAT_TRUNCATED[] = "truncated data: float/double runs past the end";

/* How the decoding loop runs a node (compile has checked its params and builder). */
static void derive_node(Program *p, Node *nd) {
    int has = nd->builder >= 0;
    nd->list_child = -1;
    nd->size = 0;
    nd->what = "";
    switch (nd->op) {
        case OP_NULL:
            nd->fast = has ? F_NULL : F_NOP;
            break;
        case OP_BOOL:
            nd->fast = has ? F_BOOL : F_SKIP_BOOL;
            break;
        case OP_INT:
            nd->fast = !has ? F_SKIP_LONG : nd->params[0] == 4 ? F_INT32 : F_INT64;
            break;
        case OP_FLOAT:
            nd->size = 4;
            nd->what = FLOAT_TRUNCATED;
            nd->fast = !has ? F_SKIP_SIZED : nd->params[0] == 8 ? F_FLOAT_WIDEN : F_COPY_SIZED;
            break;
        case OP_DOUBLE:
            nd->size = 8;
            nd->what = FLOAT_TRUNCATED;
            nd->fast = has ? F_COPY_SIZED : F_SKIP_SIZED;
            break;
        case OP_FIXED:
            nd->size = nd->params[0];
            nd->what = "truncated data: fixed runs past the end";
            nd->fast = has ? F_COPY_SIZED : F_SKIP_SIZED;
            break;
        case OP_BYTES:
            nd->what = "bytes";
            nd->fast = has ? F_BYTES : F_SKIP_BYTES;
            break;
        case OP_STRING:
            nd->what = "string";
            nd->fast = has ? F_STRING : F_SKIP_BYTES;
            break;
        case OP_ENUM:
            nd->fast = F_ENUM;
            break;
        case OP_RECORD:
            nd->fast = F_RECORD;
            break;
        case OP_ARRAY:
        case OP_MAP:
            nd->fast = nd->op == OP_ARRAY ? F_ARRAY : F_MAP;
            if (has) nd->list_child = p->builders[nd->builder].children[0];
            break;
        case OP_UNION:
            nd->fast = F_UNION;
            break;
    }
}

/* Whether values of `nd` take no bytes at all (a record's fields nest at most MAX_DEPTH deep). */
static int zero_width(const Program *p, const Node *nd, int depth) {
    switch (nd->op) {
        case OP_NULL:
            return 1;
        case OP_FIXED:
            return nd->params[0] == 0;
        case OP_RECORD:
            if (depth >= MAX_DEPTH) return 0;
            for (int64_t i = 0; i < nd->params[0]; i++)
                if (!zero_width(p, &p->nodes[nd->params[1 + i]], depth + 1)) return 0;
            return 1;
        default:
            return 0;
    }
}

static PyObject *py_compile(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer words, blob;
    if (!PyArg_ParseTuple(args, "y*y*:compile", &words, &blob)) return NULL;
    Program *p = (Program *)calloc(1, sizeof(Program));
    if (p == NULL) goto nomem;
    size_t n_words = (size_t)words.len / 8;
    p->words = (int64_t *)malloc(n_words * 8 + 8);
    p->blob = (char *)malloc((size_t)blob.len + 1);
    if (p->words == NULL || p->blob == NULL) goto nomem;
    memcpy(p->words, words.buf, n_words * 8);
    memcpy(p->blob, blob.buf, (size_t)blob.len);
    p->blob_len = blob.len;
    const int64_t *w = p->words;
    size_t at = 0;
#define NEED(k) \
    if (n_words - at < (size_t)(k)) goto invalid;
    if ((size_t)words.len % 8) goto invalid;
    NEED(4);
    if (w[0] != PROGRAM_VERSION || w[1] < 1 || w[1] > (1 << 24) || w[2] < 1 || w[2] > (1 << 24)) goto invalid;
    p->n_builders = (int)w[1];
    p->n_nodes = (int)w[2];
    if (w[3] < 0 || w[3] >= w[2]) goto invalid;
    p->root = (int)w[3];
    at = 4;
    p->builders = (BuilderSpec *)calloc((size_t)p->n_builders, sizeof(BuilderSpec));
    p->nodes = (Node *)calloc((size_t)p->n_nodes, sizeof(Node));
    if (p->builders == NULL || p->nodes == NULL) goto nomem;
    for (int i = 0; i < p->n_builders; i++) {
        NEED(4);
        BuilderSpec *s = &p->builders[i];
        if (w[at] < B_NULL || w[at] > B_LIST || w[at + 3] < 0 || w[at + 3] > p->n_builders) goto invalid;
        if (w[at + 2] < 0 || w[at + 2] > (1 << 20)) goto invalid;
        s->kind = (int)w[at];
        s->nullable = w[at + 1] != 0;
        s->width = w[at + 2];
        s->n_children = (int)w[at + 3];
        at += 4;
        NEED(s->n_children);
        s->children = (int *)malloc(sizeof(int) * (size_t)(s->n_children + 1));
        if (s->children == NULL) goto nomem;
        for (int k = 0; k < s->n_children; k++) {
            /* children have larger ids: the builder table is a tree, so no cycles */
            if (w[at + k] <= i || w[at + k] >= p->n_builders) goto invalid;
            s->children[k] = (int)w[at + k];
        }
        if ((s->kind == B_LIST && s->n_children != 1) || (s->kind != B_LIST && s->kind != B_STRUCT && s->n_children))
            goto invalid;
        at += (size_t)s->n_children;
    }
    for (int i = 0; i < p->n_nodes; i++) {
        NEED(4);
        Node *nd = &p->nodes[i];
        if (w[at] < 0 || w[at] >= OP_COUNT || w[at + 1] < -1 || w[at + 1] >= p->n_builders) goto invalid;
        if (w[at + 3] < 0 || w[at + 3] > (int64_t)(n_words - at - 4)) goto invalid;
        nd->op = (int)w[at];
        nd->builder = (int)w[at + 1];
        nd->min_positive = w[at + 2] != 0;
        nd->n_params = (int)w[at + 3];
        nd->params = w + at + 4;
        at += 4 + (size_t)nd->n_params;
        if (!check_param_ids(p, nd)) goto invalid;
        derive_node(p, nd);
    }
    if (at != n_words) goto invalid;
    for (int i = 0; i < p->n_nodes; i++) p->nodes[i].zero_width = zero_width(p, &p->nodes[i], 0);
    PyBuffer_Release(&words);
    PyBuffer_Release(&blob);
    PyObject *capsule = PyCapsule_New(p, CAPSULE_NAME, capsule_free);
    if (capsule == NULL) program_free(p);
    return capsule;
#undef NEED
invalid:
    PyBuffer_Release(&words);
    PyBuffer_Release(&blob);
    program_free(p);
    PyErr_SetString(PyExc_ValueError, "invalid Avro decoding program");
    return NULL;
nomem:
    PyBuffer_Release(&words);
    PyBuffer_Release(&blob);
    program_free(p);
    return PyErr_NoMemory();
}

/* ------------------------------------------------------------------------------------------ */
/* Decoding */

static PyObject *buf_to_bytes(const Buf *buf, size_t len) {
    return PyBytes_FromStringAndSize((const char *)buf->data, (Py_ssize_t)len);
}

/* Kept for the next decode: buffers up to this size (a larger one is freed after use). */
#define RETAIN_MAX ((size_t)64 << 20)

static PyObject *py_decode(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *capsule;
    Py_buffer data;
    Py_buffer bounds = {0};
    long long count;
    if (!PyArg_ParseTuple(args, "Oy*L|y*:decode", &capsule, &data, &count, &bounds)) return NULL;
    const int64_t *bound = bounds.buf ? (const int64_t *)bounds.buf : NULL;
    Py_ssize_t n_bounds = bounds.buf ? bounds.len / (Py_ssize_t)(2 * sizeof(int64_t)) : 0;
    Py_ssize_t next_bound = 0;
    if (!PyCapsule_IsValid(capsule, CAPSULE_NAME)) {
        if (bounds.buf) PyBuffer_Release(&bounds);
        PyBuffer_Release(&data);
        PyErr_SetString(PyExc_TypeError, "decode() needs a program from compile()");
        return NULL;
    }
    Program *prog = (Program *)PyCapsule_GetPointer(capsule, CAPSULE_NAME);
    if (prog == NULL) {
        if (bounds.buf) PyBuffer_Release(&bounds);
        PyBuffer_Release(&data);
        return NULL;
    }
    if (count < 0 || count > MAX_OFFSET) {
        if (bounds.buf) PyBuffer_Release(&bounds);
        PyBuffer_Release(&data);
        PyErr_Format(DecodeError, "invalid record count %lld", count);
        return NULL;
    }
    Ctx c;
    memset(&c, 0, sizeof(c));
    c.prog = prog;
    c.pos = (const uint8_t *)data.buf;
    c.end = c.pos + data.len;
    int cached = 0;
    if (!__atomic_exchange_n(&prog->busy, 1, __ATOMIC_ACQUIRE)) {
        if (prog->cache == NULL) prog->cache = (Builder *)calloc((size_t)prog->n_builders, sizeof(Builder));
        if (prog->cache != NULL) {
            cached = 1;
            c.b = prog->cache;
            for (int i = 0; i < prog->n_builders; i++) { /* emptied, keeping their memory */
                Builder *b = &c.b[i];
                b->length = b->null_count = b->bits = 0;
                b->validity.len = b->offsets.len = b->values.len = 0;
            }
        } else {
            __atomic_store_n(&prog->busy, 0, __ATOMIC_RELEASE);
        }
    }
    if (!cached) c.b = (Builder *)calloc((size_t)prog->n_builders, sizeof(Builder));
    if (c.b == NULL) {
        if (bounds.buf) PyBuffer_Release(&bounds);
        PyBuffer_Release(&data);
        return PyErr_NoMemory();
    }
    c.nodes = prog->nodes;
    for (int i = 0; i < prog->n_builders; i++) c.b[i].nullable = prog->builders[i].nullable;
    long long record = 0;
    int rc = 0;
    const Node *root = &prog->nodes[prog->root];
    if (root->min_positive && count > data.len) {
        snprintf(c.err, sizeof(c.err), "truncated data: %lld records cannot fit in %lld bytes", count,
                 (long long)data.len);
        rc = -1;
    }
    Py_BEGIN_ALLOW_THREADS
    for (int i = 0; i < prog->n_builders && rc == 0; i++) {
        int kind = prog->builders[i].kind;
        if ((kind == B_VAR || kind == B_LIST) && push_offset(&c, &c.b[i].offsets, 0) < 0) rc = -1;
    }
    for (; rc == 0 && record < count; record++) {
        const uint8_t *next = decode_value(&c, c.b, root, c.pos, c.end);
        if (next == NULL) {
            rc = -1;
            break;
        }
        c.pos = next;
        while (next_bound < n_bounds && bound[2 * next_bound] == record + 1) {
            if (c.pos - (const uint8_t *)data.buf != bound[2 * next_bound + 1]) {
                rc = fail(&c, "block boundary");
                break;
            }
            next_bound++;
        }
    }
    /* The bitmaps returned cover every slot (bytes past the last bit set are zero). */
    for (int i = 0; i < prog->n_builders && rc == 0; i++) {
        Builder *b = &c.b[i];
        const BuilderSpec *s = &prog->builders[i];
        if (s->nullable && b->null_count && s->kind != B_NULL &&
            buf_zero_to(&c, &b->validity, (size_t)((b->length + 7) / 8)) < 0)
            rc = -1;
        if (s->kind == B_BOOL && buf_zero_to(&c, &b->values, (size_t)((b->bits + 7) / 8)) < 0) rc = -1;
    }
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (rc < 0) {
        if (c.oom && !c.err[0]) {
            PyErr_NoMemory();
        } else {
            PyObject *err = Py_BuildValue("(Ls)", record, c.err[0] ? c.err : "decoding failed");
            if (err) {
                PyErr_SetObject(DecodeError, err);
                Py_DECREF(err);
            }
        }
        goto done;
    }
    PyObject *list = PyList_New(prog->n_builders);
    if (list == NULL) goto done;
    for (int i = 0; i < prog->n_builders; i++) {
        Builder *b = &c.b[i];
        const BuilderSpec *s = &prog->builders[i];
        PyObject *validity, *offsets, *values;
        if (s->nullable && b->null_count && s->kind != B_NULL) {
            validity = buf_to_bytes(&b->validity, (size_t)((b->length + 7) / 8));
        } else {
            validity = Py_NewRef(Py_None);
        }
        if (s->kind == B_VAR || s->kind == B_LIST) {
            offsets = buf_to_bytes(&b->offsets, b->offsets.len);
        } else {
            offsets = Py_NewRef(Py_None);
        }
        if (s->kind == B_BOOL) {
            values = buf_to_bytes(&b->values, (size_t)((b->bits + 7) / 8));
        } else if (s->kind == B_FIXED || s->kind == B_VAR) {
            values = buf_to_bytes(&b->values, b->values.len);
        } else {
            values = Py_NewRef(Py_None);
        }
        PyObject *item = NULL;
        if (validity && offsets && values)
            item = Py_BuildValue("(LLOOO)", (long long)b->length, (long long)b->null_count, validity, offsets, values);
        Py_XDECREF(validity);
        Py_XDECREF(offsets);
        Py_XDECREF(values);
        if (item == NULL) {
            Py_DECREF(list);
            goto done;
        }
        PyList_SET_ITEM(list, i, item);
    }
    result = Py_BuildValue("(Nn)", list, (Py_ssize_t)(c.pos - (const uint8_t *)data.buf));
done:
    for (int i = 0; i < prog->n_builders; i++) {
        Buf *bufs[3] = {&c.b[i].validity, &c.b[i].offsets, &c.b[i].values};
        for (int k = 0; k < 3; k++) {
            if (!cached || bufs[k]->cap > RETAIN_MAX) {
                free(bufs[k]->data);
                bufs[k]->data = NULL;
                bufs[k]->len = bufs[k]->cap = 0;
            }
        }
    }
    if (cached)
        __atomic_store_n(&prog->busy, 0, __ATOMIC_RELEASE);
    else
        free(c.b);
    if (bounds.buf) PyBuffer_Release(&bounds);
    PyBuffer_Release(&data);
    return result;
}

static PyMethodDef methods[] = {
    {"compile", py_compile, METH_VARARGS, "compile(program: bytes, blob: bytes) -> capsule"},
    {"decode", py_decode, METH_VARARGS,
     "decode(program, data, count, boundaries=None) -> (per-builder (length, null_count, validity, offsets, values), "
     "bytes consumed)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_avrodecode", "Native Avro record decoder into Arrow buffers.", -1, methods,
};

PyMODINIT_FUNC PyInit__avrodecode(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    DecodeError = PyErr_NewException("beam_tensorize.kernels._avrodecode.DecodeError", PyExc_ValueError, NULL);
    if (DecodeError == NULL || PyModule_AddObject(m, "DecodeError", Py_NewRef(DecodeError)) < 0) {
        Py_XDECREF(DecodeError);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "VERSION", PROGRAM_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
