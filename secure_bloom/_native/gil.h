/*
 * When the C extensions release the GIL: only around work long enough to pay for it.
 *
 * Releasing the GIL lets a waiting thread take it; the releasing thread then waits for it back
 * (until that thread's next release, or the interpreter's switch interval). Around a few
 * microseconds of work (one 150-byte ColumnMetaData module, one filter probe), that handoff
 * costs more than the work: two threads doing lookups ran at 0.35-0.6x one thread's throughput.
 * So the work is measured first, in bytes touched, and the GIL is released only from
 * SB_GIL_RELEASE_BYTES up (about 20-50 us of AES-GCM or hashing). Holding the GIL longer is
 * never less safe: the buffers are still read once, before the work, as the callers document.
 */
#ifndef SECURE_BLOOM_GIL_H
#define SECURE_BLOOM_GIL_H

#include <Python.h>

#define SB_GIL_RELEASE_BYTES ((long long)64 * 1024)

/* Like Py_BEGIN_ALLOW_THREADS / Py_END_ALLOW_THREADS, releasing only when `bytes` (the work's
 * size) reaches SB_GIL_RELEASE_BYTES. The two must pair in one block, as Python's do. */
#define SB_BEGIN_ALLOW_THREADS_FOR(bytes) \
    { PyThreadState *sb_gil_save_ = ((long long)(bytes) >= SB_GIL_RELEASE_BYTES) ? PyEval_SaveThread() : NULL;
#define SB_END_ALLOW_THREADS_FOR \
      if (sb_gil_save_ != NULL) PyEval_RestoreThread(sb_gil_save_); }

#endif
