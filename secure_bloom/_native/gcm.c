/*
 * secure_bloom.native_gcm: AES-GCM for batches of Parquet modules (the GIL released for large ones): the C
 * binding of secure_bloom.crypto.gcm (decrypt_many), which every lookup's batches of ColumnMetaData
 * and Bloom filter modules go through (ParquetBloomReader.column_metadata_many / bloom_filters).
 *
 * Written for secure_bloom from Parquet Encryption.md (module = 4-byte little-endian length |
 * 12-byte nonce | ciphertext | 16-byte tag). AES-GCM is OpenSSL's EVP interface (libcrypto): no
 * cipher code of our own. Bytes in, bytes out: the reads are the reader's (any filesystem), the
 * framing checks and the Thrift are Python's; this opens sealed bytes and nothing else.
 *
 * libcrypto is loaded at run time, not linked: module init dlopen()s the system's libcrypto by soname
 * (libcrypto.so.3, then libcrypto.so.1.1; RTLD_NOW | RTLD_LOCAL) and resolves the few functions used
 * below with dlsym(), through prototypes of our own (section "libcrypto, loaded at run time"). So the
 * build needs no OpenSSL headers and the extension has no DT_NEEDED on libcrypto: the wheel bundles
 * none (a bundled libcrypto would raise its glibc floor) and uses the user's, patched by their
 * distribution. No library, a library older than 1.1.0 or a missing function: the import raises
 * ImportError and secure_bloom.crypto.gcm opens modules one by one with cryptography
 * (ExtensionFallbackWarning). The functions are resolved once, at init, under the GIL, and never
 * change afterwards.
 *
 * What it offers (private: secure_bloom.crypto.gcm.decrypt_many is the API; on any failure it opens
 * the modules one by one with cryptography, which names the one that fails):
 *   - GcmKey(key): one AES-128/192/256-GCM key with an EVP_CIPHER_CTX made once and reused for
 *     every module it opens (a second thread that finds it busy uses a context of its own). The key
 *     bytes are kept in the object (to make such contexts) and cleansed (OPENSSL_cleanse) when it
 *     is freed; its repr shows the key length only.
 *   - GcmKey.decrypt_modules(modules, aads, max_plaintext): the plaintexts of Parquet modules, each
 *     checked (28 <= length prefix <= 28 + max_plaintext and the prefix naming exactly the rest of
 *     the buffer), all decrypted in one go, with the GIL released from 64 KiB of modules up (gil.h:
 *     a smaller batch costs less than the handoff); Failed on the first that fails.
 *
 * Memory safety: every Python buffer is read once, before the GIL is released: a bytes object (or a
 * memoryview of one, exported for the call so it cannot be released) is used in place, holding a
 * reference (bytes cannot change); any other buffer is copied into C memory first. Lengths are
 * checked against the limits below before anything is allocated; all allocations are bounded by
 * them or by the size of a Python object the caller already holds.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>

#include <stdint.h>
#include <string.h>

#include "gil.h"
#include "sbbf.h"

#ifndef _WIN32
#include <dlfcn.h>
#endif

/* glibc 2.34 moved dlopen & co. from libdl into libc under the new version GLIBC_2.34, keeping the
 * old versions as compatibility symbols. Built against glibc >= 2.34, our references would need
 * GLIBC_2.34 and the wheel would be manylinux_2_34; bound to the architecture's baseline version
 * they resolve on every glibc: in libc from 2.34, in libdl.so.2 before (which any Python running
 * there has loaded: CPython's own extension import calls dlopen, so it links -ldl). */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
#if defined(__x86_64__)
#define SB_DL_BASELINE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define SB_DL_BASELINE "GLIBC_2.17"
#endif
#ifdef SB_DL_BASELINE
__asm__(".symver dlopen,dlopen@" SB_DL_BASELINE);
__asm__(".symver dlsym,dlsym@" SB_DL_BASELINE);
__asm__(".symver dladdr,dladdr@" SB_DL_BASELINE);
__asm__(".symver dlclose,dlclose@" SB_DL_BASELINE);
__asm__(".symver dlerror,dlerror@" SB_DL_BASELINE);
#endif
#endif

#ifndef SB_BUILD_FLAGS
#define SB_BUILD_FLAGS "unknown"
#endif

/* secure_bloom.spec / parquet.file.crypto_context (limits() lets a test compare them) */
#define LENGTH_PREFIX 4
#define NONCE_LENGTH 12
#define TAG_LENGTH 16
#define MODULE_GCM (NONCE_LENGTH + TAG_LENGTH)
#define MAX_THRIFT_MODULE (256LL << 20)
/* Caps of this module's own: an AAD (file AAD prefix + unique part + type + ordinals), modules per call. */
#define MAX_AAD 4096
#define MAX_MODULES 65536

static PyObject *Failed;

/* ------------------------------------------------------------------ libcrypto, loaded at run time */

/* Opaque OpenSSL types and the prototypes we call, as OpenSSL 1.1.0 through 3.x declare them
 * (include/openssl/evp.h, crypto.h; all exported since 1.1.0 with these signatures). */
typedef struct evp_cipher_st EVP_CIPHER;
typedef struct evp_cipher_ctx_st EVP_CIPHER_CTX;
typedef struct engine_st ENGINE;
typedef struct ossl_lib_ctx_st OSSL_LIB_CTX;   /* 3.x only */

#define EVP_CTRL_GCM_SET_IVLEN 0x9
#define EVP_CTRL_GCM_SET_TAG 0x11
#define SB_OPENSSL_VERSION 0                    /* OpenSSL_version(OPENSSL_VERSION) */
#define SB_MIN_OPENSSL 0x10100000UL             /* 1.1.0 */

typedef EVP_CIPHER_CTX *(*ctx_new_fn)(void);
typedef void (*ctx_free_fn)(EVP_CIPHER_CTX *);
typedef const EVP_CIPHER *(*cipher_fn)(void);
typedef int (*decrypt_init_fn)(EVP_CIPHER_CTX *, const EVP_CIPHER *, ENGINE *, const unsigned char *,
                               const unsigned char *);
typedef int (*decrypt_update_fn)(EVP_CIPHER_CTX *, unsigned char *, int *, const unsigned char *, int);
typedef int (*decrypt_final_fn)(EVP_CIPHER_CTX *, unsigned char *, int *);
typedef int (*ctx_ctrl_fn)(EVP_CIPHER_CTX *, int, int, void *);
typedef void (*cleanse_fn)(void *, size_t);
typedef const char *(*version_fn)(int);
typedef unsigned long (*version_num_fn)(void);
typedef EVP_CIPHER *(*cipher_fetch_fn)(OSSL_LIB_CTX *, const char *, const char *);

/* Set once by load_libcrypto() (module init, under the GIL), read-only afterwards. */
static struct {
    ctx_new_fn ctx_new;
    ctx_free_fn ctx_free;
    cipher_fn aes_gcm[3];              /* EVP_aes_128_gcm, EVP_aes_192_gcm, EVP_aes_256_gcm */
    decrypt_init_fn decrypt_init;
    decrypt_update_fn decrypt_update;
    decrypt_final_fn decrypt_final;
    ctx_ctrl_fn ctx_ctrl;
    cleanse_fn cleanse;
    version_fn version;
    version_num_fn version_num;
    cipher_fetch_fn cipher_fetch;      /* optional: OpenSSL 3 */
    void *handle;                      /* never closed: the ciphers and contexts live in it */
    char path[1024];                   /* the file loaded (dladdr), or the name dlopen()ed */
} crypto;

#define EVP_CIPHER_CTX_new crypto.ctx_new
#define EVP_CIPHER_CTX_free crypto.ctx_free
#define EVP_DecryptInit_ex crypto.decrypt_init
#define EVP_DecryptUpdate crypto.decrypt_update
#define EVP_DecryptFinal_ex crypto.decrypt_final
#define EVP_CIPHER_CTX_ctrl crypto.ctx_ctrl
#define OPENSSL_cleanse crypto.cleanse

/* Tried in order; SECURE_BLOOM_LIBCRYPTO (tests and diagnostics) names the one file or soname to
 * try instead. */
#ifdef __APPLE__
static const char *const LIBCRYPTO_NAMES[] = {"libcrypto.3.dylib", "libcrypto.1.1.dylib", NULL};
#else
static const char *const LIBCRYPTO_NAMES[] = {"libcrypto.so.3", "libcrypto.so.1.1", NULL};
#endif
#define LIBCRYPTO_ENV "SECURE_BLOOM_LIBCRYPTO"

/* AES-128/192/256-GCM, resolved once (OpenSSL 3: fetched, since EVP_aes_*_gcm() would fetch the
 * implementation again at every context initialisation); freed never: they live as long as the
 * process. */
static const EVP_CIPHER *AES_GCM[3];

#ifdef _WIN32
static int load_libcrypto(void)
{
    PyErr_SetString(PyExc_ImportError, "secure_bloom.native_gcm loads libcrypto with dlopen: not on Windows");
    return -1;
}
#else
/* POSIX: a data pointer from dlsym() converts to a function pointer of the same size. */
_Static_assert(sizeof(void *) == sizeof(ctx_new_fn), "function pointers are not data-pointer sized");

/* dlsym(handle, name) into the function pointer at slot (copied bytewise: no aliasing of a
 * function pointer as void *); 0, or -1 with an ImportError naming the function. */
static int resolve(const char *name, void *slot, int required)
{
    void *sym = dlsym(crypto.handle, name);
    memcpy(slot, &sym, sizeof(sym));
    if (sym == NULL && required) {
        PyErr_Format(PyExc_ImportError, "libcrypto (%s) has no %s: OpenSSL 1.1.0 or newer is needed",
                     crypto.path, name);
        return -1;
    }
    return 0;
}

/* Load libcrypto and resolve every function; 0, or -1 with an ImportError set. Called once per
 * process (module init holds the GIL; a second init finds everything resolved). */
static int load_libcrypto(void)
{
    if (crypto.handle != NULL)
        return 0;
    const char *override = getenv(LIBCRYPTO_ENV);
    const char *const *names = LIBCRYPTO_NAMES;
    const char *one[2] = {override, NULL};
    if (override != NULL && override[0] != '\0')
        names = one;
    char errors[1024] = "";
    size_t used = 0;
    void *handle = NULL;
    const char *name = NULL;
    for (int i = 0; names[i] != NULL && handle == NULL; i++) {
        name = names[i];
        handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
        if (handle == NULL && used < sizeof(errors)) {
            const char *e = dlerror();
            int w = snprintf(errors + used, sizeof(errors) - used, "%s%s", used ? "; " : "", e ? e : name);
            used = w < 0 ? sizeof(errors) : used + (size_t)w;
        }
    }
    if (handle == NULL) {
        PyErr_Format(PyExc_ImportError, "cannot load OpenSSL's libcrypto (%s)", errors);
        return -1;
    }
    crypto.handle = handle;
    snprintf(crypto.path, sizeof(crypto.path), "%s", name);
    static const char *const gcm_names[3] = {"EVP_aes_128_gcm", "EVP_aes_192_gcm", "EVP_aes_256_gcm"};
    struct { const char *name; void *slot; int required; } table[] = {
        {"EVP_CIPHER_CTX_new", (void *)&crypto.ctx_new, 1},
        {"EVP_CIPHER_CTX_free", (void *)&crypto.ctx_free, 1},
        {gcm_names[0], (void *)&crypto.aes_gcm[0], 1},
        {gcm_names[1], (void *)&crypto.aes_gcm[1], 1},
        {gcm_names[2], (void *)&crypto.aes_gcm[2], 1},
        {"EVP_DecryptInit_ex", (void *)&crypto.decrypt_init, 1},
        {"EVP_DecryptUpdate", (void *)&crypto.decrypt_update, 1},
        {"EVP_DecryptFinal_ex", (void *)&crypto.decrypt_final, 1},
        {"EVP_CIPHER_CTX_ctrl", (void *)&crypto.ctx_ctrl, 1},
        {"OPENSSL_cleanse", (void *)&crypto.cleanse, 1},
        {"OpenSSL_version", (void *)&crypto.version, 1},
        {"OpenSSL_version_num", (void *)&crypto.version_num, 1},
        {"EVP_CIPHER_fetch", (void *)&crypto.cipher_fetch, 0},
    };
    Dl_info where;
    if (dladdr(dlsym(handle, "EVP_CIPHER_CTX_new"), &where) != 0 && where.dli_fname != NULL
        && where.dli_fname[0] != '\0')
        snprintf(crypto.path, sizeof(crypto.path), "%s", where.dli_fname);
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (resolve(table[i].name, table[i].slot, table[i].required) < 0)
            goto fail;
    }
    unsigned long version = crypto.version_num();
    if (version < SB_MIN_OPENSSL) {
        PyErr_Format(PyExc_ImportError, "libcrypto (%s) is OpenSSL %lx: 1.1.0 or newer is needed", crypto.path,
                     version);
        goto fail;
    }
    return 0;
fail:
    dlclose(handle);
    memset(&crypto, 0, sizeof(crypto));
    return -1;
}
#endif

static const EVP_CIPHER *aes_gcm(Py_ssize_t keylen)
{
    int i = keylen == 16 ? 0 : keylen == 24 ? 1 : keylen == 32 ? 2 : -1;
    return i < 0 ? NULL : AES_GCM[i];
}

/* ------------------------------------------------------------------ stable buffers */

/* A Python buffer as C bytes that do not change while the GIL is released: a bytes object (or a
 * memoryview exporting one) in place, anything else copied. */
typedef struct {
    const uint8_t *p;
    Py_ssize_t n;
    Py_buffer view;   /* held when view.obj != NULL */
    uint8_t *owned;   /* a copy (PyMem) */
} Stable;

static void stable_init(Stable *s)
{
    memset(s, 0, sizeof(*s));
}

static void stable_free(Stable *s)
{
    if (s->view.obj != NULL)
        PyBuffer_Release(&s->view);
    if (s->owned != NULL)
        PyMem_Free(s->owned);
    stable_init(s);
}

/* 0, or -1 with an exception set (TypeError, or ValueError when longer than cap). */
static int stable_get(PyObject *o, Py_ssize_t cap, const char *what, Stable *s)
{
    stable_init(s);
    if (PyObject_GetBuffer(o, &s->view, PyBUF_SIMPLE) < 0) {
        PyErr_Format(PyExc_TypeError, "%s must be a bytes-like object", what);
        return -1;
    }
    if (s->view.len > cap) {
        PyErr_Format(PyExc_ValueError, "%s is larger than %zd bytes", what, cap);
        stable_free(s);
        return -1;
    }
    s->n = s->view.len;
    PyObject *base = o;
    if (PyMemoryView_Check(o))
        base = PyMemoryView_GET_BASE(o);
    if (base != NULL && PyBytes_CheckExact(base)) {
        s->p = (const uint8_t *)s->view.buf;   /* immutable; the export keeps the view alive */
        return 0;
    }
    s->owned = PyMem_Malloc(s->n > 0 ? (size_t)s->n : 1);
    if (s->owned == NULL) {
        stable_free(s);
        PyErr_NoMemory();
        return -1;
    }
    memcpy(s->owned, s->view.buf, (size_t)s->n);
    PyBuffer_Release(&s->view);
    s->p = s->owned;
    return 0;
}

/* ------------------------------------------------------------------ GcmKey */

typedef struct {
    PyObject_HEAD
    EVP_CIPHER_CTX *ctx;        /* the reused context (guarded by lock) */
    PyThread_type_lock lock;
    const EVP_CIPHER *cipher;
    unsigned char key[32];
    int keylen;
} KeyObject;

static PyTypeObject KeyType;

/* A decrypt context for key k (EVP: cipher, 12-byte IV, key), or NULL. */
static EVP_CIPHER_CTX *new_ctx(const KeyObject *k)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL)
        return NULL;
    if (EVP_DecryptInit_ex(ctx, k->cipher, NULL, NULL, NULL) != 1
        || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, NONCE_LENGTH, NULL) != 1
        || EVP_DecryptInit_ex(ctx, NULL, NULL, k->key, NULL) != 1) {
        EVP_CIPHER_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

static int gcm_run(EVP_CIPHER_CTX *ctx, const uint8_t *sealed, size_t n, const uint8_t *aad, size_t aadlen,
                   uint8_t *out)
{
    unsigned char tag[TAG_LENGTH];
    size_t ctlen = n - MODULE_GCM;
    int outl = 0;
    if (ctlen > (size_t)INT32_MAX || aadlen > (size_t)INT32_MAX)
        return -1;
    memcpy(tag, sealed + n - TAG_LENGTH, TAG_LENGTH);
    if (EVP_DecryptInit_ex(ctx, NULL, NULL, NULL, sealed) != 1)
        return -1;
    if (aadlen > 0 && EVP_DecryptUpdate(ctx, NULL, &outl, aad, (int)aadlen) != 1)
        return -1;
    if (ctlen > 0) {
        if (EVP_DecryptUpdate(ctx, out, &outl, sealed + NONCE_LENGTH, (int)ctlen) != 1 || (size_t)outl != ctlen)
            return -1;
    }
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG_LENGTH, tag) != 1)
        return -1;
    if (EVP_DecryptFinal_ex(ctx, out + ctlen, &outl) != 1 || outl != 0)
        return -1;
    return 0;
}

/* Open ``nonce | ciphertext | tag`` (n >= MODULE_GCM bytes) into out (n - MODULE_GCM bytes).
 * 0 on success, -1 for a failed tag (or any EVP failure). No GIL needed. */
static int gcm_open(KeyObject *k, const uint8_t *sealed, size_t n, const uint8_t *aad, size_t aadlen,
                    uint8_t *out)
{
    int rc;
    if (n < MODULE_GCM)
        return -1;
    if (PyThread_acquire_lock(k->lock, NOWAIT_LOCK)) {
        rc = gcm_run(k->ctx, sealed, n, aad, aadlen, out);
        PyThread_release_lock(k->lock);
    } else {  /* another thread holds the shared context: a context of our own */
        EVP_CIPHER_CTX *ctx = new_ctx(k);
        if (ctx == NULL)
            return -1;
        rc = gcm_run(ctx, sealed, n, aad, aadlen, out);
        EVP_CIPHER_CTX_free(ctx);
    }
    if (rc != 0 && n > MODULE_GCM)
        OPENSSL_cleanse(out, n - MODULE_GCM);   /* no unauthenticated plaintext left behind */
    return rc;
}

static PyObject *Key_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"key", NULL};
    Py_buffer key;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "y*:GcmKey", kwlist, &key))
        return NULL;
    const EVP_CIPHER *cipher = aes_gcm(key.len);
    if (cipher == NULL) {
        Py_ssize_t len = key.len;
        PyBuffer_Release(&key);
        PyErr_Format(PyExc_ValueError, "key must be 16, 24 or 32 bytes (AES-128/192/256), got %zd", len);
        return NULL;
    }
    KeyObject *self = (KeyObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        PyBuffer_Release(&key);
        return NULL;
    }
    self->cipher = cipher;
    self->keylen = (int)key.len;
    memcpy(self->key, key.buf, (size_t)key.len);
    PyBuffer_Release(&key);
    self->lock = PyThread_allocate_lock();
    self->ctx = new_ctx(self);
    if (self->lock == NULL || self->ctx == NULL) {
        Py_DECREF(self);
        PyErr_SetString(PyExc_MemoryError, "cannot create an AES-GCM context");
        return NULL;
    }
    return (PyObject *)self;
}

static void Key_dealloc(KeyObject *self)
{
    if (self->ctx != NULL)
        EVP_CIPHER_CTX_free(self->ctx);   /* cleanses its key schedule */
    if (self->lock != NULL)
        PyThread_free_lock(self->lock);
    OPENSSL_cleanse(self->key, sizeof(self->key));
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Key_repr(KeyObject *self)
{
    return PyUnicode_FromFormat("GcmKey(<%d bytes>)", self->keylen);
}

/* Sequence -> new list of its items (a copy: the caller's list may change while we work). */
static PyObject *as_list(PyObject *seq, Py_ssize_t cap, const char *what)
{
    PyObject *list = PySequence_List(seq);
    if (list == NULL)
        return NULL;
    if (PyList_GET_SIZE(list) > cap) {
        Py_DECREF(list);
        PyErr_Format(PyExc_ValueError, "more than %zd %s", cap, what);
        return NULL;
    }
    return list;
}

static PyObject *fail(const char *reason)
{
    PyErr_SetString(Failed, reason);
    return NULL;
}

static PyObject *Key_decrypt_modules(KeyObject *self, PyObject *args)
{
    PyObject *modules_arg, *aads_arg;
    long long max_plaintext;
    if (!PyArg_ParseTuple(args, "OOL:decrypt_modules", &modules_arg, &aads_arg, &max_plaintext))
        return NULL;
    if (max_plaintext < 0 || max_plaintext > MAX_THRIFT_MODULE) {
        PyErr_SetString(PyExc_ValueError, "max_plaintext out of range");
        return NULL;
    }
    PyObject *modules = as_list(modules_arg, MAX_MODULES, "modules");
    if (modules == NULL)
        return NULL;
    PyObject *aads = as_list(aads_arg, MAX_MODULES, "aads");
    if (aads == NULL) {
        Py_DECREF(modules);
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(modules);
    PyObject *result = NULL, *outs = NULL;
    Stable *mod = NULL, *aad = NULL;
    uint8_t **dst = NULL;
    if (PyList_GET_SIZE(aads) != n) {
        PyErr_SetString(PyExc_ValueError, "one AAD per module");
        goto done;
    }
    mod = PyMem_Calloc((size_t)n + 1, sizeof(Stable));
    aad = PyMem_Calloc((size_t)n + 1, sizeof(Stable));
    dst = PyMem_Calloc((size_t)n + 1, sizeof(uint8_t *));
    outs = PyList_New(n);
    if (mod == NULL || aad == NULL || dst == NULL || outs == NULL) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (stable_get(PyList_GET_ITEM(modules, i), MAX_THRIFT_MODULE + LENGTH_PREFIX + MODULE_GCM, "module",
                       &mod[i]) < 0
            || stable_get(PyList_GET_ITEM(aads, i), MAX_AAD, "aad", &aad[i]) < 0)
            goto done;
        if (mod[i].n < LENGTH_PREFIX) {
            fail("module");
            goto done;
        }
        uint32_t length = sbbf_load32le(mod[i].p);
        if (length < MODULE_GCM || (long long)length > MODULE_GCM + max_plaintext
            || (Py_ssize_t)length != mod[i].n - LENGTH_PREFIX) {
            fail("module length");
            goto done;
        }
        PyObject *plain = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(length - MODULE_GCM));
        if (plain == NULL)
            goto done;
        PyList_SET_ITEM(outs, i, plain);
        dst[i] = (uint8_t *)PyBytes_AS_STRING(plain);
    }
    int bad = 0;
    long long work = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        work += (long long)mod[i].n;
    Py_INCREF(self);
    SB_BEGIN_ALLOW_THREADS_FOR(work)  /* gil.h: small batches keep the GIL */
    for (Py_ssize_t i = 0; i < n && !bad; i++)
        bad = gcm_open(self, mod[i].p + LENGTH_PREFIX, (size_t)(mod[i].n - LENGTH_PREFIX), aad[i].p,
                       (size_t)aad[i].n, dst[i]) != 0;
    SB_END_ALLOW_THREADS_FOR
    Py_DECREF(self);
    if (bad) {
        fail("module");
        goto done;
    }
    result = outs;
    outs = NULL;
done:
    for (Py_ssize_t i = 0; mod != NULL && i < n; i++) {
        stable_free(&mod[i]);
        stable_free(&aad[i]);
    }
    PyMem_Free(mod);
    PyMem_Free(aad);
    PyMem_Free(dst);
    Py_XDECREF(outs);
    Py_DECREF(modules);
    Py_DECREF(aads);
    return result;
}

static PyMethodDef Key_methods[] = {
    {"decrypt_modules", (PyCFunction)Key_decrypt_modules, METH_VARARGS,
     "decrypt_modules(modules, aads, max_plaintext) -> list of plaintexts (Failed on any check)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject KeyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "secure_bloom.native_gcm.GcmKey",
    .tp_basicsize = sizeof(KeyObject),
    .tp_dealloc = (destructor)Key_dealloc,
    .tp_repr = (reprfunc)Key_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "GcmKey(key): one AES-GCM key (16, 24 or 32 bytes) with a reusable decrypt context",
    .tp_methods = Key_methods,
    .tp_new = Key_new,
};

static PyObject *py_limits(PyObject *self, PyObject *unused)
{
    return Py_BuildValue("{s:i,s:i,s:i,s:L,s:i,s:i}", "LENGTH_PREFIX", LENGTH_PREFIX, "NONCE_LENGTH", NONCE_LENGTH,
                         "TAG_LENGTH", TAG_LENGTH, "MAX_THRIFT_MODULE", MAX_THRIFT_MODULE, "MAX_AAD", MAX_AAD,
                         "MAX_MODULES", MAX_MODULES);
}

static PyObject *py_info(PyObject *self, PyObject *unused)
{
    return Py_BuildValue("{s:s,s:s,s:s}", "flags", SB_BUILD_FLAGS, "openssl", crypto.version(SB_OPENSSL_VERSION),
                         "libcrypto", crypto.path);
}

static PyMethodDef methods[] = {
    {"limits", py_limits, METH_NOARGS, "the limits compiled in"},
    {"info", py_info, METH_NOARGS, "build flags, the OpenSSL version in use and the libcrypto file loaded"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "native_gcm",
                                    "OpenSSL AES-GCM for batches of Parquet modules (private: secure_bloom.crypto.gcm is its API)", -1, methods};

PyMODINIT_FUNC PyInit_native_gcm(void)
{
    static const char *names[3] = {"AES-128-GCM", "AES-192-GCM", "AES-256-GCM"};
    if (load_libcrypto() < 0)
        return NULL;
    for (int i = 0; i < 3; i++) {
        if (AES_GCM[i] == NULL)   /* OpenSSL 3: fetched once; 1.1: the static ciphers */
            AES_GCM[i] = crypto.cipher_fetch != NULL ? crypto.cipher_fetch(NULL, names[i], NULL) : crypto.aes_gcm[i]();
        if (AES_GCM[i] == NULL) {
            PyErr_Format(PyExc_ImportError, "OpenSSL (%s) has no %s", crypto.path, names[i]);
            return NULL;
        }
    }
    if (PyType_Ready(&KeyType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Failed = PyErr_NewExceptionWithDoc(
        "secure_bloom.native_gcm.Failed",
        "A framing check or a decrypt of a module batch failed (its one argument names the check).\n\n"
        "Private to secure_bloom.crypto.gcm.decrypt_many, which then opens the batch's modules one\n"
        "by one with cryptography so that the library's own error names the module that fails.",
        NULL, NULL);
    if (Failed == NULL || PyModule_AddObject(m, "Failed", Failed) < 0) {
        Py_XDECREF(Failed);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(Failed);
    Py_INCREF(&KeyType);
    if (PyModule_AddObject(m, "GcmKey", (PyObject *)&KeyType) < 0) {
        Py_DECREF(&KeyType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
