# Step costs of the cold fast pruning path over a dataset made by gen.py: open, ColumnMetaData,
# bounds, filters (python scripts/prof/steps.py DIR). Copied from the issue-22 profiling kit;
# works on the code before the native path too (filters one by one there).
import pickle, sys, time, base64, statistics
from pathlib import Path
from secure_bloom.kms import KeyListKms
from secure_bloom.parquet import KeyAccess
from secure_bloom.parquet.read import api
from secure_bloom.parquet.read.fast_prune import FastSource, fast_source, close_source, LookupKeys
root = Path(sys.argv[1]); d = pickle.load(open(root/"meta.pkl","rb"))
master = {k: base64.b64decode(v) for k, v in (p.split(":") for p in d["key_list"].split(", "))}
kms = KeyListKms(master)
paths = sorted(str(p) for p in Path(d["encrypted"]).iterdir())
def med(f, n=11):
    f(); ts=[]
    for _ in range(n):
        t=time.perf_counter(); f(); ts.append(time.perf_counter()-t)
    return 1e3*statistics.median(ts)
def run(level):
    def f():
        keys = KeyAccess(kms=kms); lk = LookupKeys(keys)
        for p in paths:
            s = fast_source(p, None, keys, lk)
            info = s.columns[0]
            for rg in range(s.num_row_groups):
                if level >= 1: s._chunk(rg, info)
                if level >= 2: s.bounds(rg, info)
                if level >= 3 and not batched:
                    bf = s.bloom_filter(rg, info)
                    bf.check_hash(12345678901234)
                elif level >= 3:
                    s.want(rg, info)
            if level >= 3 and batched:  # the native path: every filter of the file read, decrypted, probed in one call
                s.fetch_filters({info.ordinal: (12345678901234,)})
            close_source(s)
    return f
batched = hasattr(FastSource, "fetch_filters")
for lvl, name in enumerate(["open(tail+footer key+footer)", "+column key+CMD decrypt/parse", "+bounds",
                            "+filter read/decrypt/probe"]):
    print(name, "%.2f ms" % med(run(lvl)))
