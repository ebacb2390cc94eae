# Generate a dataset: python scripts/prof/gen.py DIR FILES ROW_GROUPS SIZE_MB (bench_lookup.generate_dataset).
# Copied from the issue-22 profiling kit.
import pickle, sys
from pathlib import Path
from benchmarks.bench_lookup import generate_dataset
root = Path(sys.argv[1]); files=int(sys.argv[2]); rgs=int(sys.argv[3]); mb=float(sys.argv[4])
import shutil; shutil.rmtree(root, ignore_errors=True); root.mkdir(parents=True)
d = generate_dataset(root, mb, files, rgs)
d.pop("kms")
pickle.dump({k:(str(v) if isinstance(v, Path) else v) for k,v in d.items()}, open(root/"meta.pkl","wb"))
