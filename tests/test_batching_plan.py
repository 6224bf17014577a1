"""The batching plan: batches of similar lengths within the budgets, each longest first; or the input order."""

from __future__ import annotations

from spacy_contextual.batching import plan_batches


def test_batches_group_similar_lengths_within_the_budgets_longest_first():
    lengths = [5, 30, 2, 17, 9, 30, 1, 12]
    batches = plan_batches(lengths, max_batch_tokens=64, max_rows=3)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    for batch in batches:
        assert len(batch) <= 3 and (max(lengths[i] for i in batch) + 2) * len(batch) <= 64 or len(batch) == 1
        assert [lengths[i] for i in batch] == sorted((lengths[i] for i in batch), reverse=True)
    assert [max(lengths[i] for i in batch) for batch in batches] == sorted(max(lengths[i] for i in b) for b in batches)


def test_keep_order_keeps_the_input_order():
    assert plan_batches([5, 30, 2, 17], max_rows=2, keep_order=True) == [[0, 1], [2, 3]]
