"""Tools on top of the library: the end-to-end demo, the benchmarks, and parquet-java as a
reference reader (Java harnesses in a jar of their own, never on Spark's class path).

* :mod:`secure_bloom.tools.parquet_java` - BloomProbe and BloomBench from Python (the checks only
  the tests run, BloomVerify and KmsTool, live in tests/support/java).
* :mod:`secure_bloom.tools.demo` - ``secure-bloom demo``.
* :mod:`secure_bloom.tools.bench` - ``secure-bloom bench`` (filter kernels vs parquet-java).
* :mod:`secure_bloom.tools.bench_spark` - ``secure-bloom bench-spark`` (distributed build).
"""
