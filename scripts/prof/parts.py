# The parts of a lookup (discover, restrict, prune_files, ...): python scripts/prof/parts.py DIR.
# Copied from the issue-22 profiling kit.
import pickle, sys, time, base64, statistics
from pathlib import Path
from secure_bloom.kms import KeyListKms
from secure_bloom.parquet import KeyAccess
from secure_bloom.parquet.read import api, discovery
from secure_bloom.parquet.read.predicate import predicate_tree, to_expression
from secure_bloom.parquet.read.prune import prune_files
root = Path(sys.argv[1]); d = pickle.load(open(root/"meta.pkl","rb"))
master = {k: base64.b64decode(v) for k, v in (p.split(":") for p in d["key_list"].split(", "))}
kms = KeyListKms(master)
k = d["present"][0]; key = k[:31] + ('0' if k[31] != '0' else '1')
def med(f, n=15):
    f(); ts=[]
    for _ in range(n):
        t=time.perf_counter(); f(); ts.append(time.perf_counter()-t)
    return 1e3*statistics.median(ts)
keys = KeyAccess(kms=kms)
base, fs, scan_fs, fmt = discovery.discover_dataset(d["encrypted"], keys, None, None, "hive")
expr = to_expression([("key","==",key)])
tree = predicate_tree(expr, base.schema)
paths = [f.path for f in base.get_fragments()]
print("discover %.2f ms" % med(lambda: discovery.discover_dataset(d["encrypted"], KeyAccess(kms=kms), None, None, "hive")))
print("restrict %.2f ms" % med(lambda: api.restrict(base, fs, fmt, expr, keys=KeyAccess(kms=kms))))
print("prune_files %.2f ms" % med(lambda: prune_files(paths, tree, keys=KeyAccess(kms=kms), filesystem=fs, schema=base.schema, progress=False)))
r,_,_ = api.restrict(base, fs, fmt, expr, keys=KeyAccess(kms=kms))
print("to_table empty %.2f ms" % med(lambda: r.to_table(filter=expr)))
print("get_fragments x2 %.2f ms" % med(lambda: (list(base.get_fragments()), list(base.get_fragments(filter=expr)))))
print("KeyAccess() %.3f ms" % med(lambda: KeyAccess(kms=kms)))
