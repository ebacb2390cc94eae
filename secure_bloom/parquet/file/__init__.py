"""One Parquet file (SPEC_NOTES 4-8): its tail and footer, schema, column chunks and their keys,
crypto contexts, where its bytes live (paths, URIs, filesystems, versions) and its Bloom filters,
read through :class:`~secure_bloom.parquet.file.reader.ParquetBloomReader`.

The floor the three rooms stand on: ``write/``, ``read/`` and ``audit/`` use ``file/``, and
``file/`` imports none of them. Modules: tail, footer, schema, chunk, keys, crypto_context,
sources, identity, regions, filter_io, reader, probe, describe, arrow_source, protection, leftovers.
"""
