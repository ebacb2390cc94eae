"""Build the seed corpora of the atheris harnesses from the real files in tests/data/parquet-testing.

    python fuzz/make_seeds.py            # writes fuzz/corpus/{header,module,footer,thrift_time}/

* header: every Bloom filter header in the vectors: plaintext ones (16 bytes of Thrift) and the
  decrypted, zero-padded headers parquet-java encrypts (100 bytes);
* module: the two encrypted filters (header module + bitset module) of the Bloom filter vector,
  and a plaintext-mode seed (first byte 1, see fuzz_module.py) per real header;
* footer: the last 4 KiB of every Parquet vector, i.e. its tail (footer, FileCryptoMetaData,
  signature, length, magic) and the filters in front of it;
* thrift_time: recipes of fuzz_thrift_time.py: every FileMetaData (decrypted where encrypted),
  unamplified, and the 1 MiB varint run of issue 15 item 7.
"""

from __future__ import annotations

import hashlib
import io

from _common import BLOOM_VECTOR, CORPUS, DATA, TESTING_KEYS

from secure_bloom.crypto.modules import ModuleType, decrypt_module, module_aad
from secure_bloom.kms import KeyListKms
from secure_bloom.parquet import KeyAccess, ParquetBloomReader
from secure_bloom.parquet.file.tail import read_tail

VECTORS = sorted(p.name for p in DATA.iterdir() if p.name.endswith((".parquet", ".parquet.encrypted")))


def _write(kind: str, data: bytes) -> None:
    folder = CORPUS / kind
    folder.mkdir(parents=True, exist_ok=True)
    (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)


def main() -> None:
    keys = KeyAccess(kms=KeyListKms(TESTING_KEYS), explicit=TESTING_KEYS)
    _write("header", (DATA / "bloom_filter.xxhash.bin").read_bytes()[:16])
    for name in VECTORS:
        data = (DATA / name).read_bytes()
        _write("footer", data[-4096:] if len(data) > 4096 else data)
        read_tail(io.BytesIO(data), name)
        prefix = "tester" if "disable_aad_storage" in name else None
        with ParquetBloomReader(DATA / name, KeyAccess(kms=keys.kms, explicit=keys.explicit, aad_prefix=prefix)) as reader:
            _write("thrift_time", b"\x00\x00\x00\x00" + reader.footer.metadata_thrift)
            for chunk in reader.chunks(with_sizes=False):
                if not chunk.has_bloom_filter or chunk.bloom_filter_offset is None:
                    continue
                start = chunk.bloom_filter_offset
                if not chunk.encrypted:
                    _write("header", data[start:start + 16])
                    _write("module", b"\x01" + data[start:start + 16] + b"\x00" * 32)
                    continue
                blob = data[start:start + (chunk.bloom_filter_length or 0)]
                key = TESTING_KEYS[str(chunk.key_id)]
                aad = module_aad(reader.footer.require_file_aad(), ModuleType.BLOOM_FILTER_HEADER,
                                 chunk.row_group, chunk.column_ordinal)
                header, _ = decrypt_module(blob, key, aad)
                _write("header", header)
                if name == BLOOM_VECTOR:
                    _write("module", b"\x00" + bytes([chunk.column_ordinal]) + blob)
                    _write("module", b"\x01" + header + b"\x00" * 64)
    # i32 field 1 followed by 2^20 bytes 0xff (slice 1..2 of the template, 2^20 copies).
    _write("thrift_time", b"\x00\x40\x00\x14" + b"\x15\xff\xff\x00")
    for kind in ("header", "module", "footer", "thrift_time"):
        print(kind, len(list((CORPUS / kind).iterdir())), "seeds")


if __name__ == "__main__":
    main()
