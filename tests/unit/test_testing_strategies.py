"""The Hypothesis strategies we ship (secure_bloom.testing), used the way a user would."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from support.profiles import examples

import secure_bloom as sb
from secure_bloom.values.physical import hash_value
from secure_bloom.testing import aes_keys, file_aads, ordinals, physical_values, physical_types, populated_filters


@settings(max_examples=examples(150), deadline=None)
@given(populated_filters())
def test_no_false_negatives_for_any_physical_type(case) -> None:  # type: ignore[no-untyped-def]
    bf, ptype, width, values = case
    for v in values:
        assert bf.might_contain(v, ptype, type_length=width)
        assert bf.check_hash(hash_value(v, ptype, type_length=width))
    if values:
        assert bf.might_contain_many(values, ptype, type_length=width).all()


@settings(max_examples=examples(60), deadline=None)
@given(populated_filters(max_values=50, max_log2_bytes=10), aes_keys(), file_aads(), ordinals(), ordinals())
def test_encrypted_round_trip(case, key, aad, rg, col) -> None:  # type: ignore[no-untyped-def]
    bf = case[0]
    blob = sb.encrypt_bloom_filter(bf, key, aad, rg, col)
    assert sb.decrypt_bloom_filter(blob, key, aad, rg, col) == bf


@settings(max_examples=examples(100), deadline=None)
@given(physical_types().flatmap(lambda t: st.tuples(st.just(t), st.lists(physical_values(*t), max_size=30))))
def test_values_hash_the_same_one_by_one_and_in_bulk(case) -> None:  # type: ignore[no-untyped-def]
    (ptype, width), values = case
    bulk = sb.hash_values(values, ptype, type_length=width)
    assert [int(h) for h in bulk] == [hash_value(v, ptype, type_length=width) for v in values]
