"""Reading by key: pyarrow reads that skip the row groups a filter rules out (:mod:`.api`:
``read_table`` / ``dataset`` / ``scan``), the predicate tree (:mod:`.predicate`), the type Arrow
compares a leaf in (:mod:`.compare`), statistics (:mod:`.statistics`), partitions
(:mod:`.partitions`), the pruner (:mod:`.prune`: the one evaluator :mod:`.evaluate` over :mod:`.facts`), its cache
(:mod:`.prune_cache`), the dataset engines query (:mod:`.pruning_dataset`) and the CLI's
conditions (:mod:`.where`). Uses ``file/`` only.
"""

from .api import PrunedScan, dataset, open_dataset, read_table, scan
from .prune_cache import PruneCache
from .pruning_dataset import PruningDataset

__all__ = ["read_table", "dataset", "scan", "open_dataset", "PrunedScan", "PruningDataset", "PruneCache"]
