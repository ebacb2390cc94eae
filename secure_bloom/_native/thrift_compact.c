/*
 * secure_bloom.native_thrift: a bounded Thrift compact-protocol decoder for thriftpy2 structures.
 *
 * Written for secure_bloom from the Thrift compact protocol specification (thrift/doc/specs/
 * thrift-compact-protocol.md) and thriftpy2's documented spec format. It decodes one struct into
 * the SAME thriftpy2 objects the package's Python path (secure_bloom.thrift_codec, thriftpy2's
 * TCompactProtocol with bounded reads) builds: it walks ``cls.thrift_spec`` ({fid: (ttype, name,
 * [type args], required)}), creates every struct as ``cls()`` does and stores fields as setattr does.
 * Creating: where ``cls()`` only fills the instance dict with None for every field (thriftpy2's
 * generated __init__, no IDL defaults), plain setattr stores into that dict and no field name is a
 * data descriptor of the class, a struct is created with ``cls.__new__(cls)`` and given a copy of
 * the dict ``cls()`` made when the class's table was compiled (same keys, same order; set as
 * ``obj.__dict__ = copy`` sets it, through the class's __dict__ descriptor), and its
 * fields are stored into that dict: the same object as ``cls()`` plus setattr, without running
 * __init__ (a Python call per struct: the larger part of decoding a footer). Any other class is
 * created with ``cls()`` and its fields stored with setattr.
 *
 * Private module: secure_bloom.thrift_codec.parse is the API (it maps errors to the caller's class
 * and checks required fields and unions). decode() does exactly what the Python path does, check
 * for check in the same order, so both give equal objects and consumed counts, or both fail with
 * the same message:
 *   - every read is bounded by the buffer; binary lengths and collection sizes are compared with
 *     the bytes that remain BEFORE anything is allocated;
 *   - varints are at most 3/5/10 bytes for i16/i32/i64 (5 for sizes) and integers must fit
 *     their type;
 *   - structs, lists, sets and maps nest at most ``max_nesting`` deep, skipped unknown fields
 *     included (this bounds the C recursion too);
 *   - one decode creates at most ``max_elements`` collection elements in total;
 *   - a collection or map with elements of type STOP is refused; a type nibble outside the
 *     protocol (13..15) is refused.
 * As thriftpy2 does: list/set elements are read with the element type of the spec (the wire's
 * element type is only checked for STOP), a field whose wire type differs from the spec is
 * skipped (string and binary are interchangeable), bools live in the field-type nibble of a
 * field header and take one byte (1 = true) as list elements, doubles are little-endian,
 * ``string`` fields are decoded as strict UTF-8 and ``binary`` fields are bytes.
 *
 * Raw fields: a struct field whose spec class has the attribute ``thrift_raw_of`` (a struct class)
 * is checked as that class, every field and check as decoding it would, but nothing is made: its
 * exact bytes (up to and including its STOP) are the value (secure_bloom.thrift_codec.raw_struct;
 * a footer's ColumnMetaData, decoded when a reader asks for the chunk's metadata).
 *
 * Picked fields: decode_fields() decodes a batch of inputs of one class and builds only the
 * top-level fields it is asked for (what a lookup reads of a ColumnMetaData: its statistics and
 * where its filter lies), every other field checked exactly as decode() checks it, nothing made.
 * An input decode() refuses, or that needs the required-field check below, or (zero_padding)
 * whose bytes after the STOP are not all zero gives None: the caller's full decode names or
 * checks it, so both entry points accept the same bytes. The inputs are copied into a tuple
 * first: Python code run while a struct is made cannot change which objects are decoded.
 *
 * Required fields and unions: decode() returns needs_check = False only when every struct it
 * built has all its required fields and, for a class named in union_names, exactly one member
 * (field set = decoded at least once; decoded values are never None). Otherwise the caller runs
 * its own check, which names the first problem: the verdict and the message stay in Python, and
 * valid input (the common case) skips a walk over every object. A class whose cls() sets a field
 * (IDL defaults) or that has more than 64 fields always asks for the check. union_names must be
 * the same set on every call: it is read once per class, when the class's table is compiled.
 *
 * Errors: DecodeError(kind, message, nbytes) with kind "short" (the input ends too early),
 * "malformed" (the bytes cannot be valid) or "invalid" (message names the Python exception the
 * Python path meets: KeyError for a bad type nibble, UnicodeDecodeError). A spec shape this
 * decoder does not handle (a map-typed field, a container without its element spec) raises
 * UnsupportedSpec, and the caller uses the Python path. Per-class spec tables are compiled once
 * and cached for the life of the process (thrift_spec must not change after first use).
 *
 * The cyclic garbage collector: every struct, struct dict and list decode() makes is untracked
 * once it is complete (PyObject_GC_UnTrack), as msgspec's gc=False structs are. A decoded tree
 * has no reference cycles, and collections that walked its objects took as long as the decoding
 * (a 100,000-row-group footer is two million objects; every cold lookup makes hundreds). They
 * are still freed by reference counting; a cycle a caller makes through them later (an object
 * stored in its own field) is not collected. Values the Python path gives are equal.
 *
 * Threads: decode() holds the GIL, but the Python code it calls (cls(), setattr) may let other
 * threads run, and a thread in C code without the GIL (numpy copying into a bytearray) may run
 * at any time. The input's size cannot change while it is exported; its bytes can. So every
 * byte that decides a length, a type or a size is read once into a local and checked against
 * the bytes that remain; a string of a buffer other than bytes is copied before its UTF-8
 * decoding (bytes objects cannot change). A changed input gives an error or other values,
 * never an access outside it. Two threads compiling the spec table of one class at once keep
 * the table that reached the cache first (a table in use is never freed).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#ifndef SB_BUILD_FLAGS
#define SB_BUILD_FLAGS "unknown"
#endif

/* thriftpy2.thrift.TType */
enum {
    TT_STOP = 0, TT_BOOL = 2, TT_BYTE = 3, TT_DOUBLE = 4, TT_I16 = 6, TT_I32 = 8, TT_I64 = 10,
    TT_STRING = 11, TT_STRUCT = 12, TT_MAP = 13, TT_SET = 14, TT_LIST = 15, TT_BINARY = 18
};

/* thriftpy2's TTYPES: compact type nibble -> TType; -1 where thriftpy2 raises KeyError. */
static const int CTYPE_TO_TTYPE[16] = {
    TT_STOP, TT_BOOL, TT_BOOL, TT_BYTE, TT_I16, TT_I32, TT_I64, TT_DOUBLE,
    TT_BINARY, TT_LIST, TT_SET, TT_MAP, TT_STRUCT, -1, -1, -1,
};

#define MAX_NESTING_CAP 1024   /* decode() refuses a larger max_nesting: the C stack bounds it */
#define MAX_FID_SPAN 65536     /* a thrift_spec whose field ids span more is left to Python */

static PyObject *DecodeError;
static PyObject *UnsupportedSpec;
static PyObject *spec_cache;   /* {cls: capsule(ClassSpec)}; lives as long as the module */
static PyObject *str_thrift_spec;
static PyObject *str_dict;        /* "__dict__" */
static PyObject *str_raw_of;      /* "thrift_raw_of" */
static PyObject *empty_tuple;  /* cls.__new__(cls)'s arguments */

/* ------------------------------------------------------------------ compiled specs */

typedef struct ClassSpec ClassSpec;

typedef struct TypeDesc {
    int ttype;
    int raw;                 /* STRUCT: kept as its exact bytes (the spec's class names thrift_raw_of) */
    struct TypeDesc *elem;   /* LIST/SET: element type (owned) */
    PyObject *cls;           /* STRUCT: the class (strong reference; with raw, the class it is checked as) */
    ClassSpec *spec;         /* STRUCT: resolved at first use; owned by spec_cache */
} TypeDesc;

typedef struct {
    PyObject *name;          /* interned attribute name; NULL = no such field id */
    uint64_t bit;            /* this field's bit in a struct's set-field mask */
    TypeDesc type;
} FieldSpec;

struct ClassSpec {
    PyObject *cls;           /* strong reference */
    long min_fid;
    Py_ssize_t nfields;      /* table size: fids min_fid .. min_fid + nfields - 1 */
    FieldSpec *fields;
    uint64_t required;       /* mask of the required fields */
    int is_union;            /* exactly one field must be set */
    int always_check;        /* > 64 fields, or cls() sets a field: leave the verdict to Python */
    PyObject *fresh;         /* the instance dict cls() makes, copied into each new struct; NULL: call cls() */
    PyObject *dict_descr;    /* with fresh: the class's __dict__ descriptor, which sets a new struct's dict */
};

static void type_clear(TypeDesc *t)
{
    if (t->elem != NULL) {
        type_clear(t->elem);
        PyMem_Free(t->elem);
        t->elem = NULL;
    }
    Py_CLEAR(t->cls);
}

static void class_spec_free(ClassSpec *cs)
{
    if (cs == NULL)
        return;
    for (Py_ssize_t i = 0; i < cs->nfields; i++) {
        Py_CLEAR(cs->fields[i].name);
        type_clear(&cs->fields[i].type);
    }
    PyMem_Free(cs->fields);
    Py_CLEAR(cs->cls);
    Py_CLEAR(cs->fresh);
    Py_CLEAR(cs->dict_descr);
    PyMem_Free(cs);
}

static void capsule_free(PyObject *capsule)
{
    class_spec_free((ClassSpec *)PyCapsule_GetPointer(capsule, "secure_bloom.native_thrift.spec"));
}

static int unsupported(PyObject *cls, const char *why)
{
    PyErr_Format(UnsupportedSpec, "%R: %s", cls, why);
    return -1;
}

static int is_scalar(int ttype)
{
    switch (ttype) {
    case TT_BOOL: case TT_BYTE: case TT_DOUBLE: case TT_I16: case TT_I32: case TT_I64:
    case TT_STRING: case TT_BINARY:
        return 1;
    default:
        return 0;
    }
}

/* A TypeDesc for (ttype, spec) as thriftpy2's _read_val interprets them; depth bounds nesting
 * of container specs (a spec is finite, but a hostile class could build a deep one). */
static int type_compile(TypeDesc *t, PyObject *owner, int ttype, PyObject *spec, int depth)
{
    t->ttype = ttype;
    if (depth > MAX_NESTING_CAP)
        return unsupported(owner, "container spec nested too deep");
    if (is_scalar(ttype))
        return 0;
    if (ttype == TT_STRUCT) {
        PyObject *raw_of;
        if (spec == NULL || !PyType_Check(spec))
            return unsupported(owner, "struct field without its class");
        /* A class naming thrift_raw_of marks a field kept as its bytes, checked as that class. */
        raw_of = PyObject_GetAttr(spec, str_raw_of);
        if (raw_of == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                return -1;
            PyErr_Clear();
        } else if (!PyType_Check(raw_of)) {
            Py_DECREF(raw_of);
            return unsupported(owner, "thrift_raw_of is not a class");
        } else {
            t->raw = 1;
            t->cls = raw_of;  /* the reference GetAttr gave */
            return 0;
        }
        Py_INCREF(spec);
        t->cls = spec;
        return 0;
    }
    if (ttype == TT_LIST || ttype == TT_SET) {
        int etype;
        PyObject *espec = NULL;
        if (spec != NULL && PyTuple_Check(spec) && PyTuple_GET_SIZE(spec) >= 2) {
            espec = PyTuple_GET_ITEM(spec, 1);
            spec = PyTuple_GET_ITEM(spec, 0);
        }
        if (spec == NULL || !PyLong_CheckExact(spec))
            return unsupported(owner, "container field without an integer element type");
        etype = (int)PyLong_AsLong(spec);
        if (etype == -1 && PyErr_Occurred())
            return -1;
        t->elem = PyMem_Calloc(1, sizeof(TypeDesc));
        if (t->elem == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        return type_compile(t->elem, owner, etype, espec, depth + 1);
    }
    return unsupported(owner, "field type not handled natively (map or unknown)");
}

/* Whether a struct of cls can be made from a copy of the dict cls() made (see the top): plain
 * attribute storage, an instance dict, and no field name a data descriptor of the class. */
static int dict_creatable(ClassSpec *cs, PyObject *obj)
{
    PyTypeObject *type = (PyTypeObject *)cs->cls;
    if (!PyType_Check(cs->cls) || Py_TYPE(obj) != type || type->tp_setattro != PyObject_GenericSetAttr
            || type->tp_getattro != PyObject_GenericGetAttr || type->tp_new == NULL)
        return 0;
    for (Py_ssize_t i = 0; i < cs->nfields; i++) {
        PyObject *attr;
        if (cs->fields[i].name == NULL)
            continue;
        attr = _PyType_Lookup(type, cs->fields[i].name);  /* borrowed */
        if (attr != NULL && Py_TYPE(attr)->tp_descr_set != NULL)
            return 0;
    }
    return 1;
}

/* Whether cls() leaves every field of the spec None (thriftpy2 without IDL defaults); then, where
 * dict_creatable, keeps a copy of the dict it made in cs->fresh. */
static int defaults_all_none(ClassSpec *cs)
{
    PyObject *obj = PyObject_CallNoArgs(cs->cls);
    int all_none = 1;
    if (obj == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < cs->nfields && all_none; i++) {
        PyObject *value;
        if (cs->fields[i].name == NULL)
            continue;
        value = PyObject_GetAttr(obj, cs->fields[i].name);
        if (value == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
                Py_DECREF(obj);
                return -1;
            }
            PyErr_Clear();
            continue;
        }
        all_none = value == Py_None;
        Py_DECREF(value);
    }
    if (all_none && dict_creatable(cs, obj)) {
        PyObject *made;
        cs->dict_descr = _PyType_Lookup((PyTypeObject *)cs->cls, str_dict);  /* borrowed */
        if (cs->dict_descr == NULL || Py_TYPE(cs->dict_descr)->tp_descr_set == NULL) {
            cs->dict_descr = NULL;
            Py_DECREF(obj);
            return all_none;
        }
        Py_INCREF(cs->dict_descr);
        made = PyObject_GenericGetDict(obj, NULL);
        if (made == NULL) {
            Py_DECREF(obj);
            return -1;
        }
        if (PyDict_CheckExact(made))
            cs->fresh = PyDict_Copy(made);
        Py_DECREF(made);
        if (PyDict_CheckExact(made) && cs->fresh == NULL) {
            Py_DECREF(obj);
            return -1;
        }
    }
    Py_DECREF(obj);
    return all_none;
}

static ClassSpec *class_compile(PyObject *cls, PyObject *union_names)
{
    int nbits = 0, defaults_none, in_unions;
    PyObject *cls_name;
    PyObject *spec = PyObject_GetAttr(cls, str_thrift_spec);
    ClassSpec *cs = NULL;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    long lo = 0, hi = -1;

    if (spec == NULL)
        return NULL;
    if (!PyDict_CheckExact(spec)) {
        unsupported(cls, "thrift_spec is not a dict");
        goto fail;
    }
    while (PyDict_Next(spec, &pos, &key, &value)) {
        long fid;
        if (!PyLong_CheckExact(key)) {
            unsupported(cls, "field id is not an int");
            goto fail;
        }
        fid = PyLong_AsLong(key);
        if ((fid == -1 && PyErr_Occurred()) || fid < -(1L << 20) || fid > (1L << 20)) {
            PyErr_Clear();
            unsupported(cls, "field id out of range");
            goto fail;
        }
        if (hi < lo) {
            lo = hi = fid;
        } else {
            lo = fid < lo ? fid : lo;
            hi = fid > hi ? fid : hi;
        }
    }
    if (hi >= lo && hi - lo + 1 > MAX_FID_SPAN) {
        unsupported(cls, "field ids span too wide a range");
        goto fail;
    }
    cs = PyMem_Calloc(1, sizeof(ClassSpec));
    if (cs == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    Py_INCREF(cls);
    cs->cls = cls;
    cs->min_fid = lo;
    cs->nfields = hi >= lo ? (Py_ssize_t)(hi - lo + 1) : 0;
    cs->fields = PyMem_Calloc(cs->nfields ? (size_t)cs->nfields : 1, sizeof(FieldSpec));
    if (cs->fields == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    pos = 0;
    while (PyDict_Next(spec, &pos, &key, &value)) {
        FieldSpec *f = &cs->fields[PyLong_AsLong(key) - lo];
        PyObject *ttype_obj, *name;
        int ttype;
        if (value == Py_None)
            continue;  /* thriftpy2 skips a field whose spec is None */
        if (!PyTuple_Check(value) || PyTuple_GET_SIZE(value) < 3 || PyTuple_GET_SIZE(value) > 4) {
            unsupported(cls, "field spec is not a 3- or 4-tuple");
            goto fail;
        }
        ttype_obj = PyTuple_GET_ITEM(value, 0);
        name = PyTuple_GET_ITEM(value, 1);
        if (!PyLong_CheckExact(ttype_obj) || !PyUnicode_CheckExact(name)) {
            unsupported(cls, "field spec needs an int type and a str name");
            goto fail;
        }
        ttype = (int)PyLong_AsLong(ttype_obj);
        if (ttype == -1 && PyErr_Occurred())
            goto fail;
        Py_INCREF(name);
        PyUnicode_InternInPlace(&name);
        f->name = name;
        if (type_compile(&f->type, cls, ttype, PyTuple_GET_SIZE(value) == 4 ? PyTuple_GET_ITEM(value, 2) : NULL,
                         0) < 0)
            goto fail;
        if (nbits < 64) {
            f->bit = (uint64_t)1 << nbits;
            if (PyTuple_GET_ITEM(value, PyTuple_GET_SIZE(value) - 1) == Py_True)
                cs->required |= f->bit;
        } else {
            cs->always_check = 1;
        }
        nbits++;
    }
    if ((defaults_none = defaults_all_none(cs)) < 0)
        goto fail;
    cs->always_check |= !defaults_none;
    if ((cls_name = PyObject_GetAttrString(cls, "__name__")) == NULL)
        goto fail;
    in_unions = PySequence_Contains(union_names, cls_name);
    Py_DECREF(cls_name);
    if (in_unions < 0)
        goto fail;
    cs->is_union = in_unions;
    Py_DECREF(spec);
    return cs;
fail:
    Py_DECREF(spec);
    class_spec_free(cs);
    return NULL;
}

static ClassSpec *class_spec(PyObject *cls, PyObject *union_names)
{
    PyObject *capsule = PyDict_GetItemWithError(spec_cache, cls);
    ClassSpec *cs;
    if (capsule != NULL)
        return (ClassSpec *)PyCapsule_GetPointer(capsule, "secure_bloom.native_thrift.spec");
    if (PyErr_Occurred())
        return NULL;
    /* class_compile calls cls(): another thread (or this one, re-entering) may compile and
     * cache the same class meanwhile, and may be decoding with its table. Keep whichever table
     * reached the cache first, never replace one: tables in use are never freed. */
    cs = class_compile(cls, union_names);
    if (cs == NULL)
        return NULL;
    capsule = PyCapsule_New(cs, "secure_bloom.native_thrift.spec", capsule_free);
    if (capsule == NULL) {
        class_spec_free(cs);
        return NULL;
    }
    PyObject *cached = PyDict_SetDefault(spec_cache, cls, capsule);  /* borrowed */
    Py_DECREF(capsule);  /* the cache holds it, or it was second and is freed here */
    if (cached == NULL)
        return NULL;
    return (ClassSpec *)PyCapsule_GetPointer(cached, "secure_bloom.native_thrift.spec");
}

/* ------------------------------------------------------------------ decoder state and errors */

typedef struct {
    const uint8_t *buf;
    Py_ssize_t len;
    Py_ssize_t pos;
    int depth;
    int max_depth;
    long long elements_left;
    long long max_elements;
    PyObject *union_names;   /* names of the union classes (for specs compiled on the way) */
    int needs_check;         /* some struct misses a required field or is a union without 1 member */
    int stable;              /* the input is a bytes object: its bytes cannot change */
} Dec;

static Py_ssize_t remaining(const Dec *d) { return d->len - d->pos; }

/* Raise DecodeError(kind, message, nbytes); message from PyUnicode_FromFormat. Returns -1. */
static int fail(const Dec *d, const char *kind, const char *fmt, ...)
{
    va_list va;
    PyObject *msg, *args;
    va_start(va, fmt);
    msg = PyUnicode_FromFormatV(fmt, va);
    va_end(va);
    if (msg == NULL)
        return -1;
    args = Py_BuildValue("(sNn)", kind, msg, d->len);
    if (args != NULL) {
        PyErr_SetObject(DecodeError, args);
        Py_DECREF(args);
    }
    return -1;
}

static int enter(Dec *d)
{
    if (++d->depth > d->max_depth)
        return fail(d, "malformed", "structures and collections nested deeper than %d", d->max_depth);
    return 0;
}

static int take_elements(Dec *d, long long n)
{
    d->elements_left -= n;
    if (d->elements_left < 0)
        return fail(d, "malformed", "more than %lld collection elements in one structure", d->max_elements);
    return 0;
}

/* The field-header byte (thrift_codec's _BoundedBuffer.byte). */
static int header_byte(Dec *d, int *out)
{
    if (d->pos >= d->len)
        return fail(d, "short", "needs 1 byte at offset %zd, 0 left", d->pos);
    *out = d->buf[d->pos++];
    return 0;
}

/* n raw bytes (_BoundedBuffer.read); *out points into the buffer. */
static int take(Dec *d, Py_ssize_t n, const uint8_t **out)
{
    if (n > remaining(d))
        return fail(d, "short", "needs %zd bytes at offset %zd, %zd left", n, d->pos, remaining(d));
    *out = d->buf + d->pos;
    d->pos += n;
    return 0;
}

/* An unsigned varint of at most max_bytes (<= 10) bytes: the low 64 bits in *lo, bits 64..69 in
 * *hi (only a 10-byte varint has them). */
static int varint(Dec *d, int max_bytes, const char *what, uint64_t *lo, uint64_t *hi)
{
    Py_ssize_t start = d->pos;
    uint64_t value = 0, high = 0;
    for (int i = 0; i < max_bytes; i++) {
        uint8_t byte;
        if (start + i >= d->len)
            return fail(d, "short", "varint at offset %zd runs past the end", start);
        byte = d->buf[start + i];
        if (i < 9) {
            value |= (uint64_t)(byte & 0x7F) << (7 * i);
        } else {
            value |= (uint64_t)(byte & 0x01) << 63;
            high = (uint64_t)(byte & 0x7F) >> 1;
        }
        if (byte < 0x80) {
            d->pos = start + i + 1;
            *lo = value;
            *hi = high;
            return 0;
        }
    }
    return fail(d, "malformed", "%s varint at offset %zd is longer than %d bytes", what, start, max_bytes);
}

/* The message for a zigzag integer outside its type, with the value Python computes. */
static int out_of_range(Dec *d, const char *what, Py_ssize_t at, int bits, uint64_t lo, uint64_t hi)
{
    /* raw = hi << 64 | lo; value = (raw >> 1) ^ -(raw & 1), in Python integers */
    PyObject *low = PyLong_FromUnsignedLongLong(lo), *high = PyLong_FromUnsignedLongLong(hi);
    PyObject *sixty_four = PyLong_FromLong(64), *one = PyLong_FromLong(1);
    PyObject *shifted = NULL, *raw = NULL, *half = NULL, *bit = NULL, *neg = NULL, *value = NULL;
    int rc = -1;
    if (low == NULL || high == NULL || sixty_four == NULL || one == NULL)
        goto done;
    if ((shifted = PyNumber_Lshift(high, sixty_four)) == NULL || (raw = PyNumber_Or(shifted, low)) == NULL ||
        (half = PyNumber_Rshift(raw, one)) == NULL || (bit = PyNumber_And(raw, one)) == NULL ||
        (neg = PyNumber_Negative(bit)) == NULL || (value = PyNumber_Xor(half, neg)) == NULL)
        goto done;
    fail(d, "malformed", "%s at offset %zd is out of the i%d range (%S)", what, at, bits, value);
done:
    Py_XDECREF(low);
    Py_XDECREF(high);
    Py_XDECREF(sixty_four);
    Py_XDECREF(one);
    Py_XDECREF(shifted);
    Py_XDECREF(raw);
    Py_XDECREF(half);
    Py_XDECREF(bit);
    Py_XDECREF(neg);
    Py_XDECREF(value);
    return rc;
}

/* A zigzag varint that must fit a signed bits-bit integer (16, 32 or 64). */
static int integer(Dec *d, int bits, const char *what, int64_t *out)
{
    Py_ssize_t at = d->pos;
    uint64_t lo = 0, hi = 0;
    int64_t value;
    if (varint(d, bits == 16 ? 3 : bits == 32 ? 5 : 10, what, &lo, &hi) < 0)
        return -1;
    if (hi != 0)
        return out_of_range(d, what, at, bits, lo, hi);
    value = (int64_t)(lo >> 1) ^ -(int64_t)(lo & 1);
    if (bits < 64 && (value < -((int64_t)1 << (bits - 1)) || value >= ((int64_t)1 << (bits - 1))))
        return fail(d, "malformed", "%s at offset %zd is out of the i%d range (%lld)", what, at, bits,
                    (long long)value);
    *out = value;
    return 0;
}

static const char *int_name(int ttype)
{
    return ttype == TT_I16 ? "i16" : ttype == TT_I32 ? "i32" : "i64";
}

static int int_bits(int ttype)
{
    return ttype == TT_I16 ? 16 : ttype == TT_I32 ? 32 : 64;
}

/* A binary length or map size (_read_size): a 5-byte varint no larger than what remains. */
static int size(Dec *d, Py_ssize_t *out)
{
    uint64_t lo = 0, hi = 0;
    if (varint(d, 5, "size", &lo, &hi) < 0)
        return -1;
    if (lo > (uint64_t)remaining(d))
        return fail(d, "short", "declared size %llu exceeds the %zd bytes left", (unsigned long long)lo,
                    remaining(d));
    *out = (Py_ssize_t)lo;
    return 0;
}

static int wire_type(Dec *d, int nibble, int *out)
{
    *out = CTYPE_TO_TTYPE[nibble & 0x0F];
    if (*out < 0)
        return fail(d, "invalid", "KeyError");
    return 0;
}

/* List/set header (_read_collection_begin): enters one nesting level. */
static int collection_begin(Dec *d, int *etype, Py_ssize_t *count)
{
    const uint8_t *p = NULL;
    Py_ssize_t n = 0;
    int header;
    if (enter(d) < 0 || take(d, 1, &p) < 0)
        return -1;
    header = p[0];  /* once: the element type and the count come from the same byte */
    if (wire_type(d, header, etype) < 0)
        return -1;
    n = header >> 4;
    if (n == 15 && size(d, &n) < 0)
        return -1;
    if (n > remaining(d))
        return fail(d, "short", "collection of %zd elements exceeds the %zd bytes left", n, remaining(d));
    if (n && *etype == TT_STOP)
        return fail(d, "malformed", "collection with elements of type STOP");
    if (take_elements(d, n) < 0)
        return -1;
    *count = n;
    return 0;
}

/* Map header (_read_map_begin): enters one nesting level. */
static int map_begin(Dec *d, int *ktype, int *vtype, Py_ssize_t *count)
{
    Py_ssize_t n = 0;
    int types = 0;
    if (enter(d) < 0 || size(d, &n) < 0)
        return -1;
    if (n > 0) {
        const uint8_t *p = NULL;
        if (take(d, 1, &p) < 0)
            return -1;
        types = p[0];
    }
    if (wire_type(d, types, vtype) < 0 || wire_type(d, types >> 4, ktype) < 0)
        return -1;
    if (n > remaining(d))
        return fail(d, "short", "map of %zd entries exceeds the %zd bytes left", n, remaining(d));
    if (n && (*ktype == TT_STOP || *vtype == TT_STOP))
        return fail(d, "malformed", "map with entries of type STOP");
    if (take_elements(d, n) < 0)
        return -1;
    *count = n;
    return 0;
}

/* Field header (_read_field_begin): *ttype TT_STOP at the end of the struct; a bool's value
 * comes in the type nibble (*pending_bool 0/1, else -1). */
static int field_begin(Dec *d, int64_t *last_fid, int *ttype, int64_t *fid, int *pending_bool)
{
    int header = 0, ctype, delta;
    if (header_byte(d, &header) < 0)
        return -1;
    ctype = header & 0x0F;
    *pending_bool = -1;
    if (ctype == 0) {
        *ttype = TT_STOP;
        return 0;
    }
    delta = header >> 4;
    if (delta) {
        *fid = *last_fid + delta;
    } else if (integer(d, 16, "field id", fid) < 0) {
        return -1;
    }
    *last_fid = *fid;
    if (ctype == 1 || ctype == 2)
        *pending_bool = ctype == 1;
    return wire_type(d, ctype, ttype);
}

/* ------------------------------------------------------------------ skip */

static int skip(Dec *d, int ttype, int pending_bool)
{
    const uint8_t *p = NULL;
    Py_ssize_t n = 0;
    int64_t ignored;
    switch (ttype) {
    case TT_STOP:
        return 0;
    case TT_BOOL:
        return pending_bool >= 0 ? 0 : take(d, 1, &p);
    case TT_BYTE:
        return take(d, 1, &p);
    case TT_I16: case TT_I32: case TT_I64:
        return integer(d, int_bits(ttype), int_name(ttype), &ignored);
    case TT_DOUBLE:
        return take(d, 8, &p);
    case TT_BINARY: case TT_STRING:  /* the wire only says BINARY: never decoded */
        if (size(d, &n) < 0)
            return -1;
        d->pos += n;
        return 0;
    case TT_STRUCT: {
        int64_t last = 0, fid = 0;
        int ftype, pending;
        if (enter(d) < 0)
            return -1;
        for (;;) {
            if (field_begin(d, &last, &ftype, &fid, &pending) < 0)
                return -1;
            if (ftype == TT_STOP)
                break;
            if (skip(d, ftype, pending) < 0)
                return -1;
        }
        d->depth--;
        return 0;
    }
    case TT_MAP: {
        int ktype, vtype;
        if (map_begin(d, &ktype, &vtype, &n) < 0)
            return -1;
        for (Py_ssize_t i = 0; i < n; i++)
            if (skip(d, ktype, -1) < 0 || skip(d, vtype, -1) < 0)
                return -1;
        d->depth--;
        return 0;
    }
    case TT_SET: case TT_LIST: {
        int etype;
        if (collection_begin(d, &etype, &n) < 0)
            return -1;
        for (Py_ssize_t i = 0; i < n; i++)
            if (skip(d, etype, -1) < 0)
                return -1;
        d->depth--;
        return 0;
    }
    default:
        return 0;  /* thriftpy2's skip ignores a type it does not know; the wire cannot name one */
    }
}

/* ------------------------------------------------------------------ read */

/* Take a finished struct, its dict or a list out of the cyclic collector's lists (see the top:
 * a decoded tree has no cycles, and a collection would walk every one of its objects). */
static void untrack(PyObject *o)
{
    if (PyObject_IS_GC(o) && PyObject_GC_IsTracked(o))
        PyObject_GC_UnTrack(o);
}

static PyObject *read_struct(Dec *d, ClassSpec *cs, int build);

/* One value of type t. With build = 0 nothing is made (the value is checked as it would be
 * decoded, and None returned): a raw struct's fields, checked but kept as bytes. */
static PyObject *read_val(Dec *d, TypeDesc *t, int pending_bool, int build)
{
    const uint8_t *p = NULL;
    Py_ssize_t n = 0;
    int64_t v;
    switch (t->ttype) {
    case TT_BOOL:
        if (pending_bool >= 0)
            return PyBool_FromLong(pending_bool);
        return take(d, 1, &p) < 0 ? NULL : PyBool_FromLong(p[0] == 1);
    case TT_BYTE:
        return take(d, 1, &p) < 0 ? NULL : build ? PyLong_FromLong((long)(int8_t)p[0]) : Py_NewRef(Py_None);
    case TT_I16: case TT_I32: case TT_I64:
        if (integer(d, int_bits(t->ttype), int_name(t->ttype), &v) < 0)
            return NULL;
        return build ? PyLong_FromLongLong((long long)v) : Py_NewRef(Py_None);
    case TT_DOUBLE:
        if (take(d, 8, &p) < 0)
            return NULL;
        if (!build)
            return Py_NewRef(Py_None);
#if PY_VERSION_HEX >= 0x030B0000
        return PyFloat_FromDouble(PyFloat_Unpack8((const char *)p, 1));
#else
        return PyFloat_FromDouble(_PyFloat_Unpack8((const unsigned char *)p, 1));
#endif
    case TT_BINARY:
        if (size(d, &n) < 0)
            return NULL;
        d->pos += n;
        return build ? PyBytes_FromStringAndSize((const char *)d->buf + d->pos - n, n) : Py_NewRef(Py_None);
    case TT_STRING: {
        PyObject *s, *copy = NULL;
        const char *text;
        if (size(d, &n) < 0)
            return NULL;
        d->pos += n;
        text = (const char *)d->buf + d->pos - n;
        if (!d->stable) {  /* the UTF-8 decoder reads its input more than once: decode a copy */
            if ((copy = PyBytes_FromStringAndSize(text, n)) == NULL)
                return NULL;
            text = PyBytes_AS_STRING(copy);
        }
        s = PyUnicode_DecodeUTF8(text, n, "strict");  /* also unbuilt: the same check */
        Py_XDECREF(copy);
        if (s == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyErr_Clear();
            fail(d, "invalid", "UnicodeDecodeError");
        }
        if (s != NULL && !build)
            Py_SETREF(s, Py_NewRef(Py_None));
        return s;
    }
    case TT_LIST: case TT_SET: {
        int etype;
        PyObject *list;
        if (collection_begin(d, &etype, &n) < 0)
            return NULL;
        if (!build) {
            for (Py_ssize_t i = 0; i < n; i++) {
                PyObject *item = read_val(d, t->elem, -1, 0);
                if (item == NULL)
                    return NULL;
                Py_DECREF(item);
            }
            d->depth--;
            return Py_NewRef(Py_None);
        }
        list = PyList_New(n);
        if (list == NULL)
            return NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *item = read_val(d, t->elem, -1, 1);
            if (item == NULL) {
                Py_DECREF(list);  /* unset items are NULL: list_dealloc skips them */
                return NULL;
            }
            PyList_SET_ITEM(list, i, item);
        }
        d->depth--;
        untrack(list);
        return list;
    }
    case TT_STRUCT: {
        Py_ssize_t start = d->pos;
        PyObject *checked;
        if (t->spec == NULL && (t->spec = class_spec(t->cls, d->union_names)) == NULL)
            return NULL;
        if (!t->raw || !build)
            return read_struct(d, t->spec, build);
        /* Raw: checked field by field as the class (nothing made), then its bytes, STOP included.
         * A buffer other than bytes may change meanwhile: the bytes kept are decoded (and checked)
         * again when used, so a change gives an error or other values there, never more. */
        if ((checked = read_struct(d, t->spec, 0)) == NULL)
            return NULL;
        Py_DECREF(checked);
        return PyBytes_FromStringAndSize((const char *)d->buf + start, d->pos - start);
    }
    default:
        PyErr_Format(UnsupportedSpec, "type %d", t->ttype);  /* type_compile admits no other */
        return NULL;
    }
}

static int is_binary(int ttype) { return ttype == TT_STRING || ttype == TT_BINARY; }

static int one_bit(uint64_t mask) { return mask != 0 && (mask & (mask - 1)) == 0; }

/* A new struct of cs's class and, when it is made from cs->fresh, its dict (borrowed: the struct holds it). */
static PyObject *new_struct(ClassSpec *cs, PyObject **dict)
{
    PyObject *obj, *fields;
    *dict = NULL;
    if (cs->fresh == NULL)
        return PyObject_CallNoArgs(cs->cls);
    obj = ((PyTypeObject *)cs->cls)->tp_new((PyTypeObject *)cs->cls, empty_tuple, NULL);
    if (obj == NULL)
        return NULL;
    /* Set through the class's __dict__ descriptor (as ``obj.__dict__ = fields`` does), never through
     * the dict pointer (PyObject_GenericSetDict): from 3.13 a plain class's instance keeps its
     * attributes in inline values until its dict is set by the descriptor, which marks them invalid;
     * PyObject_GenericSetDict (3.13.0) stores the dict pointer beside still valid, empty inline
     * values, so vars(obj) shows every field and obj.field raises AttributeError. */
    fields = PyDict_Copy(cs->fresh);
    if (fields == NULL || Py_TYPE(cs->dict_descr)->tp_descr_set(cs->dict_descr, obj, fields) < 0) {
        Py_XDECREF(fields);
        Py_DECREF(obj);
        return NULL;
    }
    Py_DECREF(fields);  /* the struct holds it */
    *dict = fields;
    return obj;
}

/* One struct of cs's class. With picked (an array of cs->nfields slots, and want its flags), no
 * struct is made: the fields whose slot want flags are built into picked (a later copy of a field
 * replaces an earlier one, as setattr does), every other field is checked as build = 0 checks it. */
static PyObject *read_fields(Dec *d, ClassSpec *cs, int build, const unsigned char *want, PyObject **picked)
{
    int64_t last = 0, fid = 0;
    uint64_t set = 0;
    PyObject *dict = NULL;
    PyObject *obj;
    if (picked != NULL)
        build = 0;
    obj = build ? new_struct(cs, &dict) : Py_NewRef(Py_None);
    if (obj == NULL)
        return NULL;
    if (enter(d) < 0)
        goto fail;
    for (;;) {
        int ftype, pending;
        FieldSpec *f = NULL;
        if (field_begin(d, &last, &ftype, &fid, &pending) < 0)
            goto fail;
        if (ftype == TT_STOP)
            break;
        if (fid >= cs->min_fid && fid - cs->min_fid < cs->nfields)
            f = &cs->fields[fid - cs->min_fid];
        if (f != NULL && f->name != NULL &&
            (ftype == f->type.ttype || (is_binary(ftype) && is_binary(f->type.ttype)))) {
            Py_ssize_t slot = (Py_ssize_t)(fid - cs->min_fid);
            int take_it = picked != NULL && want[slot];
            PyObject *value = read_val(d, &f->type, pending, build || take_it);
            int rc;
            if (value == NULL)
                goto fail;
            if (take_it) {
                Py_XSETREF(picked[slot], value);
                value = NULL;
            }
            rc = !build ? 0 : dict != NULL ? PyDict_SetItem(dict, f->name, value)
                                           : PyObject_SetAttr(obj, f->name, value);
            Py_XDECREF(value);
            if (rc < 0)
                goto fail;
            set |= f->bit;
        } else if (skip(d, ftype, pending) < 0) {
            goto fail;
        }
    }
    d->depth--;
    if (cs->always_check || (set & cs->required) != cs->required || (cs->is_union && !one_bit(set)))
        d->needs_check = 1;
    if (build)
        untrack(obj);
    if (dict != NULL)
        untrack(dict);
    return obj;
fail:
    Py_DECREF(obj);
    return NULL;
}

static PyObject *read_struct(Dec *d, ClassSpec *cs, int build)
{
    return read_fields(d, cs, build, NULL, NULL);
}

/* ------------------------------------------------------------------ module */

/* The limits and class both entry points are given, checked. */
static int check_arguments(PyObject *cls, int max_nesting, long long max_elements)
{
    if (max_nesting < 1 || max_nesting > MAX_NESTING_CAP) {
        PyErr_Format(PyExc_ValueError, "max_nesting must be in [1, %d]", MAX_NESTING_CAP);
        return -1;
    }
    if (max_elements < 0) {
        PyErr_SetString(PyExc_ValueError, "max_elements must be >= 0");
        return -1;
    }
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "cls must be a thriftpy2 struct class");
        return -1;
    }
    return 0;
}

static void dec_start(Dec *d, PyObject *data, const Py_buffer *view, int max_nesting, long long max_elements,
                      PyObject *union_names)
{
    d->buf = (const uint8_t *)view->buf;
    d->len = view->len;
    d->pos = 0;
    d->depth = 0;
    d->max_depth = max_nesting;
    d->elements_left = max_elements;
    d->max_elements = max_elements;
    d->union_names = union_names;
    d->needs_check = 0;
    d->stable = PyBytes_CheckExact(data);
}

static PyObject *py_decode(PyObject *self, PyObject *args)
{
    PyObject *cls, *data, *union_names, *obj, *result = NULL;
    int max_nesting;
    long long max_elements;
    Py_buffer view;
    ClassSpec *cs;
    Dec d;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOiLO!:decode", &cls, &data, &max_nesting, &max_elements, &PyFrozenSet_Type,
                          &union_names))
        return NULL;
    if (check_arguments(cls, max_nesting, max_elements) < 0 || (cs = class_spec(cls, union_names)) == NULL)
        return NULL;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    dec_start(&d, data, &view, max_nesting, max_elements, union_names);
    obj = read_struct(&d, cs, 1);
    if (obj != NULL)
        result = Py_BuildValue("(NnO)", obj, d.pos, d.needs_check ? Py_True : Py_False);
    PyBuffer_Release(&view);
    return result;
}

/* What decode_fields gives for one input: (values, consumed), or None where decode() would fail
 * with DecodeError or ask for the required-field check, or (zero_padding) a byte after the STOP
 * is not zero. picked (cs->nfields slots, all NULL) is left all NULL. */
static PyObject *picked_fields(PyObject *data, ClassSpec *cs, int max_nesting, long long max_elements,
                               PyObject *union_names, Py_ssize_t nf, const Py_ssize_t *slots,
                               const unsigned char *want, PyObject **picked, int zero_padding)
{
    PyObject *checked, *values, *result = NULL;
    Py_buffer view;
    Dec d;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    dec_start(&d, data, &view, max_nesting, max_elements, union_names);
    checked = read_fields(&d, cs, 0, want, picked);
    if (checked == NULL) {
        if (PyErr_ExceptionMatches(DecodeError)) {  /* the caller's full decode names it */
            PyErr_Clear();
            result = Py_NewRef(Py_None);
        }
        goto done;
    }
    Py_DECREF(checked);
    if (d.needs_check)
        goto none;
    if (zero_padding) {
        for (Py_ssize_t at = d.pos; at < d.len; at++)
            if (d.buf[at] != 0)
                goto none;
    }
    if ((values = PyTuple_New(nf)) == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < nf; i++) {
        PyObject *v = picked[slots[i]];
        PyTuple_SET_ITEM(values, i, Py_NewRef(v != NULL ? v : Py_None));
    }
    result = Py_BuildValue("(Nn)", values, d.pos);
    goto done;
none:
    result = Py_NewRef(Py_None);
done:
    for (Py_ssize_t k = 0; k < cs->nfields; k++)
        Py_CLEAR(picked[k]);
    PyBuffer_Release(&view);
    return result;
}

static PyObject *py_decode_fields(PyObject *self, PyObject *args)
{
    PyObject *cls, *datas, *fids, *union_names, *inputs = NULL, *out = NULL;
    int max_nesting, zero_padding;
    long long max_elements;
    ClassSpec *cs;
    unsigned char *want = NULL;
    Py_ssize_t *slots = NULL, nf, n;
    PyObject **picked = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOO!iLO!p:decode_fields", &cls, &datas, &PyTuple_Type, &fids, &max_nesting,
                          &max_elements, &PyFrozenSet_Type, &union_names, &zero_padding))
        return NULL;
    if (check_arguments(cls, max_nesting, max_elements) < 0 || (cs = class_spec(cls, union_names)) == NULL)
        return NULL;
    nf = PyTuple_GET_SIZE(fids);
    want = PyMem_Calloc((size_t)cs->nfields + 1, 1);
    slots = PyMem_Calloc((size_t)nf + 1, sizeof(Py_ssize_t));
    picked = PyMem_Calloc((size_t)cs->nfields + 1, sizeof(PyObject *));
    if (want == NULL || slots == NULL || picked == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nf; i++) {
        long fid = PyLong_AsLong(PyTuple_GET_ITEM(fids, i));
        if (fid == -1 && PyErr_Occurred())
            goto done;
        if (fid < cs->min_fid || fid - cs->min_fid >= cs->nfields || cs->fields[fid - cs->min_fid].name == NULL) {
            PyErr_Format(PyExc_ValueError, "%R has no field %ld", cls, fid);
            goto done;
        }
        slots[i] = (Py_ssize_t)(fid - cs->min_fid);
        want[slots[i]] = 1;
    }
    /* A tuple: the Python code that making a struct may run cannot change what is decoded next. */
    if ((inputs = PySequence_Tuple(datas)) == NULL)
        goto done;
    n = PyTuple_GET_SIZE(inputs);
    if ((out = PyList_New(n)) == NULL)
        goto done;
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *item = picked_fields(PyTuple_GET_ITEM(inputs, j), cs, max_nesting, max_elements, union_names,
                                       nf, slots, want, picked, zero_padding);
        if (item == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, j, item);
    }
done:
    Py_XDECREF(inputs);
    PyMem_Free(want);
    PyMem_Free(slots);
    PyMem_Free(picked);
    return out;
}

static PyObject *py_info(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
#if defined(__clang__)
    const char *compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
    const char *compiler = "gcc " __VERSION__;
#elif defined(_MSC_VER)
    const char *compiler = "msvc";
#else
    const char *compiler = "unknown";
#endif
    return Py_BuildValue("{s:s,s:s}", "compiler", compiler, "flags", SB_BUILD_FLAGS);
}

static PyMethodDef methods[] = {
    {"decode", py_decode, METH_VARARGS,
     "decode(cls, data, max_nesting, max_elements, union_names) -> (obj, consumed, needs_check)."},
    {"decode_fields", py_decode_fields, METH_VARARGS,
     "decode_fields(cls, datas, fids, max_nesting, max_elements, union_names, zero_padding) -> list of\n"
     "(values, consumed) or None: the fields fids of each input, every other field checked as decode() checks it."},
    {"info", py_info, METH_NOARGS, "Compiler and flags of this build."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "native_thrift",
                                    "Bounded Thrift compact-protocol decoder (private; see secure_bloom.thrift_codec).",
                                    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_native_thrift(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    DecodeError = PyErr_NewExceptionWithDoc(
        "secure_bloom.native_thrift.DecodeError",
        "The compact-protocol bytes do not decode: args are (kind, message, nbytes), kind \"short\"\n"
        "(the input ends too early), \"malformed\" (the bytes cannot be valid) or \"invalid\" (message\n"
        "names the exception the Python decoder meets). secure_bloom.thrift_codec raises the library's\n"
        "own error from it.",
        NULL, NULL);
    UnsupportedSpec = PyErr_NewExceptionWithDoc(
        "secure_bloom.native_thrift.UnsupportedSpec",
        "A thrift_spec shape this decoder does not handle (a map-typed field, a container without its\n"
        "element spec): secure_bloom.thrift_codec decodes that class with the Python decoder instead.",
        PyExc_TypeError, NULL);
    spec_cache = PyDict_New();
    str_thrift_spec = PyUnicode_InternFromString("thrift_spec");
    str_dict = PyUnicode_InternFromString("__dict__");
    str_raw_of = PyUnicode_InternFromString("thrift_raw_of");
    empty_tuple = PyTuple_New(0);
    if (DecodeError == NULL || UnsupportedSpec == NULL || spec_cache == NULL || str_thrift_spec == NULL ||
        str_dict == NULL || str_raw_of == NULL || empty_tuple == NULL ||
        PyModule_AddObjectRef(m, "DecodeError", DecodeError) < 0 ||
        PyModule_AddObjectRef(m, "UnsupportedSpec", UnsupportedSpec) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
