"""The JVM side: parquet-java (through pyspark's jars) writing and reading encrypted Bloom filters.

* :mod:`secure_bloom.spark.jvm` - compile and cache our jars (the production jar holds only the
  KMS clients Spark loads), run Java mains.
* :mod:`secure_bloom.spark.policy` - :class:`EncryptionPolicy` -> Hadoop properties.
* :mod:`secure_bloom.spark.session` - SparkSessions configured with our jar and a policy.
* :mod:`secure_bloom.spark.build` - Bloom filters built across a Spark cluster.

Nothing here imports pyspark until a session is asked for.
"""
