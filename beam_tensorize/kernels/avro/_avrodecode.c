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
    int n_params;
    const int64_t *params;
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
} Program;

typedef struct {
    uint8_t *data;
    size_t len;
    size_t cap;
} Buf;

typedef struct {
    int64_t length;
    int64_t null_count;
    int64_t bits;  /* bits used in values (B_BOOL) */
    Buf validity;
    Buf offsets;
    Buf values;
} Builder;

typedef struct {
    const Program *prog;
    Builder *b;
    const uint8_t *pos;
    const uint8_t *end;
    int depth;
    int oom;
    char err[256];
} Ctx;

/* ------------------------------------------------------------------------------------------ */
/* Buffers */

static int buf_reserve(Ctx *c, Buf *buf, size_t extra) {
    if (buf->cap - buf->len >= extra) return 0;
    if (extra > ((size_t)1 << 40)) {
        c->oom = 1;
        return -1;
    }
    size_t cap = buf->cap ? buf->cap : 64;
    while (cap - buf->len < extra) cap *= 2;
    uint8_t *p = (uint8_t *)realloc(buf->data, cap);
    if (p == NULL) {
        c->oom = 1;
        return -1;
    }
    memset(p + buf->cap, 0, cap - buf->cap);
    buf->data = p;
    buf->cap = cap;
    return 0;
}

static inline int buf_append(Ctx *c, Buf *buf, const void *src, size_t n) {
    if (buf->cap - buf->len < n && buf_reserve(c, buf, n) < 0) return -1;
    if (n) memcpy(buf->data + buf->len, src, n);
    buf->len += n;
    return 0;
}

/* Sets bit `index` of a bitmap to `value` (the buffer is zero-filled as it grows). */
static inline int bit_append(Ctx *c, Buf *buf, int64_t index, int value) {
    size_t need = (size_t)(index >> 3) + 1;
    if (need > buf->len) {
        if (buf_reserve(c, buf, need - buf->len) < 0) return -1;
        buf->len = need;
    }
    if (value) buf->data[index >> 3] |= (uint8_t)(1u << (index & 7));
    return 0;
}

static int fail(Ctx *c, const char *message) {
    if (!c->err[0]) snprintf(c->err, sizeof(c->err), "%s", message);
    return -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Builders */

/* Marks the next slot of builder `id` valid (the value itself is appended by the caller). */
static inline int mark_valid(Ctx *c, int id) {
    Builder *b = &c->b[id];
    const BuilderSpec *s = &c->prog->builders[id];
    if (s->nullable && bit_append(c, &b->validity, b->length, 1) < 0) return -1;
    b->length++;
    return 0;
}

static inline int push_offset(Ctx *c, Buf *offsets, int64_t end) {
    if (end > MAX_OFFSET) return fail(c, "more than 2**31-1 values in one block: offsets overflow");
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
/* Reading */

static inline int read_long(Ctx *c, int64_t *out) {
    const uint8_t *p = c->pos;
    uint64_t result = 0;
    int shift = 0;
    for (;;) {
        if (p >= c->end) return fail(c, "truncated data: a variable-length integer runs past the end");
        uint8_t byte = *p++;
        result |= (uint64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80)) break;
        shift += 7;
        if (shift >= 70) return fail(c, "variable-length integer is longer than 10 bytes");
    }
    c->pos = p;
    *out = (int64_t)((result >> 1) ^ (~(result & 1) + 1));
    return 0;
}

static inline int read_length(Ctx *c, int64_t *out, const char *what) {
    if (read_long(c, out) < 0) return -1;
    if (*out < 0) {
        snprintf(c->err, sizeof(c->err), "negative %s length %lld", what, (long long)*out);
        return -1;
    }
    if (*out > c->end - c->pos) {
        snprintf(c->err, sizeof(c->err), "truncated data: %s of %lld bytes, only %lld left", what,
                 (long long)*out, (long long)(c->end - c->pos));
        return -1;
    }
    return 0;
}

/* Strict UTF-8 validation, as Python's decoder: no overlongs, surrogates or values > U+10FFFF. */
static int utf8_valid(const uint8_t *s, size_t n) {
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

static int decode_node(Ctx *c, int node_id);

static int decode_union(Ctx *c, const Node *nd) {
    int64_t index;
    if (read_long(c, &index) < 0) return -1;
    int64_t mode = nd->params[0], n = nd->params[1];
    if (index < 0 || index >= n) {
        snprintf(c->err, sizeof(c->err), "union branch index %lld out of range (%lld branches)",
                 (long long)index, (long long)n);
        return -1;
    }
    int branch = (int)nd->params[2 + 2 * index];
    int member = (int)nd->params[3 + 2 * index];
    if (nd->builder < 0) return branch < 0 ? 0 : decode_node(c, branch);
    if (branch < 0) return append_null(c, nd->builder);
    if (mode == 0) return decode_node(c, branch); /* the branch writes into this builder */
    /* A struct of member<i> fields: the branch fills one member, the others get nulls. */
    const BuilderSpec *s = &c->prog->builders[nd->builder];
    if (decode_node(c, branch) < 0) return -1;
    for (int i = 0; i < s->n_children; i++)
        if (i != member && append_null(c, s->children[i]) < 0) return -1;
    return mark_valid(c, nd->builder);
}

static int decode_array(Ctx *c, const Node *nd, int is_map) {
    int id = nd->builder;
    int item = is_map ? (int)nd->params[2] : (int)nd->params[0];
    int entries = is_map ? (int)nd->params[0] : -1;
    int keys = is_map ? (int)nd->params[1] : -1;
    int item_positive = is_map ? 1 : c->prog->nodes[item].min_positive;
    int64_t total = 0;
    for (;;) {
        int64_t n;
        if (read_long(c, &n) < 0) return -1;
        if (n == 0) break;
        if (n < 0) {
            int64_t size;
            if (n == INT64_MIN) return fail(c, "invalid block item count");
            n = -n;
            if (read_length(c, &size, "array/map block") < 0) return -1;
            if (id < 0) { /* skipping: jump over the block */
                c->pos += size;
                continue;
            }
        }
        if (item_positive && n > c->end - c->pos)
            return fail(c, "truncated data: more items announced than bytes left");
        if (n > MAX_OFFSET - total) return fail(c, "more than 2**31-1 items in one array or map");
        total += n;
        for (int64_t i = 0; i < n; i++) {
            if (is_map) {
                int64_t len;
                if (read_length(c, &len, "map key") < 0) return -1;
                if (id >= 0) {
                    Builder *kb = &c->b[keys];
                    if (!utf8_valid(c->pos, (size_t)len)) return fail(c, "map key is not valid UTF-8");
                    if (buf_append(c, &kb->values, c->pos, (size_t)len) < 0) return -1;
                    if (push_offset(c, &kb->offsets, (int64_t)kb->values.len) < 0) return -1;
                    kb->length++;
                }
                c->pos += len;
            }
            if (decode_node(c, item) < 0) return -1;
            if (is_map && id >= 0) c->b[entries].length++;
        }
    }
    if (id < 0) return 0;
    const BuilderSpec *s = &c->prog->builders[id];
    if (push_offset(c, &c->b[id].offsets, c->b[s->children[0]].length) < 0) return -1;
    return mark_valid(c, id);
}

static int decode_node(Ctx *c, int node_id) {
    const Node *nd = &c->prog->nodes[node_id];
    int id = nd->builder;
    Builder *b = id >= 0 ? &c->b[id] : NULL;
    int rc = 0;
    if (++c->depth > MAX_DEPTH) {
        c->depth--;
        return fail(c, "values nested too deeply");
    }
    switch (nd->op) {
        case OP_NULL:
            if (b) rc = append_null(c, id);
            break;
        case OP_BOOL: {
            if (c->pos >= c->end) {
                rc = fail(c, "truncated data: boolean runs past the end");
                break;
            }
            uint8_t v = *c->pos++;
            if (b) {
                if (bit_append(c, &b->values, b->bits, v != 0) < 0) {
                    rc = -1;
                    break;
                }
                b->bits++;
                rc = mark_valid(c, id);
            }
            break;
        }
        case OP_INT: {
            int64_t v;
            if (read_long(c, &v) < 0) {
                rc = -1;
                break;
            }
            if (b) {
                if (nd->params[0] == 4) {
                    if (v < INT32_MIN || v > INT32_MAX) {
                        snprintf(c->err, sizeof(c->err), "int value %lld out of the 32-bit range", (long long)v);
                        rc = -1;
                        break;
                    }
                    int32_t w = (int32_t)v;
                    rc = buf_append(c, &b->values, &w, 4);
                } else {
                    rc = buf_append(c, &b->values, &v, 8);
                }
                if (rc == 0) rc = mark_valid(c, id);
            }
            break;
        }
        case OP_FLOAT:
        case OP_DOUBLE: {
            size_t size = nd->op == OP_FLOAT ? 4 : 8;
            if ((size_t)(c->end - c->pos) < size) {
                rc = fail(c, "truncated data: float/double runs past the end");
                break;
            }
            if (b) {
                if (nd->op == OP_FLOAT && nd->params[0] == 8) {
                    float f;
                    memcpy(&f, c->pos, 4);
                    double d = (double)f;
                    rc = buf_append(c, &b->values, &d, 8);
                } else {
                    rc = buf_append(c, &b->values, c->pos, size);
                }
                if (rc == 0) rc = mark_valid(c, id);
            }
            c->pos += size;
            break;
        }
        case OP_BYTES:
        case OP_STRING: {
            int64_t len;
            if (read_length(c, &len, nd->op == OP_STRING ? "string" : "bytes") < 0) {
                rc = -1;
                break;
            }
            if (b) {
                if (nd->op == OP_STRING && !utf8_valid(c->pos, (size_t)len)) {
                    rc = fail(c, "string is not valid UTF-8");
                    break;
                }
                if (buf_append(c, &b->values, c->pos, (size_t)len) < 0 ||
                    push_offset(c, &b->offsets, (int64_t)b->values.len) < 0 || mark_valid(c, id) < 0) {
                    rc = -1;
                    break;
                }
            }
            c->pos += len;
            break;
        }
        case OP_FIXED: {
            int64_t size = nd->params[0];
            if (size > c->end - c->pos) {
                rc = fail(c, "truncated data: fixed runs past the end");
                break;
            }
            if (b) {
                rc = buf_append(c, &b->values, c->pos, (size_t)size);
                if (rc == 0) rc = mark_valid(c, id);
            }
            c->pos += size;
            break;
        }
        case OP_ENUM: {
            int64_t index;
            if (read_long(c, &index) < 0) {
                rc = -1;
                break;
            }
            int64_t n = nd->params[0];
            if (index < 0 || index >= n) {
                snprintf(c->err, sizeof(c->err), "enum index %lld out of range (%lld symbols)",
                         (long long)index, (long long)n);
                rc = -1;
                break;
            }
            if (b) {
                int64_t start = nd->params[1 + index], stop = nd->params[2 + index];
                if (buf_append(c, &b->values, c->prog->blob + start, (size_t)(stop - start)) < 0 ||
                    push_offset(c, &b->offsets, (int64_t)b->values.len) < 0 || mark_valid(c, id) < 0)
                    rc = -1;
            }
            break;
        }
        case OP_RECORD: {
            int64_t n = nd->params[0];
            for (int64_t i = 0; i < n; i++) {
                if (decode_node(c, (int)nd->params[1 + i]) < 0) {
                    rc = -1;
                    break;
                }
            }
            if (rc == 0 && b) rc = mark_valid(c, id);
            break;
        }
        case OP_ARRAY:
            rc = decode_array(c, nd, 0);
            break;
        case OP_MAP:
            rc = decode_array(c, nd, 1);
            break;
        case OP_UNION:
            rc = decode_union(c, nd);
            break;
        default:
            rc = fail(c, "invalid program");
    }
    c->depth--;
    return rc;
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
    }
    if (at != n_words) goto invalid;
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
    c.b = (Builder *)calloc((size_t)prog->n_builders, sizeof(Builder));
    if (c.b == NULL) {
        if (bounds.buf) PyBuffer_Release(&bounds);
        PyBuffer_Release(&data);
        return PyErr_NoMemory();
    }
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
        if (decode_node(&c, prog->root) < 0) {
            rc = -1;
            break;
        }
        while (next_bound < n_bounds && bound[2 * next_bound] == record + 1) {
            if (c.pos - (const uint8_t *)data.buf != bound[2 * next_bound + 1]) {
                rc = fail(&c, "block boundary");
                break;
            }
            next_bound++;
        }
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
        free(c.b[i].validity.data);
        free(c.b[i].offsets.data);
        free(c.b[i].values.data);
    }
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
