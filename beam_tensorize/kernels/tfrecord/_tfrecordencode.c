/*
 * Native fast path of the TFRecord writer: tf.train.Example encoding and TFRecord framing.
 *
 * The Python side (example_encoder.py, framing.py) normalises the input and keeps a numpy /
 * pyarrow fallback that gives the same bytes; this module only does the byte work, each in one
 * pass into one preallocated output (the GIL is released while it runs):
 *
 *   encode(columns, n, mode, limit) -> (offsets: bytes, data: bytes, large: bool)
 *       Serializes n rows. `columns` is a list, in feature key order, of tuples
 *           (kind, key_part, counts, written, values, value_offsets)
 *       kind:          0 int64 (values: native int64), 1 float (values: little-endian float32
 *                      bytes), 2 bytes (values: the data buffer, value_offsets: native int64
 *                      offsets of every value into it, one more than the values).
 *       key_part:      the map entry's bytes before the Feature length: 0x0A, varint(len(key)),
 *                      key, 0x12.
 *       counts:        native int64 [n], values per row (consecutive in `values`).
 *       written:       uint8 [n], 0 leaves the feature out of the row; None writes it on all rows.
 *       mode 0 writes one Example per row; mode 1 (one column) writes its Feature message per row
 *       (`written` then only chooses the binary / large_binary decision, as the Python does).
 *       The offsets are int32 unless the output is over `limit` bytes (then int64; `large`).
 *   frame(offsets, data, n, width) -> bytes
 *       TFRecord frames of the n records data[offsets[i]:offsets[i+1]] (offsets native int32 when
 *       width is 4, int64 when 8): uint64 length LE, masked crc32c of those 8 bytes, the data,
 *       masked crc32c of the data.
 *   frame_list(records) -> bytes
 *       The same, from a list of bytes-like objects.
 *   crc32c(data, portable=False) -> int
 *       The (unmasked) CRC-32C of data; `portable` uses the table code even where the SSE4.2
 *       instruction is available (for tests).
 *   hardware_crc() -> bool
 *       Whether CRC-32C uses the SSE4.2 instruction on this machine.
 *
 * CRC-32C (Castagnoli) is computed with the SSE4.2 crc32 instruction on x86-64 when the CPU has
 * it (checked at import), else with slicing-by-8 tables (also when compiled with
 * -DTFRECORD_PORTABLE_CRC).
 *
 * Every buffer index is checked against the buffer sizes before anything is read; an
 * inconsistent input raises ValueError.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MODULE_VERSION 1

#if !defined(TFRECORD_PORTABLE_CRC) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_SSE42 1
#include <nmmintrin.h>
#else
#define HAVE_SSE42 0
#endif

enum { KIND_INT64 = 0, KIND_FLOAT = 1, KIND_BYTES = 2 };
enum { MODE_EXAMPLES = 0, MODE_FEATURES = 1 };

static const uint8_t KIND_TAGS[3] = {0x1A, 0x12, 0x0A};
#define TAG_1 0x0A

/* ------------------------------------------------------------------------------------------ */
/* Little helpers */

static inline int64_t load_i64(const uint8_t *p) {
    int64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline int64_t load_i32(const uint8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline void store_le64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static inline void store_le32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Bytes of the protobuf varint of v (1..10). Small values (lengths, most ids) take the
 * predictable branches; BSR is slow on some CPUs. */
static inline int64_t varint_len(uint64_t v) {
    if (v < ((uint64_t)1 << 7)) return 1;
    if (v < ((uint64_t)1 << 14)) return 2;
    if (v < ((uint64_t)1 << 21)) return 3;
#if defined(__GNUC__) || defined(__clang__)
    /* bits/7 rounded up, with bits = significant bits (at least 1): (9 * bits + 64) / 64. */
    uint32_t bits = 64 - (uint32_t)__builtin_clzll(v | 1);
    return (int64_t)((bits * 9 + 64) >> 6);
#else
    int64_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
#endif
}

static inline uint8_t *put_varint(uint8_t *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* memcpy for the short copies that dominate (keys, strings): no call for up to 16 bytes. */
static inline uint8_t *put_bytes(uint8_t *dst, const uint8_t *src, size_t len) {
    if (len >= 8 && len <= 16) {
        uint64_t a, b;
        memcpy(&a, src, 8);
        memcpy(&b, src + len - 8, 8);
        memcpy(dst, &a, 8);
        memcpy(dst + len - 8, &b, 8);
    } else if (len >= 4 && len < 8) {
        uint32_t a, b;
        memcpy(&a, src, 4);
        memcpy(&b, src + len - 4, 4);
        memcpy(dst, &a, 4);
        memcpy(dst + len - 4, &b, 4);
    } else if (len < 4) {
        for (size_t i = 0; i < len; i++) dst[i] = src[i];
    } else {
        memcpy(dst, src, len);
    }
    return dst + len;
}

/* ------------------------------------------------------------------------------------------ */
/* CRC-32C */

static uint32_t crc_table[8][256];
static int use_hw_crc = 0;

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        for (int k = 1; k < 8; k++) {
            uint32_t prev = crc_table[k - 1][i];
            crc_table[k][i] = (prev >> 8) ^ crc_table[0][prev & 0xFF];
        }
    }
#if HAVE_SSE42
    __builtin_cpu_init();
    use_hw_crc = __builtin_cpu_supports("sse4.2") ? 1 : 0;
#endif
}

/* Extends a raw (not inverted) CRC state over p[0:len], slicing by 8. */
static uint32_t crc_extend_table(uint32_t crc, const uint8_t *p, size_t len) {
    while (len && ((uintptr_t)p & 7)) {
        crc = crc_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
        len--;
    }
    while (len >= 8) {
        uint32_t lo = ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24) ^ crc;
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        crc = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^ crc_table[5][(lo >> 16) & 0xFF] ^
              crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xFF] ^ crc_table[2][(hi >> 8) & 0xFF] ^
              crc_table[1][(hi >> 16) & 0xFF] ^ crc_table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--) crc = crc_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

#if HAVE_SSE42
__attribute__((target("sse4.2"))) static uint32_t crc_extend_hw(uint32_t crc, const uint8_t *p, size_t len) {
    while (len && ((uintptr_t)p & 7)) {
        crc = _mm_crc32_u8(crc, *p++);
        len--;
    }
    uint64_t c = crc;
    while (len >= 32) {
        uint64_t w0, w1, w2, w3;
        memcpy(&w0, p, 8);
        memcpy(&w1, p + 8, 8);
        memcpy(&w2, p + 16, 8);
        memcpy(&w3, p + 24, 8);
        c = _mm_crc32_u64(c, w0);
        c = _mm_crc32_u64(c, w1);
        c = _mm_crc32_u64(c, w2);
        c = _mm_crc32_u64(c, w3);
        p += 32;
        len -= 32;
    }
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        p += 8;
        len -= 8;
    }
    crc = (uint32_t)c;
    while (len--) crc = _mm_crc32_u8(crc, *p++);
    return crc;
}
#endif

static inline uint32_t crc32c(const uint8_t *p, size_t len) {
#if HAVE_SSE42
    if (use_hw_crc) return ~crc_extend_hw(0xFFFFFFFFu, p, len);
#endif
    return ~crc_extend_table(0xFFFFFFFFu, p, len);
}

static inline uint32_t mask_crc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u; }

/* Writes one frame of data[0:len] at out; returns the end. */
static inline uint8_t *put_frame(uint8_t *out, const uint8_t *data, uint64_t len) {
    store_le64(out, len);
    store_le32(out + 8, mask_crc(crc32c(out, 8)));
    if (len) memcpy(out + 12, data, (size_t)len);
    store_le32(out + 12 + len, mask_crc(crc32c(data, (size_t)len)));
    return out + 16 + len;
}

/* ------------------------------------------------------------------------------------------ */
/* Buffers */

/* Gets a C-contiguous buffer of obj (None -> an empty view with buf NULL when allowed). */
static int get_buffer(PyObject *obj, Py_buffer *view, const char *what, int allow_none) {
    if (obj == Py_None && allow_none) {
        memset(view, 0, sizeof(*view));
        return 0;
    }
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0) {
        PyErr_Format(PyExc_TypeError, "%s must be a contiguous buffer", what);
        return -1;
    }
    return 0;
}

static void release(Py_buffer *view) {
    if (view->obj != NULL) PyBuffer_Release(view);
}

/* ------------------------------------------------------------------------------------------ */
/* Framing */

static PyObject *py_frame(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *offsets_obj, *data_obj;
    Py_ssize_t n;
    int width;
    if (!PyArg_ParseTuple(args, "OOni:frame", &offsets_obj, &data_obj, &n, &width)) return NULL;
    if (width != 4 && width != 8) {
        PyErr_SetString(PyExc_ValueError, "offset width must be 4 or 8");
        return NULL;
    }
    Py_buffer offsets, data;
    if (get_buffer(offsets_obj, &offsets, "offsets", 0) < 0) return NULL;
    if (get_buffer(data_obj, &data, "data", 0) < 0) {
        release(&offsets);
        return NULL;
    }
    PyObject *result = NULL;
    const uint8_t *off = (const uint8_t *)offsets.buf;
    const uint8_t *src = (const uint8_t *)data.buf;
    if (n < 0 || offsets.len < (n + 1) * (Py_ssize_t)width) {
        PyErr_SetString(PyExc_ValueError, "offsets buffer too short");
        goto done;
    }
    int64_t total = 0;
    int64_t prev = width == 8 ? load_i64(off) : load_i32(off);
    if (prev < 0) {
        PyErr_SetString(PyExc_ValueError, "negative offset");
        goto done;
    }
    for (Py_ssize_t i = 1; i <= n; i++) {
        int64_t next = width == 8 ? load_i64(off + i * 8) : load_i32(off + i * 4);
        if (next < prev || next > (int64_t)data.len) {
            PyErr_Format(PyExc_ValueError, "record %zd: offsets out of order or past the data", i - 1);
            goto done;
        }
        total += next - prev + 16;
        prev = next;
    }
    if (total > PY_SSIZE_T_MAX) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (result == NULL) goto done;
    uint8_t *out = (uint8_t *)PyBytes_AS_STRING(result);
    Py_BEGIN_ALLOW_THREADS
    int64_t start = width == 8 ? load_i64(off) : load_i32(off);
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t stop = width == 8 ? load_i64(off + (i + 1) * 8) : load_i32(off + (i + 1) * 4);
        out = put_frame(out, src + start, (uint64_t)(stop - start));
        start = stop;
    }
    Py_END_ALLOW_THREADS
done:
    release(&offsets);
    release(&data);
    return result;
}

static PyObject *py_frame_list(PyObject *self, PyObject *arg) {
    (void)self;
    PyObject *seq = PySequence_Fast(arg, "frame_list() needs a sequence of bytes-like objects");
    if (seq == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    PyObject *result = NULL;
    Py_ssize_t got = 0;
    Py_buffer *views = (Py_buffer *)PyMem_Calloc(n ? (size_t)n : 1, sizeof(Py_buffer));
    if (views == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t total = 0;
    for (; got < n; got++) {
        if (get_buffer(items[got], &views[got], "a record", 0) < 0) goto done;
        total += (int64_t)views[got].len + 16;
    }
    if (total > PY_SSIZE_T_MAX) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (result == NULL) goto done;
    uint8_t *out = (uint8_t *)PyBytes_AS_STRING(result);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) out = put_frame(out, (const uint8_t *)views[i].buf, (uint64_t)views[i].len);
    Py_END_ALLOW_THREADS
done:
    if (views != NULL) {
        for (Py_ssize_t i = 0; i < got; i++) PyBuffer_Release(&views[i]);
        PyMem_Free(views);
    }
    Py_DECREF(seq);
    return result;
}

static PyObject *py_crc32c(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer data;
    int portable = 0;
    if (!PyArg_ParseTuple(args, "y*|p:crc32c", &data, &portable)) return NULL;
    uint32_t crc;
    if (portable) {
        crc = ~crc_extend_table(0xFFFFFFFFu, (const uint8_t *)data.buf, (size_t)data.len);
    } else {
        crc = crc32c((const uint8_t *)data.buf, (size_t)data.len);
    }
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLong(crc);
}

static PyObject *py_hardware_crc(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyBool_FromLong(use_hw_crc);
}

/* ------------------------------------------------------------------------------------------ */
/* Example encoding */

typedef struct {
    int kind;
    Py_buffer key, counts, written, values, voffsets;
    const int64_t *count;    /* counts.buf (checked to be aligned) */
    int64_t n_values;
    int64_t *payload;        /* per row: bytes of the list content (packed values or bytes entries) */
} Column;

static void column_release(Column *c) {
    release(&c->key);
    release(&c->counts);
    release(&c->written);
    release(&c->values);
    release(&c->voffsets);
    PyMem_RawFree(c->payload);
    c->payload = NULL;
}

static int column_parse(PyObject *spec, Column *c, Py_ssize_t n, Py_ssize_t index) {
    PyObject *kind, *key, *counts, *written, *values, *voffsets;
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 6) {
        PyErr_Format(PyExc_TypeError, "column %zd: expected a tuple of 6", index);
        return -1;
    }
    kind = PyTuple_GET_ITEM(spec, 0);
    key = PyTuple_GET_ITEM(spec, 1);
    counts = PyTuple_GET_ITEM(spec, 2);
    written = PyTuple_GET_ITEM(spec, 3);
    values = PyTuple_GET_ITEM(spec, 4);
    voffsets = PyTuple_GET_ITEM(spec, 5);
    long k = PyLong_AsLong(kind);
    if (k == -1 && PyErr_Occurred()) return -1;
    if (k < KIND_INT64 || k > KIND_BYTES) {
        PyErr_Format(PyExc_ValueError, "column %zd: unknown kind %ld", index, k);
        return -1;
    }
    c->kind = (int)k;
    if (get_buffer(key, &c->key, "key", 0) < 0) return -1;
    if (get_buffer(counts, &c->counts, "counts", 0) < 0) return -1;
    if (get_buffer(written, &c->written, "written", 1) < 0) return -1;
    if (get_buffer(values, &c->values, "values", 0) < 0) return -1;
    if (get_buffer(voffsets, &c->voffsets, "value offsets", c->kind != KIND_BYTES) < 0) return -1;
    if (c->counts.len != n * 8 || ((uintptr_t)c->counts.buf & 7)) {
        PyErr_Format(PyExc_ValueError, "column %zd: counts must be %zd aligned int64", index, n);
        return -1;
    }
    c->count = (const int64_t *)c->counts.buf;
    if (c->written.buf != NULL && c->written.len != n) {
        PyErr_Format(PyExc_ValueError, "column %zd: written must be %zd bytes", index, n);
        return -1;
    }
    if (c->kind == KIND_INT64) {
        if (c->values.len % 8) {
            PyErr_Format(PyExc_ValueError, "column %zd: int64 values buffer of %zd bytes", index, c->values.len);
            return -1;
        }
        c->n_values = c->values.len / 8;
    } else if (c->kind == KIND_FLOAT) {
        if (c->values.len % 4) {
            PyErr_Format(PyExc_ValueError, "column %zd: float values buffer of %zd bytes", index, c->values.len);
            return -1;
        }
        c->n_values = c->values.len / 4;
    } else {
        if (c->voffsets.len < 8 || c->voffsets.len % 8) {
            PyErr_Format(PyExc_ValueError, "column %zd: value offsets must be int64, at least one", index);
            return -1;
        }
        c->n_values = c->voffsets.len / 8 - 1;
    }
    c->payload = (int64_t *)PyMem_RawMalloc((n ? (size_t)n : 1) * sizeof(int64_t));
    if (c->payload == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* Bytes of a list message (Int64List / FloatList / BytesList) holding `count` values whose
 * content takes `payload` bytes. */
static inline int64_t list_size(int kind, int64_t count, int64_t payload) {
    if (kind == KIND_BYTES) return payload;
    return count > 0 ? 1 + varint_len((uint64_t)payload) + payload : 0;
}

static inline int64_t feature_size(int kind, int64_t count, int64_t payload) {
    int64_t list = list_size(kind, count, payload);
    return 1 + varint_len((uint64_t)list) + list;
}

static inline int64_t entry_size(const Column *c, int64_t count, int64_t payload) {
    int64_t feature = feature_size(c->kind, count, payload);
    return (int64_t)c->key.len + varint_len((uint64_t)feature) + feature;
}

/* The sizes pass of one column: payload[i] per row, and the column's part of each row's size
 * added to rows[i] (Examples: its map entry; features: rows[i] is the Feature, and `decision`
 * sums the map entries). Returns NULL or an error message. */
static const char *column_sizes(Column *c, Py_ssize_t n, int mode, int64_t *rows, int64_t *decision) {
    const int64_t *count = c->count;
    const uint8_t *written = (const uint8_t *)c->written.buf;
    int64_t cursor = 0;
    if (c->kind == KIND_BYTES) {
        const uint8_t *vo = (const uint8_t *)c->voffsets.buf;
        int64_t prev = load_i64(vo);
        if (prev < 0) return "negative value offset";
        for (int64_t j = 1; j <= c->n_values; j++) {
            int64_t next = load_i64(vo + j * 8);
            if (next < prev) return "value offsets out of order";
            prev = next;
        }
        if (prev > (int64_t)c->values.len) return "value offsets past the data";
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t k = count[i];
        if (k < 0 || k > c->n_values - cursor) return "value counts do not match the values";
        int64_t payload = 0;
        if (c->kind == KIND_INT64) {
            const uint8_t *v = (const uint8_t *)c->values.buf + cursor * 8;
            for (int64_t j = 0; j < k; j++) payload += varint_len((uint64_t)load_i64(v + j * 8));
        } else if (c->kind == KIND_FLOAT) {
            payload = 4 * k;
        } else {
            const uint8_t *vo = (const uint8_t *)c->voffsets.buf + cursor * 8;
            int64_t start = load_i64(vo);
            for (int64_t j = 0; j < k; j++) {
                int64_t stop = load_i64(vo + (j + 1) * 8);
                int64_t len = stop - start;
                payload += 1 + varint_len((uint64_t)len) + len;
                start = stop;
            }
        }
        c->payload[i] = payload;
        cursor += k;
        int64_t in_row = 0;
        if (written == NULL || written[i]) {
            int64_t entry = entry_size(c, k, payload);
            in_row = 1 + varint_len((uint64_t)entry) + entry;
        }
        if (mode == MODE_EXAMPLES) {
            rows[i] += in_row;
        } else {
            rows[i] = feature_size(c->kind, k, payload);
            *decision += in_row;
        }
    }
    if (cursor != c->n_values) return "value counts do not match the values";
    return NULL;
}

/* Writes one column's Feature message of row i (values from *cursor on); returns the end. */
static inline uint8_t *put_feature(uint8_t *o, const Column *c, int64_t k, int64_t payload, int64_t cursor) {
    int64_t list = list_size(c->kind, k, payload);
    *o++ = KIND_TAGS[c->kind];
    o = put_varint(o, (uint64_t)list);
    if (c->kind == KIND_INT64) {
        if (k > 0) {
            *o++ = TAG_1;
            o = put_varint(o, (uint64_t)payload);
            const uint8_t *v = (const uint8_t *)c->values.buf + cursor * 8;
            for (int64_t j = 0; j < k; j++) o = put_varint(o, (uint64_t)load_i64(v + j * 8));
        }
    } else if (c->kind == KIND_FLOAT) {
        if (k > 0) {
            *o++ = TAG_1;
            o = put_varint(o, (uint64_t)payload);
            memcpy(o, (const uint8_t *)c->values.buf + cursor * 4, (size_t)(4 * k));
            o += 4 * k;
        }
    } else {
        const uint8_t *vo = (const uint8_t *)c->voffsets.buf + cursor * 8;
        const uint8_t *data = (const uint8_t *)c->values.buf;
        int64_t start = load_i64(vo);
        for (int64_t j = 0; j < k; j++) {
            int64_t stop = load_i64(vo + (j + 1) * 8);
            *o++ = TAG_1;
            o = put_varint(o, (uint64_t)(stop - start));
            o = put_bytes(o, data + start, (size_t)(stop - start));
            start = stop;
        }
    }
    return o;
}

static PyObject *py_encode(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *specs;
    Py_ssize_t n;
    int mode;
    long long limit;
    if (!PyArg_ParseTuple(args, "O!niL:encode", &PyList_Type, &specs, &n, &mode, &limit)) return NULL;
    if (n < 0 || (mode != MODE_EXAMPLES && mode != MODE_FEATURES)) {
        PyErr_SetString(PyExc_ValueError, "invalid row count or mode");
        return NULL;
    }
    Py_ssize_t n_cols = PyList_GET_SIZE(specs);
    if (mode == MODE_FEATURES && n_cols != 1) {
        PyErr_SetString(PyExc_ValueError, "mode 1 encodes exactly one column");
        return NULL;
    }
    Column *cols = (Column *)PyMem_Calloc(n_cols ? (size_t)n_cols : 1, sizeof(Column));
    int64_t *rows = (int64_t *)PyMem_RawMalloc((n ? (size_t)n : 1) * sizeof(int64_t));
    PyObject *offsets_obj = NULL, *data_obj = NULL, *result = NULL;
    const char *error = NULL;
    if (cols == NULL || rows == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t j = 0; j < n_cols; j++) {
        if (column_parse(PyList_GET_ITEM(specs, j), &cols[j], n, j) < 0) goto done;
    }

    /* Sizes: the payload of every column on every row, then each row's message size (in
     * `rows`: the Features message for Examples, the Feature message itself for features). */
    int64_t total = 0, decision = 0;
    Py_BEGIN_ALLOW_THREADS
    memset(rows, 0, (n ? (size_t)n : 1) * sizeof(int64_t));
    for (Py_ssize_t j = 0; j < n_cols && error == NULL; j++) {
        Column *c = &cols[j];
        error = column_sizes(c, n, mode, rows, &decision);
    }
    if (error == NULL) {
        for (Py_ssize_t i = 0; i < n; i++) {
            total += mode == MODE_EXAMPLES ? 1 + varint_len((uint64_t)rows[i]) + rows[i] : rows[i];
        }
        if (mode == MODE_EXAMPLES) decision = total;
    }
    Py_END_ALLOW_THREADS
    if (error != NULL) {
        PyErr_SetString(PyExc_ValueError, error);
        goto done;
    }
    if (total > PY_SSIZE_T_MAX) {
        PyErr_NoMemory();
        goto done;
    }
    int large = decision > limit || total > INT32_MAX;
    int width = large ? 8 : 4;
    offsets_obj = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((n + 1) * width));
    if (offsets_obj == NULL) goto done;
    data_obj = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (data_obj == NULL) goto done;
    int64_t *cursor = (int64_t *)PyMem_RawCalloc(n_cols ? (size_t)n_cols : 1, sizeof(int64_t));
    if (cursor == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    uint8_t *base = (uint8_t *)PyBytes_AS_STRING(data_obj);
    uint8_t *offsets = (uint8_t *)PyBytes_AS_STRING(offsets_obj);
    int64_t written_total;
    Py_BEGIN_ALLOW_THREADS
    uint8_t *o = base;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t at = o - base;
        if (large) {
            memcpy(offsets + i * 8, &at, 8);
        } else {
            int32_t at32 = (int32_t)at;
            memcpy(offsets + i * 4, &at32, 4);
        }
        if (mode == MODE_EXAMPLES) {
            *o++ = TAG_1;
            o = put_varint(o, (uint64_t)rows[i]);
        }
        for (Py_ssize_t j = 0; j < n_cols; j++) {
            const Column *c = &cols[j];
            int64_t k = c->count[i], payload = c->payload[i];
            if (mode == MODE_EXAMPLES) {
                const uint8_t *written = (const uint8_t *)c->written.buf;
                if (written != NULL && !written[i]) {
                    cursor[j] += k;
                    continue;
                }
                int64_t feature = feature_size(c->kind, k, payload);
                int64_t entry = (int64_t)c->key.len + varint_len((uint64_t)feature) + feature;
                *o++ = TAG_1;
                o = put_varint(o, (uint64_t)entry);
                o = put_bytes(o, (const uint8_t *)c->key.buf, (size_t)c->key.len);
                o = put_varint(o, (uint64_t)feature);
            }
            o = put_feature(o, c, k, payload, cursor[j]);
            cursor[j] += k;
        }
    }
    written_total = o - base;
    if (large) {
        memcpy(offsets + n * 8, &written_total, 8);
    } else {
        int32_t at32 = (int32_t)written_total;
        memcpy(offsets + n * 4, &at32, 4);
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(cursor);
    if (written_total != total) {
        PyErr_Format(PyExc_SystemError, "encode: wrote %lld bytes, expected %lld", (long long)written_total,
                     (long long)total);
        goto done;
    }
    result = Py_BuildValue("(OOO)", offsets_obj, data_obj, large ? Py_True : Py_False);
done:
    Py_XDECREF(offsets_obj);
    Py_XDECREF(data_obj);
    if (cols != NULL) {
        for (Py_ssize_t j = 0; j < n_cols; j++) column_release(&cols[j]);
        PyMem_Free(cols);
    }
    PyMem_RawFree(rows);
    return result;
}

/* ------------------------------------------------------------------------------------------ */
/* Module */

static PyMethodDef methods[] = {
    {"encode", py_encode, METH_VARARGS,
     "encode(columns, n, mode, limit) -> (offsets, data, large): serialized Examples (mode 0) or "
     "Features (mode 1)"},
    {"frame", py_frame, METH_VARARGS, "frame(offsets, data, n, width) -> bytes: TFRecord frames"},
    {"frame_list", py_frame_list, METH_O, "frame_list(records) -> bytes: TFRecord frames"},
    {"crc32c", py_crc32c, METH_VARARGS, "crc32c(data, portable=False) -> int: unmasked CRC-32C"},
    {"hardware_crc", py_hardware_crc, METH_NOARGS, "hardware_crc() -> bool: SSE4.2 CRC-32C in use"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_tfrecordencode", "Native tf.train.Example encoder and TFRecord framing.", -1, methods,
};

PyMODINIT_FUNC PyInit__tfrecordencode(void) {
    crc_init();
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "VERSION", MODULE_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
