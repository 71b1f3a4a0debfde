"""The stored team units merged a block at a time, so that a one-team edit reads a few dozen
entries instead of one per team.

A run merges every team unit's record (its inventory, its verify findings and statistics, its
OPS facts) in the teams' order. Read one by one, the records of 5,000 stored units were most of
what a one-team edit cost this process (~0.7 s: 5,000 entries unmarshalled into 400,000 small
sets, then merged). Every one of those merges is an append or a union in order (inventories:
``Inventory.merge``; OPS facts: ``merge_facts``; statistics: ``stats_total``; findings: a list),
so merging consecutive units first and the blocks after gives exactly the merge of all of them.
A block's merge is kept in the store (kind ``block``), keyed by its units' keys: a one-team edit
merges that team's block again from its units' records and reads every other block whole.

Where blocks end is decided by each team file's path alone (content-defined, as in chunking:
``units.BLOCK`` teams per block on average), not by position, so adding or removing a team changes its
own block only (``compiler.pipeline.units.ends_block``, which the parses use too).
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

from compiler.cache.records import UnitRecord, stats_total
from compiler.model.inventory import FileRow, Inventory
from compiler.verify.runtime import merge_facts


def merged(records: Iterable[UnitRecord]) -> UnitRecord:
    """One record for consecutive units: what merging each of them in order gives (without rows:
    a unit keeps them apart, read through ``rows_of``)."""
    recs = list(records)
    inventory = Inventory()
    for rec in recs:
        inventory.merge(Inventory.from_record(rec.inventory, list))
    return UnitRecord(inventory.to_record(), [d for rec in recs for d in rec.diags],
                      stats_total(rec.stats for rec in recs), merge_facts(rec.runtime for rec in recs))


def rows_of(readers: Sequence[Callable[[], list[FileRow]]]) -> Callable[[], list[FileRow]]:
    """The rows of a block's units, read in order when first needed (``Inventory.later``)."""
    return lambda: [row for read in readers for row in read()]
