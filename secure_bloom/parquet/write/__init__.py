"""Adding filters: one-call and streaming writes of encrypted files with encrypted Bloom filters
(:mod:`.writer`, :mod:`.dataset`), attaching filters to an existing file (:mod:`.attach`), and
the tail step both share (:mod:`.append`). Uses ``file/`` only.
"""

from .attach import AttachedFilter, AttachReport, attach_bloom_filters
from .dataset import write_to_dataset
from .options import ColumnSpec
from .writer import ParquetWriter, WriteReport, write_table

__all__ = ["write_table", "ParquetWriter", "write_to_dataset", "WriteReport", "attach_bloom_filters",
           "AttachReport", "AttachedFilter", "ColumnSpec"]
