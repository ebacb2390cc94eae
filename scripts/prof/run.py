# Whole lookups (scan + to_table), cold and warm, and DuckDB on the plaintext copy: python scripts/prof/run.py DIR [prof].
# Copied from the issue-22 profiling kit.
import pickle, sys, time, base64, statistics
from pathlib import Path
from secure_bloom.kms import KeyListKms
from secure_bloom.parquet import KeyAccess, PruneCache
from secure_bloom.parquet.read.api import scan
root = Path(sys.argv[1]); d = pickle.load(open(root/"meta.pkl","rb"))
master = {k: base64.b64decode(v) for k, v in (p.split(":") for p in d["key_list"].split(", "))}
kms = KeyListKms(master)
present = d["present"][:5]; absent = [k[:31] + ('0' if k[31] != '0' else '1') for k in present]
def look(key, keys, cache=None):
    s = scan(d["encrypted"], filters=[("key","==",key)], keys=keys, cache=cache)
    return s.to_table().num_rows
look(present[0], KeyAccess(kms=kms))
mode = sys.argv[2] if len(sys.argv) > 2 else "time"
if mode == "prof":
    import cProfile, pstats
    pr = cProfile.Profile(); pr.enable()
    for _ in range(10):
        for k in absent: look(k, KeyAccess(kms=kms))
    pr.disable(); st = pstats.Stats(pr).sort_stats(sys.argv[3] if len(sys.argv)>3 else "cumulative")
    if len(sys.argv) > 5: st.print_callers(sys.argv[5])  # e.g. "builtins.len"
    else: st.print_stats(int(sys.argv[4]) if len(sys.argv)>4 else 45)
else:
    for label, ks in (("absent", absent), ("present", present)):
        ts=[]
        for k in ks*3:
            t=time.perf_counter(); look(k, KeyAccess(kms=kms)); ts.append(time.perf_counter()-t)
        warm = (KeyAccess(kms=kms), PruneCache()); look(k, *warm)
        tw=[]
        for k in ks*3:
            t=time.perf_counter(); look(k, *warm); tw.append(time.perf_counter()-t)
        print(label, "cold %.1f ms warm %.1f ms" % (1e3*statistics.median(ts), 1e3*statistics.median(tw)))
    import duckdb
    con = duckdb.connect(); glob = d["plaintext"] + "/*.parquet"
    for label, ks in (("absent", absent), ("present", present)):
        ts=[]
        for k in ks*3:
            t=time.perf_counter(); con.execute("SELECT * FROM read_parquet(?) WHERE key = ?", [glob, k]).fetchall(); ts.append(time.perf_counter()-t)
        print("duckdb", label, "%.1f ms" % (1e3*statistics.median(ts)))
