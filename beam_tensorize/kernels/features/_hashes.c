/*
 * Native fast path of the hash functions in hash_functions.py: one C loop over a binary
 * array's values instead of a Python call per value (FarmHash) or numpy passes per word
 * (SipHash). hash_functions.py falls back to pyfarmhash and to its numpy SipHash when this
 * module is not built; both paths give the same hashes (tests/kernels/features/test_hashing.py).
 *
 *   fingerprint64(offsets, data, out) -> None
 *       out[i] = FarmHash Fingerprint64 of data[offsets[i]:offsets[i + 1]] (farmhashna::Hash64,
 *       what farmhash::Fingerprint64, TensorFlow's to_hash_bucket_fast and pyfarmhash's
 *       fingerprint64 compute).
 *   siphash24(offsets, data, k0, k1, out) -> None
 *       out[i] = SipHash-2-4 of the same bytes with the 128-bit key (k0, k1), as TensorFlow's
 *       to_hash_bucket_strong.
 *
 *   offsets: a C-contiguous buffer of n + 1 int32 or int64 (format i, l or q), non-decreasing,
 *            positions in data (an Arrow binary array's offsets, its own offset applied).
 *   data:    a bytes-like buffer (an Arrow binary array's data buffer).
 *   out:     a writable C-contiguous buffer of n uint64 (format Q or L).
 *
 * Raises ValueError for offsets out of order or beyond data, and for a wrong-sized out. The
 * GIL is released while hashing.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MODULE_VERSION 1

/* --- FarmHash Fingerprint64 (farmhashna::Hash64), little-endian loads ----------------------- */

static const uint64_t K0 = 0xc3a5c85c97cb3127ULL;
static const uint64_t K1 = 0xb492b66fbe98f273ULL;
static const uint64_t K2 = 0x9ae16a3b2f90404fULL;

static inline uint64_t fetch64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static inline uint32_t fetch32(const unsigned char *p) {
    uint32_t v;
    memcpy(&v, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    return v;
}

/* FarmHash rotates right. */
static inline uint64_t rotate(uint64_t v, int shift) { return shift == 0 ? v : (v >> shift) | (v << (64 - shift)); }

static inline uint64_t shift_mix(uint64_t v) { return v ^ (v >> 47); }

static inline uint64_t hash_len16(uint64_t u, uint64_t v, uint64_t mul) {
    uint64_t a = (u ^ v) * mul;
    a ^= (a >> 47);
    uint64_t b = (v ^ a) * mul;
    b ^= (b >> 47);
    return b * mul;
}

static uint64_t hash_len0to16(const unsigned char *s, size_t len) {
    if (len >= 8) {
        uint64_t mul = K2 + len * 2;
        uint64_t a = fetch64(s) + K2;
        uint64_t b = fetch64(s + len - 8);
        uint64_t c = rotate(b, 37) * mul + a;
        uint64_t d = (rotate(a, 25) + b) * mul;
        return hash_len16(c, d, mul);
    }
    if (len >= 4) {
        uint64_t mul = K2 + len * 2;
        uint64_t a = fetch32(s);
        return hash_len16(len + (a << 3), fetch32(s + len - 4), mul);
    }
    if (len > 0) {
        uint8_t a = s[0], b = s[len >> 1], c = s[len - 1];
        uint32_t y = (uint32_t)a + ((uint32_t)b << 8);
        uint32_t z = (uint32_t)len + ((uint32_t)c << 2);
        return shift_mix(y * K2 ^ z * K0) * K2;
    }
    return K2;
}

static uint64_t hash_len17to32(const unsigned char *s, size_t len) {
    uint64_t mul = K2 + len * 2;
    uint64_t a = fetch64(s) * K1;
    uint64_t b = fetch64(s + 8);
    uint64_t c = fetch64(s + len - 8) * mul;
    uint64_t d = fetch64(s + len - 16) * K2;
    return hash_len16(rotate(a + b, 43) + rotate(c, 30) + d, a + rotate(b + K2, 18) + c, mul);
}

static uint64_t hash_len33to64(const unsigned char *s, size_t len) {
    uint64_t mul = K2 + len * 2;
    uint64_t a = fetch64(s) * K2;
    uint64_t b = fetch64(s + 8);
    uint64_t c = fetch64(s + len - 8) * mul;
    uint64_t d = fetch64(s + len - 16) * K2;
    uint64_t y = rotate(a + b, 43) + rotate(c, 30) + d;
    uint64_t z = hash_len16(y, a + rotate(b + K2, 18) + c, mul);
    uint64_t e = fetch64(s + 16) * mul;
    uint64_t f = fetch64(s + 24);
    uint64_t g = (y + fetch64(s + len - 32)) * mul;
    uint64_t h = (z + fetch64(s + len - 24)) * mul;
    return hash_len16(rotate(e + f, 43) + rotate(g, 30) + h, e + rotate(f + a, 18) + g, mul);
}

typedef struct {
    uint64_t first, second;
} Pair;

static inline Pair weak_hash_len32_with_seeds(const unsigned char *s, uint64_t a, uint64_t b) {
    uint64_t w = fetch64(s), x = fetch64(s + 8), y = fetch64(s + 16), z = fetch64(s + 24);
    a += w;
    b = rotate(b + a + z, 21);
    uint64_t c = a;
    a += x;
    a += y;
    b += rotate(a, 44);
    Pair p = {a + z, b + c};
    return p;
}

static uint64_t fingerprint(const unsigned char *s, size_t len) {
    if (len <= 16) return hash_len0to16(s, len);
    if (len <= 32) return hash_len17to32(s, len);
    if (len <= 64) return hash_len33to64(s, len);
    /* Over 64 bytes: a loop over 64-byte blocks; the state is v, w, x, y and z. */
    const uint64_t seed = 81;
    uint64_t x = seed, y = seed * K1 + 113, z = shift_mix(y * K2 + 113) * K2, t;
    Pair v = {0, 0}, w = {0, 0};
    x = x * K2 + fetch64(s);
    const unsigned char *end = s + ((len - 1) / 64) * 64;
    const unsigned char *last64 = end + ((len - 1) & 63) - 63;
    do {
        x = rotate(x + y + v.first + fetch64(s + 8), 37) * K1;
        y = rotate(y + v.second + fetch64(s + 48), 42) * K1;
        x ^= w.second;
        y += v.first + fetch64(s + 40);
        z = rotate(z + w.first, 33) * K1;
        v = weak_hash_len32_with_seeds(s, v.second * K1, x + w.first);
        w = weak_hash_len32_with_seeds(s + 32, z + w.second, y + fetch64(s + 16));
        t = z, z = x, x = t;
        s += 64;
    } while (s != end);
    uint64_t mul = K1 + ((z & 0xff) << 1);
    s = last64;
    w.first += ((len - 1) & 63);
    v.first += w.first;
    w.first += v.first;
    x = rotate(x + y + v.first + fetch64(s + 8), 37) * mul;
    y = rotate(y + v.second + fetch64(s + 48), 42) * mul;
    x ^= w.second * 9;
    y += v.first * 9 + fetch64(s + 40);
    z = rotate(z + w.first, 33) * mul;
    v = weak_hash_len32_with_seeds(s, v.second * mul, x + w.first);
    w = weak_hash_len32_with_seeds(s + 32, z + w.second, y + fetch64(s + 16));
    t = z, z = x, x = t;
    return hash_len16(hash_len16(v.first, w.first, mul) + shift_mix(y) * K0 + z,
                      hash_len16(v.second, w.second, mul) + x, mul);
}

/* --- SipHash-2-4 ---------------------------------------------------------------------------- */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                   \
    do {                                                                                           \
        v0 += v1;                                                                                  \
        v1 = ROTL(v1, 13);                                                                         \
        v1 ^= v0;                                                                                  \
        v0 = ROTL(v0, 32);                                                                         \
        v2 += v3;                                                                                  \
        v3 = ROTL(v3, 16);                                                                         \
        v3 ^= v2;                                                                                  \
        v0 += v3;                                                                                  \
        v3 = ROTL(v3, 21);                                                                         \
        v3 ^= v0;                                                                                  \
        v2 += v1;                                                                                  \
        v1 = ROTL(v1, 17);                                                                         \
        v1 ^= v2;                                                                                  \
        v2 = ROTL(v2, 32);                                                                         \
    } while (0)

static uint64_t siphash(const unsigned char *s, size_t len, uint64_t k0, uint64_t k1) {
    uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1;
    uint64_t v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
    const unsigned char *end = s + (len & ~(size_t)7);
    for (; s != end; s += 8) {
        uint64_t m = fetch64(s);
        v3 ^= m;
        SIPROUND;
        SIPROUND;
        v0 ^= m;
    }
    uint64_t b = ((uint64_t)len) << 56;
    switch (len & 7) {
    case 7: b |= ((uint64_t)s[6]) << 48; /* fall through */
    case 6: b |= ((uint64_t)s[5]) << 40; /* fall through */
    case 5: b |= ((uint64_t)s[4]) << 32; /* fall through */
    case 4: b |= ((uint64_t)s[3]) << 24; /* fall through */
    case 3: b |= ((uint64_t)s[2]) << 16; /* fall through */
    case 2: b |= ((uint64_t)s[1]) << 8;  /* fall through */
    case 1: b |= ((uint64_t)s[0]); break;
    case 0: break;
    }
    v3 ^= b;
    SIPROUND;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

/* --- the module ----------------------------------------------------------------------------- */

typedef struct {
    Py_buffer offsets, data, out;
    int wide; /* offsets are int64 */
    Py_ssize_t n;
} Args;

static void release(Args *a) {
    if (a->offsets.obj) PyBuffer_Release(&a->offsets);
    if (a->data.obj) PyBuffer_Release(&a->data);
    if (a->out.obj) PyBuffer_Release(&a->out);
}

static inline int64_t offset_at(const Args *a, Py_ssize_t i) {
    return a->wide ? ((const int64_t *)a->offsets.buf)[i] : ((const int32_t *)a->offsets.buf)[i];
}

/* Checks the three buffers; on failure releases them and sets an error (returns -1). */
static int check(Args *a) {
    const char *f = a->offsets.format;
    if (*f == '<' || *f == '=' || *f == '@') f++;
    if ((strcmp(f, "i") && strcmp(f, "l") && strcmp(f, "q")) ||
        (a->offsets.itemsize != 4 && a->offsets.itemsize != 8)) {
        PyErr_Format(PyExc_ValueError, "offsets must be int32 or int64, got format %s", a->offsets.format);
        goto fail;
    }
    a->wide = a->offsets.itemsize == 8;
    Py_ssize_t count = a->offsets.len / a->offsets.itemsize;
    if (count < 1) {
        PyErr_SetString(PyExc_ValueError, "offsets must hold at least one position");
        goto fail;
    }
    a->n = count - 1;
    if (a->out.itemsize != 8 || a->out.len != a->n * 8) {
        PyErr_Format(PyExc_ValueError, "out must be %zd uint64 values", a->n);
        goto fail;
    }
    int64_t previous = offset_at(a, 0);
    if (previous < 0) goto bad_offsets;
    for (Py_ssize_t i = 1; i <= a->n; i++) {
        int64_t o = offset_at(a, i);
        if (o < previous) goto bad_offsets;
        previous = o;
    }
    if (previous > a->data.len) goto bad_offsets;
    return 0;
bad_offsets:
    PyErr_SetString(PyExc_ValueError, "offsets must be non-decreasing positions within data");
fail:
    release(a);
    return -1;
}

static int parse(PyObject *offsets, PyObject *data, PyObject *out, Args *a) {
    memset(a, 0, sizeof(*a));
    if (PyObject_GetBuffer(offsets, &a->offsets, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0 ||
        PyObject_GetBuffer(data, &a->data, PyBUF_SIMPLE) < 0 ||
        PyObject_GetBuffer(out, &a->out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        release(a);
        return -1;
    }
    return check(a);
}

static PyObject *py_fingerprint64(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "fingerprint64(offsets, data, out)");
        return NULL;
    }
    Args a;
    if (parse(args[0], args[1], args[2], &a) < 0) return NULL;
    const unsigned char *data = a.data.buf;
    uint64_t *out = a.out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < a.n; i++) {
        int64_t start = offset_at(&a, i);
        out[i] = fingerprint(data + start, (size_t)(offset_at(&a, i + 1) - start));
    }
    Py_END_ALLOW_THREADS
    release(&a);
    Py_RETURN_NONE;
}

static PyObject *py_siphash24(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "siphash24(offsets, data, k0, k1, out)");
        return NULL;
    }
    uint64_t k0 = PyLong_AsUnsignedLongLong(args[2]);
    if (PyErr_Occurred()) return NULL;
    uint64_t k1 = PyLong_AsUnsignedLongLong(args[3]);
    if (PyErr_Occurred()) return NULL;
    Args a;
    if (parse(args[0], args[1], args[4], &a) < 0) return NULL;
    const unsigned char *data = a.data.buf;
    uint64_t *out = a.out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < a.n; i++) {
        int64_t start = offset_at(&a, i);
        out[i] = siphash(data + start, (size_t)(offset_at(&a, i + 1) - start), k0, k1);
    }
    Py_END_ALLOW_THREADS
    release(&a);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"fingerprint64", (PyCFunction)(void (*)(void))py_fingerprint64, METH_FASTCALL,
     "fingerprint64(offsets, data, out): FarmHash Fingerprint64 of each value into out."},
    {"siphash24", (PyCFunction)(void (*)(void))py_siphash24, METH_FASTCALL,
     "siphash24(offsets, data, k0, k1, out): SipHash-2-4 of each value into out."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_hashes", NULL, -1, methods};

PyMODINIT_FUNC PyInit__hashes(void) {
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddIntConstant(m, "VERSION", MODULE_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
